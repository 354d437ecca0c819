"""The radio-independent part of the bridge: turns notifications into frames, says hello, sends
heartbeats while nothing else goes out, tracks link states, counts what it forwards and what was
wrong with it, and hears the app (version-2 frames: its hello, scan requests, reloads).

Radios call `notify`, `link` and `found`; the BLE hot path calls `forward` with a `DataFramer`
whose buffer already holds the notification. Tests and `replay` call them too."""
import collections
import logging
import os
import threading
import time
from typing import Callable, Dict, Optional

from . import protocol
from .transport import monotonic_us

log = logging.getLogger("bikebridge")

# Bytes a notification's flags announce, per GATT characteristic (docs/sensors.md). A value
# that is shorter, or longer where the layout has no open end, is counted and logged here and
# forwarded as it is: the app decodes, counts and logs it again.
LOG_EVERY_S = 60.0
BATTERY_LEVEL = 0x2A19


def _hr_bytes(b) -> Optional[int]:
    if len(b) < 1:
        return None
    f = b[0]
    return 1 + (2 if f & 1 else 1) + (2 if f & 8 else 0)


def _csc_bytes(b) -> Optional[int]:
    if len(b) < 1:
        return None
    f = b[0]
    return 1 + (6 if f & 1 else 0) + (4 if f & 2 else 0)


_CP_FIELDS = ((0, 1), (2, 2), (4, 6), (5, 4), (6, 4), (7, 4), (8, 3), (9, 2), (10, 2), (11, 2))
_cp_lengths: Dict[int, int] = {}


def _cp_bytes(b) -> Optional[int]:
    if len(b) < 2:
        return None
    f = b[0] | b[1] << 8
    n = _cp_lengths.get(f)
    if n is None:
        n = 4 + sum(size for bit, size in _CP_FIELDS if f >> bit & 1)
        if len(_cp_lengths) < 8192:
            _cp_lengths[f] = n
    return n


# (expected length from the flags, whether more bytes may follow: RR intervals)
CHECKS = {0x2A37: (_hr_bytes, True), 0x2A5B: (_csc_bytes, False), 0x2A63: (_cp_bytes, False),
          0x2A19: (lambda b: 1, False)}


def check_value(profile: int, value) -> Optional[str]:
    """Why a notification's value cannot be what its flags say, or None."""
    check = CHECKS.get(profile)
    if check is None:
        return None
    expected, open_end = check
    need = expected(value)
    if need is None:
        return f"empty value ({len(value)} bytes)"
    if len(value) < need:
        return f"truncated: its flags announce {need} bytes, it has {len(value)}"
    if len(value) > need and not open_end:
        return f"{len(value)} bytes where its flags announce {need}"
    if open_end and (len(value) - need) % 2:
        return f"{len(value)} bytes: the RR intervals after the first {need} bytes are not whole u16 values"
    return None


