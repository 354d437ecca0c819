"""BLE through BlueZ (bluez.py, on dbus-fast): every paired sensor is connected and kept
connected, each measurement characteristic it has forwards its notifications raw, and searches
report the sensors around.

Per sensor (`BleSensor`), forever: find the device (discovery, only if BlueZ does not know it),
Connect, read the state back (see bluez.py on BlueZ 5.66's missing "Connected" signal), wait
for its services, mark it trusted (BlueZ then keeps it across disconnections and restarts, so a
reconnection needs no discovery), read Cycling Power Feature 0x2A65, forward the battery level
(BlueZ's Battery1, or 0x2A19 when BlueZ exports it), and acquire a notification socket per
measurement characteristic (0x2A37, 0x2A63, 0x2A5B). Each socket read is one notification, read
straight into its frame's buffer and sent (no D-Bus message, no copy). The session ends when
the device disconnects, its sockets close or bluetoothd goes away; the sensor is reported
disconnected and connected again, Connect waiting for it to advertise.

A device that offers none of the measurements is reported unusable (LINK_UNUSABLE to a
version-2 app, disconnected to an older one), counted and logged, and tried again after
UNUSABLE_RETRY_S."""
import asyncio
import logging
import select
import socket
import time
from typing import Dict, Optional

from . import kinds, protocol
from .bluez import BATTERY, DEVICE, BlueZ, BlueZError, device_path

log = logging.getLogger("bikebridge.ble")

# The characteristics forwarded (profile codes, kinds.py): measurements notified, values read once.
MEASUREMENTS = tuple(dict.fromkeys(kinds.MEASUREMENTS.values()))
READS = tuple(dict.fromkeys(kinds.READS.values()))
BATTERY_LEVEL = 0x2A19
RETRY_S = 1.0
RETRY_MAX_S = 8.0
UNUSABLE_RETRY_S = 60.0
DISCOVER_S = 30.0
SEARCH_ADAPTER_WAIT_S = 5.0  # a search waits this long for BlueZ's adapter, then ends
BUS_RETRY_S = 10.0  # no system bus yet: tried again this often
SERVICES_S = 30.0
FOUND_REPORT_S = 2.0  # a device already reported in this search is reported again at most this often
FOUND_RSSI_STEP_DB = 5
SEARCH_SERVICES = tuple(kinds.SEARCH_SERVICES)  # 128-bit UUID text


class SessionEnded(Exception):
    pass


class Unusable(Exception):
    pass


class NotifyReader:
    """One characteristic's notification socket (AcquireNotify) feeding its DataFramer, unless
    the app reads it itself (handed: see Bridge.hand)."""

    def __init__(self, loop, fd: int, bridge, framer: protocol.DataFramer, on_end) -> None:
        self.loop, self.fd, self.bridge, self.framer, self.on_end = loop, fd, bridge, framer, on_end
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(False)
        self.closed = False
        self.handed = False
        loop.add_reader(fd, self.readable)
        bridge.add_reader(self)

    def pause(self) -> None:
        """The app reads the socket now."""
        if not self.handed and not self.closed:
            self.handed = True
            self.loop.remove_reader(self.fd)

    def resume(self) -> None:
        if self.handed and not self.closed:
            self.handed = False
            self.loop.add_reader(self.fd, self.readable)

    def readable(self) -> None:
        try:
            n = self.sock.recv_into(self.framer.body, protocol.PAYLOAD_BYTES_MAX, socket.MSG_TRUNC)
        except BlockingIOError:
            return
        except OSError as e:
            self.end(f"notification socket: {e}")
            return
        if n == 0 and self.hung_up():
            self.end("notification socket closed by bluetoothd")
            return
        self.bridge.forward(self.framer, n)

    def hung_up(self) -> bool:
        p = select.poll()
        p.register(self.fd, select.POLLHUP)
        return bool(p.poll(0))

    def end(self, why: str) -> None:
        self.close()
        self.on_end(why)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.bridge.remove_reader(self)
            if not self.handed:
                self.loop.remove_reader(self.fd)
            self.sock.close()


