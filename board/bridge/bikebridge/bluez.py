"""A small BlueZ client on dbus-fast (the D-Bus library bleak itself is built on), for what the
bridge needs and nothing more: the adapter, devices and their GATT characteristics as BlueZ
exports them, Connect/Disconnect, discovery with a filter, ReadValue, notifications through
AcquireNotify (one socket per characteristic: a notification is one read, no D-Bus message),
and the Battery1 interface (BlueZ's battery plugin claims the Battery Service 0x180F, so its
characteristic is not exported; the level is there instead).

Why not bleak: bleak waits for the Device1 "Connected" signal, which BlueZ 5.66 does not send
when the ATT channel is up before the kernel's "device connected" event has been read
(src/device.c att_connect_cb sets the state without a signal, device_add_connection then says
"is already connected"); a property Get still answers true. In the BLE test VM this happens on
every connection; on a board it is a race. Here the state is read back after Connect returns.

Everything runs in one asyncio loop. `objects` mirrors BlueZ's object tree (unwrapped values),
kept current from InterfacesAdded/InterfacesRemoved/PropertiesChanged; listeners hear about
every change. When bluetoothd stops, `objects` empties and listeners hear `None`; when it comes
back, the tree is read again.
"""
import asyncio
import logging
import os
from typing import Callable, Dict, List, Optional

log = logging.getLogger("bikebridge.bluez")

BLUEZ = "org.bluez"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "org.bluez.Device1"
CHARACTERISTIC = "org.bluez.GattCharacteristic1"
SERVICE = "org.bluez.GattService1"
BATTERY = "org.bluez.Battery1"
PROPERTIES = "org.freedesktop.DBus.Properties"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
CALL_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 45.0  # the kernel gives up on an LE connection after about 20-40 s


def uuid16(u: int) -> str:
    return f"0000{u:04x}-0000-1000-8000-00805f9b34fb"


def short_uuid(u: str) -> Optional[int]:
    """0x2A37 for "00002a37-0000-1000-8000-00805f9b34fb"; None for a 128-bit UUID of its own."""
    u = u.lower()
    if len(u) == 36 and u.startswith("0000") and u.endswith("-0000-1000-8000-00805f9b34fb"):
        return int(u[4:8], 16)
    return None


def device_path(adapter_path: str, address: str) -> str:
    return f"{adapter_path}/dev_{address.upper().replace(':', '_')}"


class BlueZError(Exception):
    """A D-Bus error reply from BlueZ (name and message), or no reply in time."""

    def __init__(self, name: str, text: str = ""):
        super().__init__(f"{name}: {text}" if text else name)
        self.name = name


def _plain(value):
    """dbus-fast Variants (and containers of them) to plain Python values."""
    from dbus_fast import Variant
    if isinstance(value, Variant):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


Listener = Callable[[Optional[str], Optional[str], dict], None]


