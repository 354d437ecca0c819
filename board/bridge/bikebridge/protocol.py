"""Bridge protocol (docs/bridge-protocol.md): frame encoding, parsing and the serial framing
(COBS over frame + CRC-16/CCITT-FALSE, big-endian, then one 0x00).

Version 1: hello, heartbeat, data, link (bridge to app). Version 2 adds finding sensors: the app
says hello and asks for a scan or a reload of the paired sensors; the bridge reports what it
found and the scan's state. Frames of the version-1 kinds keep version byte 1, so an app that
speaks only version 1 reads everything a version-2 bridge sends it unasked."""
import binascii
import struct
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple, Union

from . import kinds

VERSION = 1  # the version byte of the version-1 kinds
VERSION_MAX = 3  # the newest version this bridge speaks (its hello says so)
KIND_HELLO, KIND_HEARTBEAT, KIND_DATA, KIND_LINK = 1, 2, 3, 4
# Version 2. Bridge to app: FOUND (a sensor a scan found), SCAN (the scan's state), SOCKET (a
# characteristic's notification socket, passed with SCM_RIGHTS: the app reads it itself).
# App to bridge: APP_HELLO (the app's newest version and what it takes), SCAN_REQUEST, RELOAD
# (paired sensors changed), SOCKET_RETURNED (the app will not read that socket: the bridge does).
KIND_FOUND, KIND_SCAN, KIND_APP_HELLO, KIND_SCAN_REQUEST, KIND_RELOAD = 5, 6, 7, 8, 9
KIND_SOCKET, KIND_SOCKET_RETURNED = 10, 11
KINDS_V2 = (KIND_FOUND, KIND_SCAN, KIND_APP_HELLO, KIND_SCAN_REQUEST, KIND_RELOAD, KIND_SOCKET, KIND_SOCKET_RETURNED)
# Version 3. Bridge to app: CONFIG_STATE (whether the config file could be read; when not, the
# bridge keeps the sensors it had and says where and why). Sent only to an app whose hello said 3.
KIND_CONFIG_STATE = 12
CONFIG_NOTE_BYTES_MAX = 64
APP_TAKES_SOCKETS = 1  # APP_HELLO flags: the app reads notification sockets handed to it
TRANSPORT_ANT, TRANSPORT_BLE = 1, 2
LINK_SEARCHING, LINK_CONNECTED, LINK_DISCONNECTED = 0, 1, 2
# Version 2: connected, but the device offers none of the measurements its service promises
# (sent only to an app that said it speaks version 2; an older app gets LINK_DISCONNECTED).
LINK_UNUSABLE = 3
RADIO_ANT, RADIO_BLE = 1, 2
# FOUND's services bits for BLE (for ANT+ the profile field is the device type): one per
# advertised service a kind has (kinds.SEARCH_SERVICES).
SERVICE_HEART_RATE = kinds.BY_NAME["heart_rate"].found_service_bit
SERVICE_CYCLING_POWER = kinds.BY_NAME["power"].found_service_bit
SERVICE_SPEED_CADENCE = kinds.BY_NAME["speed_cadence"].found_service_bit
RSSI_UNKNOWN = 127
NAME_BYTES_MAX = 24
SCAN_SECONDS_MAX = 300
PAYLOAD_BYTES_MAX = 64
HEADER_BYTES = 10
FRAME_BYTES_MAX = HEADER_BYTES + 11 + PAYLOAD_BYTES_MAX
SERIAL_RECORD_BYTES_MAX = 96


class ProtocolError(ValueError):
    """A frame that cannot be encoded or parsed."""


@dataclass(frozen=True)
class AntId:
    device_number: int
    device_type: int
    transmission_type: int = 0


@dataclass(frozen=True)
class BleId:
    """A BLE address as printed, e.g. "C0:FF:EE:00:11:22"."""
    address: str
    random: bool = False

    def address_bytes(self) -> bytes:
        parts = self.address.replace("-", ":").split(":")
        if len(parts) != 6:
            raise ProtocolError(f"bad BLE address {self.address!r}: expected six hex bytes like C0:FF:EE:00:11:22")
        return bytes(int(p, 16) for p in parts)


SensorId = Union[AntId, BleId]


