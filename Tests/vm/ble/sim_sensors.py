"""Simulated BLE cycling sensors: GATT servers through BlueZ's D-Bus API, one virtual controller
each (btvirt), advertising their service UUIDs and a name, their values from a recorded ride.

Runs inside the BLE test VM (Tests/vm/test_vm_ble.py, Tests/vm/ble/guest_ble.py) with the
bridge's venv python (dbus-fast, the D-Bus library bleak itself uses):

    python sim_sensors.py --ride RIDE.json --control SOCK --log SENT.jsonl \
        hr=/org/bluez/hci1 power=/org/bluez/hci2 csc=/org/bluez/hci3 broken=/org/bluez/hci4 \
        radar=/org/bluez/hci5

Sensors (each also offers Battery 0x180F / 0x2A19, read + notify):
- hr:     Heart Rate 0x180D: 0x2A37 (u8 HR, contact detected, RR intervals) at 1 Hz, 0x2A38.
- power:  Cycling Power 0x1818: 0x2A63 (power, wheel and crank data) at 4 Hz, 0x2A65, 0x2A5D.
- csc:    Cycling Speed and Cadence 0x1816: 0x2A5B (wheel and crank data) at 4 Hz, 0x2A5C.
- broken: advertises Cycling Power 0x1818 but its service has no 0x2A63 (only 0x2A65): a device
          the bridge must count and log, not crash on.
- radar:  a Garmin Varia: its radar service 6a4e3200-667b-11e3-949a-0800200c9a66, notifications on
          6a4e3203-… at 4 Hz (docs/sensors.md, "Rear radar": a header byte, sequence in the high
          nibble and 0x2 in the low one for a whole frame, then per vehicle its track id, range in
          m and closing speed in km/h); a clear road (the header alone) until `vehicle` commands
          send vehicles up from behind, each closing at its speed until it passes the rider.

Every notification sent is one JSON line in the log: {"t_us": CLOCK_MONOTONIC µs, "s": sensor,
"u": "2a37", "hex": value, "v": {the values it encodes}}; "bad": true for malformed ones.

The control socket (Unix stream) takes one command per line and answers one JSON line:
  status                      addresses, advertising, subscriptions, notifications sent
  hide NAME / show NAME       power the sensor's controller off (advertising and connection
                              stop) / on again and advertise
  battery NAME PERCENT        set the battery level (notified to a subscriber)
  bad NAME truncated|short    send one malformed measurement notification
  vehicle NAME KMH [RANGE_M]  (radar) a vehicle comes up from RANGE_M behind (60) at KMH; its
                              track id, speed and when it passes are in the answer
  hold / resume               stop sending measurements / go on (the test reads counters at rest)
  quit
The sensors re-register with bluetoothd whenever it restarts (org.bluez's owner changes).
"""
import argparse
import asyncio
import json
import os
import struct
import sys
import time

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.service import PropertyAccess, ServiceInterface, dbus_property, method

BLUEZ = "org.bluez"
WHEEL_M = 2.105


def uuid16(u: int) -> str:
    return f"0000{u:04x}-0000-1000-8000-00805f9b34fb"


def varia_uuid(u: int) -> str:
    """A UUID of Garmin's Varia radar family (service 0x3200, targets characteristic 0x3203)."""
    return f"6a4e{u:04x}-667b-11e3-949a-0800200c9a66"


def uuid_text(u) -> str:
    """A 16-bit SIG UUID as its 128-bit text; a 128-bit one (text) as it is."""
    return u if isinstance(u, str) else uuid16(u)


def uuid_key(u) -> str:
    """How the log and the status name a characteristic: 4 hex digits (2a37; 3203 for Garmin's)."""
    return u[4:8] if isinstance(u, str) else f"{u:04x}"


def mono_us() -> int:
    return time.monotonic_ns() // 1000


# ------------------------------------------------------------------------------ GATT objects
# The annotations are D-Bus signatures, which dbus-fast reads at class creation.