class BleSensor:
    def __init__(self, radio: "BleRadio", address: str) -> None:
        self.radio = radio
        self.bridge = radio.bridge
        self.bluez = radio.bluez
        self.address = address.upper()
        self.id = protocol.BleId(self.address)
        self.path: Optional[str] = None
        self.live = False
        self.readers = []
        self.ended: Optional[asyncio.Event] = None
        self.end_reason = ""
        self.state: Optional[int] = None
        self.sessions = 0
        self.framers: Dict[int, protocol.DataFramer] = {}
        self.task: Optional[asyncio.Task] = None
        self._logged: Dict[str, float] = {}

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run(), name=f"ble {self.address}")

    async def stop(self) -> None:
        """Forgotten: disconnect, and remove the device from BlueZ (it was marked trusted)."""
        if self.task:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass
        self.close_readers()
        if self.path and self.bluez.present:
            adapter = self.path.rsplit("/", 1)[0]
            try:
                await self.bluez.call(adapter, "org.bluez.Adapter1", "RemoveDevice", "o", [self.path])
            except BlueZError as e:
                log.info("%s: RemoveDevice: %s", self.address, e)
        self.set_link(protocol.LINK_DISCONNECTED)

    def set_link(self, state: int) -> None:
        if state != self.state:
            self.state = state
            self.bridge.link(self.id, 0, state)

    def note(self, what: str, level=logging.WARNING) -> None:
        """Logs `what`, the same text at most once a minute (a sensor out of range retries often)."""
        now = time.monotonic()
        if now - self._logged.get(what, -1e9) >= 60.0:
            self._logged[what] = now
            log.log(level, "%s: %s", self.address, what)

    async def run(self) -> None:
        backoff = RETRY_S
        while True:
            if self.state != protocol.LINK_CONNECTED:
                self.set_link(protocol.LINK_SEARCHING)
            try:
                await self.session()
                backoff = RETRY_S
            except Unusable as e:
                self.note(str(e))
                await asyncio.sleep(UNUSABLE_RETRY_S)
                continue
            except (BlueZError, SessionEnded, OSError) as e:
                self.note(f"session ended: {e}", logging.INFO if isinstance(e, SessionEnded) else logging.WARNING)
            finally:
                self.close_readers()
            if self.state == protocol.LINK_CONNECTED:
                self.set_link(protocol.LINK_DISCONNECTED)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)

    def close_readers(self) -> None:
        for r in self.readers:
            r.close()
        self.readers = []

    def end_session(self, why: str) -> None:
        if self.live and self.ended is not None and not self.ended.is_set():
            self.end_reason = why
            self.ended.set()

    def on_bluez(self, path, iface, changed) -> None:
        """Every BlueZ change: ends the session when the device goes; forwards battery levels."""
        if path is None:
            if changed.get("gone"):
                self.end_session("bluetoothd went away")
            return
        if path != self.path:
            return
        if iface == DEVICE and changed.get("Connected") is False:
            self.end_session("disconnected")
        elif iface is None and DEVICE in changed.get("removed", ()):
            self.end_session("BlueZ removed the device")
        elif iface == BATTERY and "Percentage" in changed:
            self.battery(changed["Percentage"])

    def battery(self, percent) -> None:
        if isinstance(percent, int) and 0 <= percent <= 255:
            self.bridge.notify(self.id, BATTERY_LEVEL, bytes([percent]))

    async def session(self) -> None:
        adapter = await self.radio.wait_adapter()
        self.path = path = device_path(adapter, self.address)
        self.ended = asyncio.Event()
        self.end_reason = ""
        self.live = False  # until the device is connected, its "Connected: false" is old news
        if DEVICE not in self.bluez.objects.get(path, {}):
            await self.radio.discover(adapter, path)
        # One connection set up at a time: the kernel makes one LE connection at a time anyway,
        # and bluetoothd's service discovery of several new connections at once overran ATT's
        # 30 s timeout under the test VM's emulation.
        async with self.radio.connecting:
            props = self.bluez.props(path, DEVICE) or {}
            if not props.get("Connected"):
                await self.bluez.call(path, DEVICE, "Connect", timeout=45.0)
            # BlueZ 5.66 may not have signalled "Connected" (bluez.py): read it back.
            if not await self.bluez.get(path, DEVICE, "Connected"):
                raise SessionEnded("not connected after Connect")
            self.live = True
            await self.wait_services(path)
        if not (self.bluez.props(path, DEVICE) or {}).get("Trusted"):
            await self.bluez.set(path, DEVICE, "Trusted", "b", True)
        chars = self.bluez.characteristics(path)
        if not chars:  # services resolved, but their objects not (yet) seen: read the tree again
            await self.bluez.refresh(path)
            chars = self.bluez.characteristics(path)
        measured = [u for u in MEASUREMENTS if u in chars]
        if not measured:
            self.bridge.count_bad("no_measurement", self.id, 0,
                                  f"offers none of {', '.join(f'{u:04X}' for u in MEASUREMENTS)} "
                                  f"(its characteristics: {', '.join(f'{u:04X}' for u in sorted(chars)) or 'none'})")
            self.set_link(protocol.LINK_UNUSABLE)
            try:
                await self.bluez.call(path, DEVICE, "Disconnect")
            except BlueZError:
                pass
            raise Unusable("offers no measurement characteristic: disconnected, tried again in a minute")
        self.sessions += 1
        self.set_link(protocol.LINK_CONNECTED)
        for u in READS:
            if u in chars:
                try:
                    self.bridge.notify(self.id, u, await self.bluez.read_value(chars[u][0]))
                except BlueZError as e:
                    self.note(f"reading {u:04X} failed: {e}")
        battery = self.bluez.props(path, BATTERY)
        if battery and "Percentage" in battery:
            self.battery(battery["Percentage"])
        elif BATTERY_LEVEL in chars:  # bluetoothd without its battery plugin exports 0x2A19
            try:
                self.bridge.notify(self.id, BATTERY_LEVEL, await self.bluez.read_value(chars[BATTERY_LEVEL][0]))
            except BlueZError as e:
                self.note(f"reading the battery level failed: {e}")
            if "notify" in chars[BATTERY_LEVEL][1]:
                measured.append(BATTERY_LEVEL)
        loop = asyncio.get_running_loop()
        for u in measured:
            framer = self.framers.get(u)
            if framer is None:
                framer = self.framers[u] = self.bridge.framer(self.id, u)
            fd = await self.bluez.acquire_notify(chars[u][0])
            self.readers.append(NotifyReader(loop, fd, self.bridge, framer, self.end_session))
        log.info("%s: connected; forwarding %s", self.address, ", ".join(f"{u:04X}" for u in measured))
        await self.ended.wait()
        raise SessionEnded(self.end_reason)

    async def wait_services(self, path: str) -> None:
        deadline = time.monotonic() + SERVICES_S
        while not await self.bluez.get(path, DEVICE, "ServicesResolved"):
            if self.ended.is_set():
                raise SessionEnded(self.end_reason)
            if time.monotonic() > deadline:
                raise SessionEnded(f"services not resolved within {SERVICES_S:.0f} s")
            await asyncio.sleep(0.2)