@dataclass(frozen=True)
class Frame:
    kind: int
    time_us: int
    sensor: Optional[SensorId] = None
    profile: int = 0
    payload: bytes = b""
    link: int = 0
    protocol_version_max: int = VERSION
    radios: int = 0
    bridge_id: int = 0
    sequence: int = 0
    version: int = VERSION
    rssi: Optional[int] = None  # FOUND: dBm, None when unknown
    name: str = ""  # FOUND
    scanning: bool = False  # SCAN: running; SCAN_REQUEST: start (True) or stop
    seconds: int = 0  # SCAN_REQUEST
    found: int = 0  # SCAN: sensors found so far
    flags: int = 0  # APP_HELLO
    readable: bool = True  # CONFIG_STATE
    line: int = 0  # CONFIG_STATE: where the file is wrong (0: unknown)
    note: str = ""  # CONFIG_STATE: why


def _sensor_bytes(sensor: SensorId, profile: int) -> bytes:
    if isinstance(sensor, AntId):
        body = struct.pack("<BHBB3x", TRANSPORT_ANT, sensor.device_number, sensor.device_type, sensor.transmission_type)
    else:
        body = bytes([TRANSPORT_BLE]) + sensor.address_bytes() + bytes([1 if sensor.random else 0])
    return body + struct.pack("<H", profile)


def hello(time_us: int, radios: int, bridge_id: int, version_max: int = VERSION_MAX) -> bytes:
    return struct.pack("<BBQBBI", VERSION, KIND_HELLO, time_us, version_max, radios, bridge_id)


def heartbeat(time_us: int, sequence: int) -> bytes:
    return struct.pack("<BBQI", VERSION, KIND_HEARTBEAT, time_us, sequence & 0xFFFFFFFF)


def data(time_us: int, sensor: SensorId, profile: int, payload: bytes) -> bytes:
    payload = bytes(payload)
    if len(payload) > PAYLOAD_BYTES_MAX:
        payload = payload[:PAYLOAD_BYTES_MAX]  # the app's limit; RR intervals beyond it are dropped
    return struct.pack("<BBQ", VERSION, KIND_DATA, time_us) + _sensor_bytes(sensor, profile) + bytes([len(payload)]) + payload


def link(time_us: int, sensor: SensorId, profile: int, state: int) -> bytes:
    version = 2 if state == LINK_UNUSABLE else VERSION
    return struct.pack("<BBQ", version, KIND_LINK, time_us) + _sensor_bytes(sensor, profile) + bytes([state])


def _name_bytes(name: str) -> bytes:
    """UTF-8, cut at a character boundary to NAME_BYTES_MAX bytes."""
    b = name.encode("utf-8", "replace")[:NAME_BYTES_MAX]
    return b.decode("utf-8", "ignore").encode("utf-8")


def found(time_us: int, sensor: SensorId, profile: int, rssi: Optional[int], name: str) -> bytes:
    """A sensor a scan found. profile: BLE, the SERVICE_* bits it advertises; ANT+, its device type."""
    r = RSSI_UNKNOWN if rssi is None else max(-128, min(126, int(rssi)))
    n = _name_bytes(name)
    return (struct.pack("<BBQ", 2, KIND_FOUND, time_us) + _sensor_bytes(sensor, profile)
            + struct.pack("<bB", r, len(n)) + n)


def scan_state(time_us: int, running: bool, radios: int, found_count: int) -> bytes:
    return struct.pack("<BBQBBH", 2, KIND_SCAN, time_us, 1 if running else 0, radios, min(found_count, 0xFFFF))


def app_hello(time_us: int, version_max: int = VERSION_MAX, flags: int = 0) -> bytes:
    return struct.pack("<BBQBB", 2, KIND_APP_HELLO, time_us, version_max, flags)


def notification_socket(time_us: int, sensor: SensorId, characteristic: int) -> bytes:
    """The frame that goes with a notification socket (the descriptor rides in SCM_RIGHTS)."""
    return struct.pack("<BBQ", 2, KIND_SOCKET, time_us) + _sensor_bytes(sensor, characteristic)


def socket_returned(time_us: int, sensor: SensorId, characteristic: int) -> bytes:
    return struct.pack("<BBQ", 2, KIND_SOCKET_RETURNED, time_us) + _sensor_bytes(sensor, characteristic)


def scan_request(time_us: int, start: bool, radios: int, seconds: int) -> bytes:
    return struct.pack("<BBQBBH", 2, KIND_SCAN_REQUEST, time_us, 1 if start else 0, radios, seconds)