class Service(ServiceInterface):
    def __init__(self, path: str, uuid: int):
        super().__init__("org.bluez.GattService1")
        self.path, self.uuid = path, uuid

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> "s":
        return uuid_text(self.uuid)

    @dbus_property(access=PropertyAccess.READ)
    def Primary(self) -> "b":
        return True


class Characteristic(ServiceInterface):
    def __init__(self, path: str, uuid: int, service: Service, flags: list, value: bytes = b""):
        super().__init__("org.bluez.GattCharacteristic1")
        self.path, self.uuid, self.service, self.flags = path, uuid, service, flags
        self.value = bytes(value)
        self.notifying = False

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> "s":
        return uuid_text(self.uuid)

    @dbus_property(access=PropertyAccess.READ)
    def Service(self) -> "o":
        return self.service.path

    @dbus_property(access=PropertyAccess.READ)
    def Flags(self) -> "as":
        return self.flags

    @dbus_property(access=PropertyAccess.READ)
    def Value(self) -> "ay":
        return self.value

    @method()
    def ReadValue(self, options: "a{sv}") -> "ay":
        return self.value

    @method()
    def StartNotify(self):
        self.notifying = True

    @method()
    def StopNotify(self):
        self.notifying = False

    def notify(self, value: bytes) -> bool:
        """Sets the value; notifies it when a client subscribed. True if notified."""
        self.value = bytes(value)
        if self.notifying:
            self.emit_properties_changed({"Value": self.value})
            return True
        return False


class Advertisement(ServiceInterface):
    def __init__(self, path: str, name: str, uuids: list):
        super().__init__("org.bluez.LEAdvertisement1")
        self.path, self.name, self.uuids = path, name, uuids

    @dbus_property(access=PropertyAccess.READ)
    def Type(self) -> "s":
        return "peripheral"

    @dbus_property(access=PropertyAccess.READ)
    def ServiceUUIDs(self) -> "as":
        return [uuid_text(u) for u in self.uuids]

    @dbus_property(access=PropertyAccess.READ)
    def LocalName(self) -> "s":
        return self.name

    @method()
    def Release(self):
        pass

    def managed_objects(self) -> dict:
        """bluetoothd reads an advertisement with GetManagedObjects on the advertisement's own
        path and expects the object itself in the answer (dbus-fast's answer lists only the
        objects below a path, so the simulator answers this call itself)."""
        return {self.path: {"org.bluez.LEAdvertisement1": {
            "Type": Variant("s", "peripheral"), "ServiceUUIDs": Variant("as", [uuid_text(u) for u in self.uuids]),
            "LocalName": Variant("s", self.name)}}}


# ------------------------------------------------------------------------------ payloads

class Revolutions:
    """A cumulative revolution counter and the event time of its last whole revolution, as a
    sensor reports them (the time moves only when a revolution completes)."""

    def __init__(self, ticks_per_s: int):
        self.revs = 0.0
        self.ticks = ticks_per_s
        self.last_event_s = 0.0

    def advance(self, rate_per_s: float, now_s: float, dt_s: float) -> None:
        before = int(self.revs)
        self.revs += rate_per_s * dt_s
        if int(self.revs) != before and rate_per_s > 0:
            self.last_event_s = now_s - (self.revs - int(self.revs)) / rate_per_s

    def event_ticks(self) -> int:
        return int(self.last_event_s * self.ticks) & 0xFFFF


class Ride:
    """Per-second values (hr, power, cadence, speed) from a recorded ride; wraps at its end."""

    def __init__(self, path: str):
        with open(path) as f:
            data = json.load(f)
        self.seconds = data["seconds"]
        self.source = data.get("source", path)

    def at(self, elapsed_s: float) -> dict:
        return self.seconds[int(elapsed_s) % len(self.seconds)]


# ------------------------------------------------------------------------------ sensors