class BleRadio:
    """The paired BLE sensors on one adapter, and searches."""

    def __init__(self, bridge, adapter: Optional[str] = None, bluez: Optional[BlueZ] = None) -> None:
        self.bridge = bridge
        self.adapter_name = adapter
        self.bluez = bluez or BlueZ()
        self.sensors: Dict[str, BleSensor] = {}
        self.bluez.listeners.append(self.on_bluez)
        self.changed = asyncio.Event()
        self.search_task: Optional[asyncio.Task] = None
        self.connecting = asyncio.Lock()
        self.found: Dict[str, tuple] = {}  # address -> (last report time, rssi) in the current search

    async def start(self) -> None:
        """Connects to the system bus, trying again every BUS_RETRY_S until it is there (said
        once in the log, and again when the reason changes)."""
        said = None
        while True:
            try:
                await self.bluez.start()
                if said is not None:
                    log.warning("the D-Bus system bus is there now")
                return
            except (BlueZError, OSError) as e:
                if str(e) != said:
                    log.warning("no D-Bus system bus or BlueZ (%s); trying again every %.0f s", e, BUS_RETRY_S)
                    said = str(e)
                await asyncio.sleep(BUS_RETRY_S)

    def on_bluez(self, path, iface, changed) -> None:
        self.changed.set()
        for s in list(self.sensors.values()):
            s.on_bluez(path, iface, changed)
        if self.search_task is not None and not self.search_task.done() and iface == DEVICE:
            self.seen(path)

    async def wait_adapter(self, timeout_s: Optional[float] = None) -> Optional[str]:
        """The adapter's object path once BlueZ has it (powered on); None after `timeout_s`."""
        warned = False
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            path = self.bluez.adapter(self.adapter_name) if self.bluez.present else None
            if path:
                await self.bluez.power_on(path)
                return path
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if not warned:
                log.warning("waiting for bluetoothd and adapter %s", self.adapter_name or "(any)")
                warned = True
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 5.0 if deadline is None else max(0.05, min(5.0, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                pass

    async def discover(self, adapter: str, path: str) -> None:
        """Discovery until BlueZ knows the device at `path`."""
        await self.bluez.want_discovery(adapter, path, None)
        try:
            deadline = time.monotonic() + DISCOVER_S
            while DEVICE not in self.bluez.objects.get(path, {}):
                if time.monotonic() > deadline:
                    raise SessionEnded(f"not seen advertising within {DISCOVER_S:.0f} s")
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), 1.0)
                except asyncio.TimeoutError:
                    pass
        finally:
            await self.bluez.drop_discovery(adapter, path)

    def set_paired(self, addresses) -> None:
        """The paired sensors (from the config file): starts the new ones, stops the others."""
        wanted = {a.upper() for a in addresses}
        for a in sorted(set(self.sensors) - wanted):
            s = self.sensors.pop(a)
            log.info("%s: no longer paired", a)
            asyncio.get_running_loop().create_task(s.stop())
        for a in sorted(wanted - set(self.sensors)):
            log.info("%s: paired", a)
            s = self.sensors[a] = BleSensor(self, a)
            s.start()

    # ---------------------------------------------------------------- search

    def search(self, seconds: int) -> None:
        if self.search_task is not None and not self.search_task.done():
            self.search_task.cancel()
        if seconds > 0:
            self.search_task = asyncio.get_running_loop().create_task(self._search(seconds))

    async def _search(self, seconds: int) -> None:
        adapter = await self.wait_adapter(SEARCH_ADAPTER_WAIT_S)
        if adapter is None:
            # No BlueZ (or no adapter): the search is over at once, and the app says so.
            log.warning("search: no Bluetooth adapter %s from BlueZ (is bluetoothd running?): no BLE search",
                        self.adapter_name or "(any)")
            self.found = {}
            self.radio_state(False)
            return
        self.found = {}
        self.search_adapter = adapter
        self.radio_state(True)
        try:
            await self.bluez.want_discovery(adapter, "search", list(SEARCH_SERVICES))
            try:
                for p in list(self.bluez.devices(adapter)):
                    self.seen(p, fresh_only=True)
                await asyncio.sleep(seconds)
            finally:
                await self.bluez.drop_discovery(adapter, "search")
        except BlueZError as e:
            log.warning("search: %s", e)
        finally:
            self.radio_state(False)

    def radio_state(self, running: bool) -> None:
        self.bridge.scan_state(running, protocol.RADIO_BLE, len(self.found))

    def seen(self, path: str, fresh_only: bool = False) -> None:
        adapter = getattr(self, "search_adapter", None)
        if adapter is None or not path.startswith(adapter + "/"):
            return
        d = self.bluez.props(path, DEVICE)
        if not d or "Address" not in d:
            return
        rssi = d.get("RSSI")
        if fresh_only and rssi is None:
            return  # known from before, not (yet) heard in this search
        services = 0
        for u in d.get("UUIDs", []):
            services |= kinds.SEARCH_SERVICES.get(u.lower(), 0)
        if not services:
            return
        address = d["Address"].upper()
        if address in self.sensors and d.get("Connected"):
            return  # paired and connected: not something to pair
        now = time.monotonic()
        last = self.found.get(address)
        if last is not None and (now - last[0] < FOUND_REPORT_S or rssi is None or last[1] is None
                                 or abs(rssi - last[1]) < FOUND_RSSI_STEP_DB):
            return
        self.found[address] = (now, rssi)
        rssi_dbm = None if rssi is None or rssi == protocol.RSSI_UNKNOWN else int(rssi)
        name = d.get("Name") or d.get("Alias") or ""
        self.bridge.found(protocol.BleId(address, d.get("AddressType") == "random"), services, rssi_dbm, name)
        log.info("search: %s %r services %d rssi %s", address, name, services, rssi_dbm)