def reload_request(time_us: int) -> bytes:
    return struct.pack("<BBQ", 2, KIND_RELOAD, time_us)


def config_state(time_us: int, readable: bool, line: int, note: str) -> bytes:
    """Version 3: whether the config file could be read, and if not where (line, 0: unknown) and
    why (UTF-8, cut at a character boundary to CONFIG_NOTE_BYTES_MAX bytes)."""
    b = note.encode("utf-8", "replace")[:CONFIG_NOTE_BYTES_MAX].decode("utf-8", "ignore").encode("utf-8")
    return struct.pack("<BBQBHB", 3, KIND_CONFIG_STATE, time_us, 1 if readable else 0, max(0, min(line, 0xFFFF)), len(b)) + b


def parse(b: bytes) -> Frame:
    """Parses one frame (the inverse of the encoders above); raises ProtocolError."""
    if len(b) < HEADER_BYTES:
        raise ProtocolError(f"frame of {len(b)} bytes is shorter than the {HEADER_BYTES}-byte header")
    version, kind, t = struct.unpack_from("<BBQ", b)
    if not 1 <= version <= VERSION_MAX:
        raise ProtocolError(f"protocol version {version}, expected 1...{VERSION_MAX}")
    if kind in KINDS_V2 and version < 2:
        raise ProtocolError(f"frame kind {kind} needs protocol version 2, the frame says {version}")
    if kind == KIND_CONFIG_STATE and version < 3:
        raise ProtocolError(f"frame kind {kind} needs protocol version 3, the frame says {version}")
    if kind == KIND_HELLO and len(b) == 16:
        v, radios, bid = struct.unpack_from("<BBI", b, 10)
        return Frame(KIND_HELLO, t, protocol_version_max=v, radios=radios, bridge_id=bid, version=version)
    if kind == KIND_HEARTBEAT and len(b) == 14:
        return Frame(KIND_HEARTBEAT, t, sequence=struct.unpack_from("<I", b, 10)[0], version=version)
    if kind in (KIND_DATA, KIND_LINK, KIND_FOUND, KIND_SOCKET, KIND_SOCKET_RETURNED) and len(b) >= 20:
        transport = b[10]
        if transport == TRANSPORT_ANT:
            n, dt, tt = struct.unpack_from("<HBB", b, 11)
            sensor: SensorId = AntId(n, dt, tt)
        elif transport == TRANSPORT_BLE:
            if b[17] > 1:
                raise ProtocolError(f"BLE address type {b[17]}: 0 (public) or 1 (random)")
            sensor = BleId(":".join(f"{x:02X}" for x in b[11:17]), random=b[17] == 1)
        else:
            raise ProtocolError(f"unknown transport {transport}")
        profile = struct.unpack_from("<H", b, 18)[0]
        if kind in (KIND_SOCKET, KIND_SOCKET_RETURNED) and len(b) == 20:
            return Frame(kind, t, sensor, profile, version=version)
        if kind == KIND_LINK and len(b) == 21 and b[20] <= (LINK_UNUSABLE if version >= 2 else LINK_DISCONNECTED):
            return Frame(KIND_LINK, t, sensor, profile, link=b[20], version=version)
        if kind == KIND_DATA and len(b) == 21 + b[20] and b[20] <= PAYLOAD_BYTES_MAX:
            return Frame(KIND_DATA, t, sensor, profile, payload=bytes(b[21:]), version=version)
        if kind == KIND_FOUND and len(b) >= 22 and len(b) == 22 + b[21] and b[21] <= NAME_BYTES_MAX:
            rssi = struct.unpack_from("<b", b, 20)[0]
            name = bytes(b[22:]).decode("utf-8", "replace")
            return Frame(KIND_FOUND, t, sensor, profile, rssi=None if rssi == RSSI_UNKNOWN else rssi, name=name,
                         version=version)
    if kind == KIND_SCAN and len(b) == 14 and b[10] <= 1:
        return Frame(KIND_SCAN, t, scanning=b[10] == 1, radios=b[11], found=struct.unpack_from("<H", b, 12)[0],
                     version=version)
    if kind == KIND_APP_HELLO and len(b) == 12:
        return Frame(KIND_APP_HELLO, t, protocol_version_max=b[10], flags=b[11], version=version)
    if kind == KIND_SCAN_REQUEST and len(b) == 14 and b[10] <= 1:
        return Frame(KIND_SCAN_REQUEST, t, scanning=b[10] == 1, radios=b[11],
                     seconds=struct.unpack_from("<H", b, 12)[0], version=version)
    if kind == KIND_RELOAD and len(b) == 10:
        return Frame(KIND_RELOAD, t, version=version)
    if kind == KIND_CONFIG_STATE and len(b) >= 14 and b[10] <= 1 and len(b) == 14 + b[13] and b[13] <= CONFIG_NOTE_BYTES_MAX:
        return Frame(KIND_CONFIG_STATE, t, readable=b[10] == 1, line=struct.unpack_from("<H", b, 11)[0],
                     note=bytes(b[14:]).decode("utf-8", "replace"), version=version)
    raise ProtocolError(f"malformed frame of kind {kind}, {len(b)} bytes")