class Sensor:
    NAMES = {"hr": "BikeSim HRM", "power": "BikeSim PWR", "csc": "BikeSim CSC", "broken": "BikeSim Broken",
             "radar": "RTL515"}  # a Varia's own name: with the 128-bit UUID the advertisement holds 29 of 31 bytes
    SERVICES = {"hr": 0x180D, "power": 0x1818, "csc": 0x1816, "broken": 0x1818, "radar": varia_uuid(0x3200)}
    PERIOD_S = {"hr": 1.0, "power": 0.25, "csc": 0.25, "broken": 1.0, "radar": 0.25}
    BATTERY = {"hr": 81, "power": 64, "csc": 47, "broken": 90, "radar": 73}
    RADAR_CHAR = varia_uuid(0x3203)

    def __init__(self, sim: "Simulator", name: str, adapter: str):
        self.sim, self.name, self.adapter = sim, name, adapter
        self.root = f"/bikesim/{name}"
        self.adv = Advertisement(f"/bikesim_adv/{name}", self.NAMES[name], [self.SERVICES[name]])
        self.address = ""
        self.hidden = False
        self.registered = False
        self.sent: dict = {}
        self.battery_percent = self.BATTERY[name]
        self.objects = []
        self.chars: dict = {}
        self._build()
        self.wheel = Revolutions(2048 if name == "power" else 1024)
        self.crank = Revolutions(1024)
        self.next_beat_s = 0.0
        self.beat_s = 0.0
        # radar: the vehicles coming up ({track, kmh, range_m, at_s}), the frame sequence.
        self.vehicles: list = []
        self.tracks = 0
        self.sequence = 0

    def _build(self) -> None:
        svc = Service(f"{self.root}/service0", self.SERVICES[self.name])
        self.objects.append(svc)

        def char(uuid: int, flags: list, value: bytes = b"", svc=svc):
            c = Characteristic(f"{svc.path}/char{len(self.chars):02d}", uuid, svc, flags, value)
            self.chars[uuid] = c
            self.objects.append(c)

        if self.name == "hr":
            char(0x2A37, ["notify"])
            char(0x2A38, ["read"], b"\x01")  # body sensor location: chest
        elif self.name == "power":
            char(0x2A63, ["notify"])
            char(0x2A65, ["read"], struct.pack("<I", 0x0C))  # wheel and crank revolution data supported
            char(0x2A5D, ["read"], b"\x0d")  # sensor location: rear hub
        elif self.name == "csc":
            char(0x2A5B, ["notify"])
            char(0x2A5C, ["read"], struct.pack("<H", 0x03))  # wheel and crank data
        elif self.name == "broken":
            char(0x2A65, ["read"], struct.pack("<I", 0x08))  # the feature, but no measurement
        elif self.name == "radar":
            char(self.RADAR_CHAR, ["notify"])
        bat = Service(f"{self.root}/service1", 0x180F)
        self.objects.append(bat)
        char(0x2A19, ["read", "notify"], bytes([self.battery_percent]), svc=bat)

    def export(self, bus: MessageBus) -> None:
        for o in self.objects:
            bus.export(o.path, o)
        bus.export(self.adv.path, self.adv)

    async def call(self, interface: str, member: str, signature: str = "", body=(), path=None):
        reply = await self.sim.bus.call(Message(destination=BLUEZ, path=path or self.adapter, interface=interface,
                                                member=member, signature=signature, body=list(body)))
        if reply.message_type == MessageType.ERROR:
            raise RuntimeError(f"{self.name}: {interface}.{member}: {reply.error_name} {reply.body}")
        return reply.body

    async def set_powered(self, on: bool) -> None:
        await self.call("org.freedesktop.DBus.Properties", "Set", "ssv", ["org.bluez.Adapter1", "Powered", Variant("b", on)])

    async def register(self) -> None:
        """Powers the controller on and registers the GATT application and the advertisement."""
        await self.set_powered(True)
        # The GAP device name (read by a central after connecting) is the adapter's alias.
        await self.call("org.freedesktop.DBus.Properties", "Set", "ssv", ["org.bluez.Adapter1", "Alias", Variant("s", self.NAMES[self.name])])
        self.address = (await self.call("org.freedesktop.DBus.Properties", "Get", "ss", ["org.bluez.Adapter1", "Address"]))[0].value
        await self.call("org.bluez.GattManager1", "RegisterApplication", "oa{sv}", [self.root, {}])
        await self.call("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement", "oa{sv}", [self.adv.path, {}])
        self.registered = True

    async def hide(self) -> None:
        """The sensor disappears: its advertising and its connection stop (controller off)."""
        self.hidden = True
        for c in self.chars.values():
            c.notifying = False
        try:
            await self.call("org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement", "o", [self.adv.path])
        except RuntimeError:
            pass
        await self.set_powered(False)

    async def show(self) -> None:
        self.hidden = False
        await self.set_powered(True)
        await self.call("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement", "oa{sv}", [self.adv.path, {}])

    def send(self, uuid, value: bytes, values: dict, bad: bool = False) -> None:
        c = self.chars.get(uuid)
        if c is None or self.hidden:
            return
        if c.notify(value):
            key = uuid_key(uuid)
            self.sent[key] = self.sent.get(key, 0) + 1
            entry = {"t_us": mono_us(), "s": self.name, "u": key, "hex": value.hex(), "v": values}
            if bad:
                entry["bad"] = True
            self.sim.log(entry)

    def wheel_rate(self, now_s: float) -> float:
        return float(self.sim.ride.at(now_s)["speed"]) / WHEEL_M

    def crank_rate(self, now_s: float) -> float:
        return float(self.sim.ride.at(now_s)["cadence"]) / 60.0

    def measure(self, now_s: float) -> None:
        """One measurement notification at `now_s` (seconds since the sensors started)."""
        v = self.sim.ride.at(now_s)
        if self.name == "hr":
            hr = int(v["hr"])
            rr = []
            while self.next_beat_s <= now_s:  # beats since the last notification
                interval = 60.0 / hr
                if self.beat_s:
                    rr.append(int(round(interval * 1024)))
                self.beat_s = self.next_beat_s
                self.next_beat_s += interval
            rr = rr[-9:]  # a notification holds at most 9 RR intervals after a u8 heart rate
            flags = 0x16  # u8 HR, sensor contact detected, RR present
            value = bytes([flags, hr]) + b"".join(struct.pack("<H", r) for r in rr)
            self.send(0x2A37, value, {"hr": hr, "rr": rr})
        elif self.name == "power":
            power = int(v["power"])
            speed, cadence = float(v["speed"]), float(v["cadence"])
            value = struct.pack("<HhIHHH", 0x30, power, int(self.wheel.revs) & 0xFFFFFFFF, self.wheel.event_ticks(),
                                int(self.crank.revs) & 0xFFFF, self.crank.event_ticks())
            self.send(0x2A63, value, {"power": power, "speed": speed, "cadence": cadence})
        elif self.name == "csc":
            speed, cadence = float(v["speed"]), float(v["cadence"])
            value = struct.pack("<BIHHH", 0x03, int(self.wheel.revs) & 0xFFFFFFFF, self.wheel.event_ticks(),
                                int(self.crank.revs) & 0xFFFF, self.crank.event_ticks())
            self.send(0x2A5B, value, {"speed": speed, "cadence": cadence})
        elif self.name == "radar":
            self.radar_frame()

    def add_vehicle(self, kmh: float, range_m: float) -> dict:
        """A vehicle comes up from `range_m` behind, closing at `kmh` until it passes (range 0)."""
        self.tracks = self.tracks % 255 + 1
        at_s = time.monotonic() - self.sim.started
        v = {"track": self.tracks, "kmh": kmh, "range_m": range_m, "at_s": at_s, "passes_s": at_s + range_m / (kmh / 3.6)}
        self.vehicles.append(v)
        return dict(v, t_us=mono_us())

    def radar_frame(self) -> None:
        """One whole frame: the vehicles still behind, nearest first (at most 6: one notification)."""
        now_s = time.monotonic() - self.sim.started
        self.vehicles = [v for v in self.vehicles if now_s < v["passes_s"]]
        behind = sorted(((v["track"], v["range_m"] - v["kmh"] / 3.6 * (now_s - v["at_s"]), v["kmh"]) for v in self.vehicles),
                        key=lambda x: x[1])[:6]
        self.sequence = (self.sequence + 1) & 0x0F
        value = bytes([self.sequence << 4 | 0x2]) + b"".join(bytes([t, max(1, min(255, round(r))), round(k)]) for t, r, k in behind)
        self.send(self.RADAR_CHAR, value, {"vehicles": [[t, round(r, 1), k] for t, r, k in behind]})

    def bad(self, kind: str) -> None:
        """One malformed measurement: `truncated` (the flags announce more than is there) or
        `short` (shorter than any valid value)."""
        uuid = {"hr": 0x2A37, "power": 0x2A63, "csc": 0x2A5B}[self.name]
        if kind == "truncated":
            value = {"hr": bytes([0x17, 0x90]), "power": struct.pack("<Hh", 0x30, 200) + b"\x01\x02",
                     "csc": bytes([0x03, 0x10, 0x00])}[self.name]  # HR: u16 announced, one byte given
        else:
            value = {"hr": b"\x16", "power": b"\x30", "csc": b""}[self.name]
        self.send(uuid, value, {"kind": kind}, bad=True)

    def set_battery(self, percent: int) -> None:
        self.battery_percent = percent
        self.send(0x2A19, bytes([percent]), {"battery": percent})

    async def run(self) -> None:
        """Measurements at the sensor's period, on absolute times (no drift)."""
        period = self.PERIOD_S[self.name]
        start = time.monotonic()
        last = start - self.sim.started
        k = 0
        while True:
            k += 1
            await asyncio.sleep(max(0.0, start + k * period - time.monotonic()))
            if self.name == "broken":
                continue
            now_s = time.monotonic() - self.sim.started
            # The wheel and crank turn on whether or not a notification goes out (the
            # revolutions follow the real time elapsed, however late this loop wakes).
            self.wheel.advance(self.wheel_rate(now_s), now_s, now_s - last)
            self.crank.advance(self.crank_rate(now_s), now_s, now_s - last)
            last = now_s
            if not self.sim.held:
                self.measure(now_s)

    def status(self) -> dict:
        return {"address": self.address, "hidden": self.hidden, "registered": self.registered,
                "subscribed": {uuid_key(u): c.notifying for u, c in self.chars.items() if "notify" in c.flags},
                "sent": dict(self.sent), "battery": self.battery_percent}