class BlueZ:
    def __init__(self) -> None:
        self.bus = None
        self.objects: Dict[str, Dict[str, dict]] = {}
        self.listeners: List[Listener] = []
        self.present = False  # bluetoothd owns org.bluez
        self.restarts = 0  # times bluetoothd came back after going away
        self.signals = 0
        self._discovery_users: Dict[str, int] = {}
        self._reload_task: Optional[asyncio.Task] = None

    # ---------------------------------------------------------------- bus and object tree

    async def start(self) -> None:
        from dbus_fast import BusType
        from dbus_fast.aio import MessageBus
        self.bus = await MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True).connect()
        self.bus.add_message_handler(self._on_message)
        for rule in (f"type='signal',sender='{BLUEZ}'",
                     f"type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='{BLUEZ}'"):
            await self._raw_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s", [rule])
        owner = await self._raw_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                     "NameHasOwner", "s", [BLUEZ])
        if owner and owner[0]:
            await self._reload()

    async def _reload(self) -> None:
        try:
            body = await self._raw_call(BLUEZ, "/", OBJECT_MANAGER, "GetManagedObjects")
        except BlueZError as e:
            log.warning("cannot read BlueZ's objects: %s", e)
            return
        self.objects = {path: {iface: _plain(props) for iface, props in ifaces.items()}
                        for path, ifaces in body[0].items()}
        self.present = True
        self._tell(None, None, {})

    async def refresh(self, prefix: str) -> None:
        """Reads BlueZ's objects under `prefix` again (GetManagedObjects), for when a signal was missed."""
        body = await self._raw_call(BLUEZ, "/", OBJECT_MANAGER, "GetManagedObjects")
        for path, ifaces in body[0].items():
            if path == prefix or path.startswith(prefix + "/"):
                self.objects[path] = {iface: _plain(props) for iface, props in ifaces.items()}

    def _tell(self, path, iface, changed) -> None:
        for listener in list(self.listeners):
            try:
                listener(path, iface, changed)
            except Exception:  # a listener's bug must not stop the others
                log.exception("BlueZ listener failed")

    def _on_message(self, msg):
        from dbus_fast import MessageType
        if msg.message_type != MessageType.SIGNAL:
            return None
        self.signals += 1
        member = msg.member
        if member == "NameOwnerChanged" and msg.body and msg.body[0] == BLUEZ:
            if msg.body[2]:
                log.warning("bluetoothd is back: reading its objects again")
                self.restarts += 1
                if self._reload_task is None or self._reload_task.done():
                    self._reload_task = asyncio.get_running_loop().create_task(self._reload())
            else:
                log.warning("bluetoothd went away")
                self.present = False
                self.objects = {}
                self._discovery_users.clear()
                self._tell(None, None, {"gone": True})
            return None
        if member == "InterfacesAdded":
            path, ifaces = msg.body
            entry = self.objects.setdefault(path, {})
            for iface, props in ifaces.items():
                entry[iface] = _plain(props)
                self._tell(path, iface, entry[iface])
        elif member == "InterfacesRemoved":
            path, ifaces = msg.body
            entry = self.objects.get(path)
            if entry is not None:
                for iface in ifaces:
                    entry.pop(iface, None)
                if not entry:
                    del self.objects[path]
            self._tell(path, None, {"removed": list(ifaces)})
        elif member == "PropertiesChanged" and msg.interface == PROPERTIES:
            iface, changed, invalidated = msg.body
            entry = self.objects.setdefault(msg.path, {}).setdefault(iface, {})
            plain = _plain(changed)
            entry.update(plain)
            for name in invalidated:
                entry.pop(name, None)
            self._tell(msg.path, iface, plain)
        return None

    # ---------------------------------------------------------------- calls

    async def _raw_call(self, destination, path, interface, member, signature="", body=(), timeout=CALL_TIMEOUT_S):
        return (await self._exchange(destination, path, interface, member, signature, body, timeout)).body

    async def _exchange(self, destination, path, interface, member, signature="", body=(), timeout=CALL_TIMEOUT_S):
        """The reply message (its body and file descriptors); raises BlueZError."""
        from dbus_fast import Message, MessageType
        if self.bus is None:
            raise BlueZError("org.bikebridge.NotStarted", "the D-Bus connection is not open")
        msg = Message(destination=destination, path=path, interface=interface, member=member,
                      signature=signature, body=list(body))
        try:
            reply = await asyncio.wait_for(self.bus.call(msg), timeout)
        except asyncio.TimeoutError:
            raise BlueZError("org.bikebridge.Timeout", f"{interface}.{member} on {path}: no reply in {timeout:.0f} s") from None
        if reply.message_type == MessageType.ERROR:
            raise BlueZError(reply.error_name or "org.bikebridge.Error", str(reply.body[0]) if reply.body else "")
        return reply

    async def call(self, path, interface, member, signature="", body=(), timeout=CALL_TIMEOUT_S):
        return await self._raw_call(BLUEZ, path, interface, member, signature, body, timeout)

    async def get(self, path: str, interface: str, name: str):
        """A property read from BlueZ itself (and put into the mirror)."""
        value = _plain((await self.call(path, PROPERTIES, "Get", "ss", [interface, name]))[0])
        self.objects.setdefault(path, {}).setdefault(interface, {})[name] = value
        return value

    async def set(self, path: str, interface: str, name: str, signature: str, value) -> None:
        from dbus_fast import Variant
        await self.call(path, PROPERTIES, "Set", "ssv", [interface, name, Variant(signature, value)])

    # ---------------------------------------------------------------- adapters and devices

    def adapters(self) -> List[str]:
        return sorted(p for p, ifaces in self.objects.items() if ADAPTER in ifaces)

    def adapter(self, name: Optional[str]) -> Optional[str]:
        """The adapter's path: the named one (hci0), else the first one."""
        found = self.adapters()
        if name:
            path = name if name.startswith("/") else f"/org/bluez/{name}"
            return path if path in found else None
        return found[0] if found else None

    def props(self, path: str, interface: str) -> Optional[dict]:
        return self.objects.get(path, {}).get(interface)

    def devices(self, adapter_path: str) -> Dict[str, dict]:
        prefix = adapter_path + "/"
        return {p: ifaces[DEVICE] for p, ifaces in self.objects.items()
                if p.startswith(prefix) and DEVICE in ifaces}

    def characteristics(self, dev_path: str) -> Dict[int, tuple]:
        """{profile code: (path, flags)} of the device's exported characteristics: a SIG UUID's
        16 bits, or the code a sensor kind gives its own 128-bit characteristic (kinds.py)."""
        from . import kinds
        prefix = dev_path + "/"
        out = {}
        for p, ifaces in self.objects.items():
            c = ifaces.get(CHARACTERISTIC)
            if c is not None and p.startswith(prefix):
                u = kinds.profile_code(c.get("UUID", ""))
                if u is not None and u not in out:
                    out[u] = (p, list(c.get("Flags", [])))
        return out

    async def power_on(self, adapter_path: str) -> None:
        props = self.props(adapter_path, ADAPTER) or {}
        if not props.get("Powered"):
            log.warning("%s is off: powering it on", adapter_path)
            await self.set(adapter_path, ADAPTER, "Powered", "b", True)

    # ---------------------------------------------------------------- discovery (shared)

    async def want_discovery(self, adapter_path: str, who: str, uuids: Optional[List[str]]) -> None:
        """Starts discovery for `who` (reference counted per adapter). The filter asks for LE
        devices advertising one of `uuids` (128-bit text; None: any LE device)."""
        users = self._discovery_users.setdefault(adapter_path, 0)
        self._discovery_users[adapter_path] = users + 1
        if users:
            return
        from dbus_fast import Variant
        flt = {"Transport": Variant("s", "le"), "DuplicateData": Variant("b", False)}
        if uuids:
            flt["UUIDs"] = Variant("as", list(uuids))
        try:
            await self.call(adapter_path, ADAPTER, "SetDiscoveryFilter", "a{sv}", [flt])
            await self.call(adapter_path, ADAPTER, "StartDiscovery")
        except BlueZError as e:
            if "InProgress" not in e.name:
                self._discovery_users[adapter_path] -= 1
                raise

    async def drop_discovery(self, adapter_path: str, who: str) -> None:
        users = self._discovery_users.get(adapter_path, 0)
        if users <= 0:
            return
        self._discovery_users[adapter_path] = users - 1
        if users == 1:
            try:
                await self.call(adapter_path, ADAPTER, "StopDiscovery")
            except BlueZError as e:
                log.info("StopDiscovery on %s: %s", adapter_path, e)

    # ---------------------------------------------------------------- GATT

    async def read_value(self, char_path: str) -> bytes:
        body = await self.call(char_path, CHARACTERISTIC, "ReadValue", "a{sv}", [{}])
        return bytes(body[0])

    async def acquire_notify(self, char_path: str) -> int:
        """A socket whose every read is one notification's value (AcquireNotify)."""
        reply = await self._exchange(BLUEZ, char_path, CHARACTERISTIC, "AcquireNotify", "a{sv}", [{}])
        if len(reply.unix_fds) != 1:
            for fd in reply.unix_fds:
                os.close(fd)
            raise BlueZError("org.bikebridge.NoFd", f"AcquireNotify on {char_path} returned {len(reply.unix_fds)} file descriptors, not 1")
        return reply.unix_fds[0]

    async def start_notify(self, char_path: str) -> None:
        await self.call(char_path, CHARACTERISTIC, "StartNotify")