def crc16(b: bytes) -> int:
    """CRC-16/CCITT-FALSE: binascii.crc_hqx with initial value 0xFFFF ("123456789" → 0x29B1)."""
    return binascii.crc_hqx(b, 0xFFFF)


def cobs_encode(b: bytes) -> bytes:
    out = bytearray([0])
    code_at, code = 0, 1
    for x in b:
        if x == 0:
            out[code_at] = code
            code_at, code = len(out), 1
            out.append(0)
        else:
            out.append(x)
            code += 1
            if code == 0xFF:
                out[code_at] = code
                code_at, code = len(out), 1
                out.append(0)
    out[code_at] = code
    return bytes(out)


def cobs_decode(b: bytes) -> Optional[bytes]:
    out = bytearray()
    i = 0
    while i < len(b):
        code = b[i]
        if code == 0 or i + code > len(b):
            return None
        out += b[i + 1:i + code]
        i += code
        if code != 0xFF and i < len(b):
            out.append(0)
    return bytes(out)


def serial_record(frame: bytes) -> bytes:
    """COBS(frame ‖ CRC big-endian) ‖ 0x00."""
    return cobs_encode(frame + struct.pack(">H", crc16(frame))) + b"\x00"


class SerialDeframer:
    """Splits a serial byte stream into frames, skipping garbage (counted in `errors`)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.overflow = False
        self.errors = 0

    def feed(self, chunk: bytes) -> Iterator[Frame]:
        for x in chunk:
            if x != 0:
                if len(self.buffer) < SERIAL_RECORD_BYTES_MAX:
                    self.buffer.append(x)
                else:
                    self.overflow = True
                continue
            record, overflow = bytes(self.buffer), self.overflow
            self.buffer.clear()
            self.overflow = False
            if overflow:
                self.errors += 1
                continue
            if not record:
                continue
            plain = cobs_decode(record)
            if plain is None or len(plain) < 3 or struct.unpack(">H", plain[-2:])[0] != crc16(plain[:-2]):
                self.errors += 1
                continue
            try:
                yield parse(plain[:-2])
            except ProtocolError:
                self.errors += 1


class DataFramer:
    """Data frames of one sensor and characteristic (or ANT+ channel), built in place in one
    preallocated buffer: the hot path reads a notification straight into `body` and sends
    `frame(time, n)`, a view of the same buffer (no allocation per notification but the view)."""

    __slots__ = ("sensor", "profile", "buf", "view", "body", "count", "checked")

    def __init__(self, sensor: SensorId, profile: int, checked: bool = True) -> None:
        self.sensor = sensor
        self.profile = profile
        self.buf = bytearray(FRAME_BYTES_MAX)
        self.buf[0] = VERSION
        self.buf[1] = KIND_DATA
        self.buf[10:20] = _sensor_bytes(sensor, profile)
        self.view = memoryview(self.buf)
        self.body = self.view[21:21 + PAYLOAD_BYTES_MAX]
        self.count = 0
        self.checked = checked

    def payload(self, n: int) -> memoryview:
        return self.body[:n]

    def frame(self, time_us: int, n: int) -> memoryview:
        struct.pack_into("<Q", self.buf, 2, time_us)
        self.buf[20] = n
        return self.view[:21 + n]

    def put(self, payload) -> int:
        """Copies a payload into the buffer (when it did not arrive there); its length, cut to the limit."""
        n = min(len(payload), PAYLOAD_BYTES_MAX)
        self.body[:n] = payload[:n]
        return n