class Bridge:
    HEARTBEAT_S = 1.0
    # A heartbeat is re-armed this long before it would fire: while frames flow, the timer is
    # pushed back from the send path and never wakes the process.
    HEARTBEAT_PUSH_S = 0.5

    def __init__(self, send: Callable[[bytes], bool], radios: int, clock: Callable[[], int] = monotonic_us,
                 bridge_id: Optional[int] = None) -> None:
        self._send = send
        self.radios = radios
        self.clock = clock
        self.bridge_id = bridge_id if bridge_id is not None else int.from_bytes(os.urandom(4), "little")
        self.sequence = 0
        self.sent = 0
        self.dropped = 0
        # Re-entrant: a send that reconnects says hello (connected -> hello -> send) first.
        self.lock = threading.RLock()
        self.app_version = 1  # until the app says hello (version 2)
        self.last_send_s = 0.0
        self.notifications: Dict[tuple, int] = collections.Counter()  # (sensor, profile) -> forwarded
        self.bad: Dict[str, int] = collections.Counter()  # what was wrong -> count
        self.framers: Dict[int, protocol.DataFramer] = {}  # the hot path's, for their counts
        # What a newly connected app is told again (it restarted and knows nothing): each
        # sensor's link state and last battery level.
        self.links: Dict[tuple, int] = {}  # (sensor, profile) -> state
        self.batteries: Dict[object, bytes] = {}  # sensor -> its last 0x2A19 value
        self._bad_logged: Dict[tuple, float] = {}
        # Notification sockets (BLE characteristics) and whether the app reads them itself: an
        # app that says so in its hello gets each socket (SCM_RIGHTS through `send_fd`) and the
        # bridge stops reading it until the app returns it or goes away.
        self.send_fd: Optional[Callable[[bytes, int], bool]] = None
        self.app_takes_sockets = False
        self.readers = set()
        self.handed = 0  # sockets handed over (counter)
        self.on_scan_request: Optional[Callable[[bool, int, int], None]] = None
        self.on_reload: Optional[Callable[[], None]] = None
        # Whether the config file could be read the last time (and if not, its line and why):
        # told to an app of version 3 when it changes and after its hello.
        self.config = (True, 0, "")
        # The runner's heartbeat timer: re-armed through `rearm` once the clock passes `push_after`.
        self.rearm: Optional[Callable[[], None]] = None
        self.push_after = float("inf")

    # ---------------------------------------------------------------- sending

    def send(self, frame) -> bool:
        with self.lock:
            ok = self._send(frame)
            if ok:
                self.sent += 1
                self.last_send_s = time.monotonic()
            else:
                self.dropped += 1
            return ok

    def hello(self) -> None:
        self.send(protocol.hello(self.clock(), self.radios, self.bridge_id))

    def heartbeat(self) -> None:
        self.sequence += 1
        self.send(protocol.heartbeat(self.clock(), self.sequence))

    def notify(self, sensor: protocol.SensorId, profile: int, payload: bytes) -> None:
        """A raw payload: a GATT value, or an ANT+ 8-byte broadcast page."""
        payload = bytes(payload)
        if profile == BATTERY_LEVEL and len(self.batteries) < 64:
            self.batteries[sensor] = payload
        if profile in CHECKS:
            self.check(sensor, profile, payload)
        self.notifications[(sensor, profile)] += 1
        self.send(protocol.data(self.clock(), sensor, profile, payload))

    def framer(self, sensor: protocol.SensorId, profile: int) -> protocol.DataFramer:
        """A DataFramer for the hot path (its count shows in `stats`)."""
        f = protocol.DataFramer(sensor, profile, checked=profile in CHECKS)
        self.framers[id(f)] = f
        return f

    def forward(self, framer: protocol.DataFramer, n: int) -> None:
        """The BLE hot path: the notification's n bytes are already in framer's buffer."""
        if n > protocol.PAYLOAD_BYTES_MAX:
            self.count_bad("oversize", framer.sensor, framer.profile,
                           f"a {n}-byte value; the first {protocol.PAYLOAD_BYTES_MAX} are forwarded")
            n = protocol.PAYLOAD_BYTES_MAX
        if framer.checked:
            why = check_value(framer.profile, framer.payload(n))
            if why is not None:
                self.count_bad("malformed", framer.sensor, framer.profile, why)
        framer.count += 1
        self.send(framer.frame(self.clock(), n))
        if self.last_send_s > self.push_after:
            self.rearm()

    def link(self, sensor: protocol.SensorId, profile: int, state: int) -> None:
        if state == protocol.LINK_CONNECTED:
            if len(self.links) < 64:
                self.links[(sensor, profile)] = state
        else:
            self.links.pop((sensor, profile), None)
            if profile == 0:
                self.batteries.pop(sensor, None)
        if state == protocol.LINK_UNUSABLE and self.app_version < 2:
            state = protocol.LINK_DISCONNECTED  # what an app of version 1 understands
        self.send(protocol.link(self.clock(), sensor, profile, state))

    def found(self, sensor: protocol.SensorId, profile: int, rssi: Optional[int], name: str) -> None:
        if self.app_version >= 2:
            self.send(protocol.found(self.clock(), sensor, profile, rssi, name))

    def config_state(self, readable: bool, line: int = 0, why: str = "") -> None:
        """The config file was read (`readable`), or could not be: the paired sensors stay as
        they were. Told to an app of version 3 when it changes."""
        state = (readable, line, why)
        if state == self.config:
            return
        self.config = state
        if self.app_version >= 3:
            self.send(protocol.config_state(self.clock(), readable, line, why))

    def scan_state(self, running: bool, radios: int, found_count: int) -> None:
        if self.app_version >= 2:
            self.send(protocol.scan_state(self.clock(), running, radios, found_count))

    # ---------------------------------------------------------------- bad input

    def check(self, sensor, profile: int, value) -> None:
        why = check_value(profile, value)
        if why is not None:
            self.count_bad("malformed", sensor, profile, why)

    def count_bad(self, kind: str, sensor, profile: int, why: str) -> None:
        """Counts one piece of bad input; logs it at most once a minute per kind and sensor."""
        self.bad[kind] += 1
        key = (kind, sensor, profile)
        now = time.monotonic()
        last = self._bad_logged.get(key)
        if last is None or now - last >= LOG_EVERY_S:
            self._bad_logged[key] = now
            who = sensor.address if isinstance(sensor, protocol.BleId) else f"ANT+ {getattr(sensor, 'device_number', sensor)}"
            log.warning("%s %04x: %s (%s, %d so far)", who, profile, why, kind, self.bad[kind])

    # ---------------------------------------------------------------- the app

    def connected(self) -> None:
        """A (new) connection to the app: it speaks version 1 until its hello says otherwise."""
        self.app_version = 1
        self.app_gone()
        self.hello()
        # A new app knows nothing yet: the sensors that are connected, and their batteries
        # (a level is notified only when it changes, which may be hours away).
        for (sensor, profile), state in list(self.links.items()):
            self.send(protocol.link(self.clock(), sensor, profile, state))
        for sensor, value in list(self.batteries.items()):
            if (sensor, 0) in self.links:
                self.send(protocol.data(self.clock(), sensor, BATTERY_LEVEL, value))

    def app_gone(self) -> None:
        """The app's connection ended: the bridge reads every socket it had handed over again."""
        self.app_takes_sockets = False
        for r in self.readers:
            if r.handed:
                r.resume()

    # ---------------------------------------------------------------- notification sockets

    def add_reader(self, reader) -> None:
        self.readers.add(reader)
        if self.app_takes_sockets:
            self.hand(reader)

    def remove_reader(self, reader) -> None:
        self.readers.discard(reader)

    def hand(self, reader) -> None:
        """Passes the reader's socket to the app (it keeps its own copy, unread)."""
        if reader.handed or reader.closed or self.send_fd is None:
            return
        frame = protocol.notification_socket(self.clock(), reader.framer.sensor, reader.framer.profile)
        with self.lock:
            ok = self.send_fd(frame, reader.fd)
        if ok:
            reader.pause()
            self.handed += 1
            self.sent += 1
        else:
            log.warning("could not hand the %04x socket of %s to the app; forwarding its values",
                        reader.framer.profile, reader.framer.sensor)

    def from_app(self, b: bytes) -> None:
        """One frame the app sent (version 2)."""
        try:
            f = protocol.parse(b)
        except protocol.ProtocolError as e:
            self.bad["from_app"] += 1
            log.warning("a frame from the app that this bridge cannot read: %s", e)
            return
        self.from_app_frame(f)

    def from_app_frame(self, f: protocol.Frame) -> None:
        if f.kind == protocol.KIND_APP_HELLO:
            self.app_version = min(f.protocol_version_max, protocol.VERSION_MAX)
            self.app_takes_sockets = bool(f.flags & protocol.APP_TAKES_SOCKETS) and self.send_fd is not None
            log.info("the app speaks protocol version %d%s", f.protocol_version_max,
                     " and reads the notification sockets itself" if self.app_takes_sockets else "")
            if self.app_takes_sockets:
                for r in list(self.readers):
                    self.hand(r)
            readable, line, why = self.config
            if self.app_version >= 3 and not readable:
                self.send(protocol.config_state(self.clock(), readable, line, why))
        elif f.kind == protocol.KIND_SOCKET_RETURNED:
            for r in self.readers:
                if r.handed and r.framer.sensor == f.sensor and r.framer.profile == f.profile:
                    log.warning("the app returned the %04x socket of %s: forwarding its values", f.profile, f.sensor)
                    self.bad["socket_returned"] += 1
                    r.resume()
        elif f.kind == protocol.KIND_SCAN_REQUEST:
            if self.on_scan_request:
                self.on_scan_request(f.scanning, f.radios, min(f.seconds, protocol.SCAN_SECONDS_MAX))
        elif f.kind == protocol.KIND_RELOAD:
            if self.on_reload:
                self.on_reload()
        else:
            self.bad["from_app"] += 1
            log.warning("the app sent a frame of kind %d, which goes the other way", f.kind)

    # ---------------------------------------------------------------- counters

    def stats(self) -> dict:
        """What the bridge did, for its log and the tests: frames sent and dropped,
        notifications forwarded per sensor and characteristic, bad input by kind."""
        per = {}
        counts = collections.Counter(self.notifications)
        for f in self.framers.values():
            counts[(f.sensor, f.profile)] += f.count
        for (sensor, profile), n in counts.items():
            who = sensor.address if isinstance(sensor, protocol.BleId) else f"ant:{sensor.device_number}:{sensor.device_type}"
            per[f"{who}/{profile:04x}"] = n
        return {"sent": self.sent, "dropped": self.dropped, "heartbeats": self.sequence, "app_version": self.app_version,
                "sockets_handed": self.handed, "sockets_with_app": sum(1 for r in self.readers if r.handed),
                "notifications": per, "bad": dict(self.bad)}
