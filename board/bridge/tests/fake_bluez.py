"""A BlueZ stand-in for the bridge's tests: the bluez.BlueZ object mirror and listeners are the
real ones; the D-Bus calls are answered from an in-memory model of devices. It behaves like
BlueZ 5.66 where it matters: Connect does not signal "Connected" (bluez.py), notifications
arrive on AcquireNotify sockets (SOCK_SEQPACKET pairs here), the battery level is on Battery1,
a disconnection closes the notification sockets and signals "Connected: false"."""
import asyncio
import socket

from bikebridge import bluez, kinds
from bikebridge.bluez import ADAPTER, BATTERY, CHARACTERISTIC, DEVICE, SERVICE, BlueZError

ADAPTER_PATH = "/org/bluez/hci0"


class FakeDevice:
    def __init__(self, address, name, services, chars, battery=None, rssi=-60):
        self.address = address.upper()
        self.name = name
        self.services = services  # 16-bit service UUIDs advertised
        self.chars = dict(chars)  # 16-bit UUID -> (flags, value)
        self.battery = battery
        self.rssi = rssi
        self.advertising = True
        self.connected = False
        self.sockets = {}  # uuid -> our end of the notification socket
        self.connects = 0

    @property
    def path(self):
        return bluez.device_path(ADAPTER_PATH, self.address)


class FakeBlueZ(bluez.BlueZ):
    def __init__(self, devices=()):
        super().__init__()
        self.devices_model = {d.address: d for d in devices}
        self.calls = []
        self.trusted = set()
        self.discovering = 0

    # ---- the model

    async def start(self):
        self.present = True
        self.objects = {ADAPTER_PATH: {ADAPTER: {"Address": "00:AA:01:00:00:00", "Powered": True}}}
        self._tell(None, None, {})

    def device_props(self, d):
        return {"Address": d.address, "AddressType": "public", "Name": d.name, "Connected": d.connected,
                "UUIDs": [kinds.service_uuid(u) for u in d.services], "RSSI": d.rssi, "ServicesResolved": d.connected}

    def appear(self, d):
        """The device is seen advertising (during discovery): BlueZ adds its object."""
        if d.path not in self.objects:
            self.objects[d.path] = {DEVICE: self.device_props(d)}
            self._tell(d.path, DEVICE, self.objects[d.path][DEVICE])

    def export_gatt(self, d):
        for i, (u, (flags, _)) in enumerate(sorted(d.chars.items())):
            spath = f"{d.path}/service{i:04x}"
            self.objects[spath] = {SERVICE: {"UUID": bluez.uuid16(0x1800 + i)}}
            self.objects[f"{spath}/char{i:04x}"] = {CHARACTERISTIC: {"UUID": kinds.characteristic_uuid(u), "Flags": list(flags)}}
        if d.battery is not None:
            self.objects[d.path][BATTERY] = {"Percentage": d.battery}

    def drop_connection(self, d, signal=True):
        """The link drops: notification sockets close, then "Connected: false"."""
        for s in d.sockets.values():
            s.close()
        d.sockets = {}
        if not d.connected:
            return
        d.connected = False
        for p in [p for p in self.objects if p.startswith(d.path + "/")]:
            del self.objects[p]
        self.objects.get(d.path, {}).pop(BATTERY, None)
        self.objects[d.path][DEVICE].update(Connected=False, ServicesResolved=False)
        if signal:
            self._tell(d.path, DEVICE, {"Connected": False, "ServicesResolved": False})

    def notify(self, address, uuid, value: bytes):
        self.devices_model[address.upper()].sockets[uuid].send(value)

    def set_battery(self, address, percent):
        d = self.devices_model[address.upper()]
        d.battery = percent
        self.objects[d.path][BATTERY]["Percentage"] = percent
        self._tell(d.path, BATTERY, {"Percentage": percent})

    def bluetoothd_stops(self):
        for d in self.devices_model.values():
            for s in d.sockets.values():
                s.close()
            d.sockets = {}
            d.connected = False
        self.present = False
        self.objects = {}
        self._tell(None, None, {"gone": True})

    async def bluetoothd_starts(self):
        self.restarts += 1
        await self.start()
        for d in self.devices_model.values():
            if d.address in self.trusted:  # trusted devices are kept in BlueZ's storage
                self.objects[d.path] = {DEVICE: self.device_props(d)}

    def device_at(self, path):
        for d in self.devices_model.values():
            if d.path == path:
                return d
        raise BlueZError("org.freedesktop.DBus.Error.UnknownObject", path)

    def char_at(self, path):
        dev_path = path.split("/service")[0]
        d = self.device_at(dev_path)
        uuid = kinds.profile_code(self.objects[path][CHARACTERISTIC]["UUID"])
        return d, uuid

    # ---- the D-Bus calls the bridge makes

    async def call(self, path, interface, member, signature="", body=(), timeout=30.0):
        self.calls.append((path, member))
        await asyncio.sleep(0)
        if not self.present:
            raise BlueZError("org.freedesktop.DBus.Error.ServiceUnknown", "bluetoothd is not running")
        if member == "Connect":
            d = self.device_at(path)
            d.connects += 1
            if not d.advertising:
                await asyncio.sleep(0.05)
                raise BlueZError("org.bluez.Error.Failed", "le-connection-abort-by-local")
            d.connected = True  # no "Connected" signal: BlueZ 5.66's race
            self.objects[path][DEVICE]["ServicesResolved"] = True
            self.export_gatt(d)
            return []
        if member == "Disconnect":
            self.drop_connection(self.device_at(path))
            return []
        if member == "RemoveDevice":
            self.objects.pop(body[0], None)
            return []
        if member == "ReadValue":
            d, uuid = self.char_at(path)
            return [d.chars[uuid][1]]
        raise BlueZError("org.bluez.Error.NotSupported", f"{interface}.{member}")

    async def get(self, path, interface, name):
        await asyncio.sleep(0)
        if interface == DEVICE:
            d = self.device_at(path)
            return {"Connected": d.connected, "ServicesResolved": d.connected}[name]
        raise BlueZError("org.freedesktop.DBus.Error.InvalidArgs", name)

    async def set(self, path, interface, name, signature, value):
        if name == "Trusted":
            d = self.device_at(path)
            self.trusted.add(d.address)
            self.objects[path][DEVICE]["Trusted"] = True

    async def power_on(self, adapter_path):
        pass

    async def want_discovery(self, adapter_path, who, uuids):
        self.discovering += 1
        for d in self.devices_model.values():
            if d.advertising and (uuids is None or set(uuids) & {kinds.service_uuid(s) for s in d.services}):
                self.appear(d)
                self.objects[d.path][DEVICE]["RSSI"] = d.rssi
                self._tell(d.path, DEVICE, {"RSSI": d.rssi})

    async def drop_discovery(self, adapter_path, who):
        self.discovering -= 1

    async def read_value(self, char_path):
        d, uuid = self.char_at(char_path)
        return bytes(d.chars[uuid][1])

    async def acquire_notify(self, char_path):
        d, uuid = self.char_at(char_path)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        d.sockets[uuid] = ours
        return theirs.detach()