class Simulator:
    def __init__(self, ride: Ride, log_path: str, adapters: dict):
        self.ride = ride
        self.log_file = open(log_path, "a", buffering=1)
        self.sensors = {name: Sensor(self, name, path) for name, path in adapters.items()}
        self.bus: MessageBus | None = None
        self.started = time.monotonic()
        self.registrations = 0
        self.held = False

    def log(self, entry: dict) -> None:
        self.log_file.write(json.dumps(entry, separators=(",", ":")) + "\n")

    async def register_all(self) -> None:
        """(Re)registers every sensor with bluetoothd, retrying until its adapters exist."""
        for attempt in range(200):
            try:
                for s in self.sensors.values():
                    s.registered = False
                    await s.register()
                    if s.hidden:
                        await s.hide()
                self.registrations += 1
                print(f"sim: registered {', '.join(f'{n}={s.address}' for n, s in self.sensors.items())}", flush=True)
                return
            except RuntimeError as e:
                if attempt % 20 == 0:
                    print(f"sim: waiting for bluetoothd: {e}", flush=True)
                await asyncio.sleep(0.1)
        raise SystemExit("sim: bluetoothd never accepted the sensors")

    def on_message(self, msg: Message):
        if (msg.message_type == MessageType.METHOD_CALL and msg.member == "GetManagedObjects"
                and msg.interface == "org.freedesktop.DBus.ObjectManager"):
            for s in self.sensors.values():
                if msg.path == s.adv.path:
                    return Message.new_method_return(msg, "a{oa{sa{sv}}}", [s.adv.managed_objects()])
            return None
        if (msg.message_type == MessageType.SIGNAL and msg.member == "NameOwnerChanged"
                and msg.body and msg.body[0] == BLUEZ):
            if not msg.body[2]:
                print("sim: bluetoothd went away", flush=True)
                for s in self.sensors.values():  # nobody is subscribed any more
                    s.registered = False
                    for c in s.chars.values():
                        c.notifying = False
            else:
                print("sim: bluetoothd (re)started: registering again", flush=True)
                asyncio.get_running_loop().create_task(self.register_all())
        return None

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            words = line.decode().split()
            try:
                reply = await self.command(words)
            except Exception as e:  # a test's mistake: answer it, keep serving
                reply = {"error": f"{type(e).__name__}: {e}"}
            writer.write((json.dumps(reply) + "\n").encode())
            await writer.drain()
        writer.close()

    async def command(self, words: list) -> dict:
        if not words:
            return {"error": "empty command"}
        cmd, args = words[0], words[1:]
        if cmd == "status":
            return {"sensors": {n: s.status() for n, s in self.sensors.items()}, "registrations": self.registrations}
        if cmd in ("hide", "show"):
            s = self.sensors[args[0]]
            await (s.hide() if cmd == "hide" else s.show())
            return {"ok": True, "t_us": mono_us()}
        if cmd == "battery":
            self.sensors[args[0]].set_battery(int(args[1]))
            return {"ok": True}
        if cmd == "bad":
            self.sensors[args[0]].bad(args[1])
            return {"ok": True}
        if cmd == "vehicle":
            s = self.sensors[args[0]]
            if s.name != "radar":
                return {"error": f"{s.name} is not a radar"}
            return {"ok": True, **s.add_vehicle(float(args[1]), float(args[2]) if len(args) > 2 else 60.0)}
        if cmd in ("hold", "resume"):
            self.held = cmd == "hold"
            return {"ok": True}
        if cmd == "quit":
            asyncio.get_running_loop().call_later(0.05, sys.exit, 0)
            return {"ok": True}
        return {"error": f"unknown command {cmd}"}

    async def main(self, control_path: str) -> None:
        self.bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
        for s in self.sensors.values():
            s.export(self.bus)
        await self.bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                    interface="org.freedesktop.DBus", member="AddMatch", signature="s",
                                    body=[f"type='signal',member='NameOwnerChanged',arg0='{BLUEZ}'"]))
        self.bus.add_message_handler(self.on_message)
        await self.register_all()
        if os.path.exists(control_path):
            os.unlink(control_path)
        server = await asyncio.start_unix_server(self.control, control_path)
        self.started = time.monotonic()
        tasks = [asyncio.create_task(s.run()) for s in self.sensors.values()]
        print(f"sim: sensors running from {self.ride.source}", flush=True)
        async with server:
            await asyncio.gather(*tasks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ride", required=True, help="JSON with per-second values: {\"seconds\": [{hr, power, cadence, speed}]}")
    ap.add_argument("--control", required=True, help="Unix socket for commands")
    ap.add_argument("--log", required=True, help="JSON lines, one per notification sent")
    ap.add_argument("adapters", nargs="+", help="NAME=ADAPTER_PATH, NAME one of hr, power, csc, broken, radar")
    a = ap.parse_args()
    adapters = dict(x.split("=", 1) for x in a.adapters)
    unknown = set(adapters) - set(Sensor.NAMES)
    if unknown:
        ap.error(f"unknown sensors {sorted(unknown)}: use {sorted(Sensor.NAMES)}")
    asyncio.run(Simulator(Ride(a.ride), a.log, adapters).main(a.control))


if __name__ == "__main__":
    main()
