"""Bridge protocol version 1 (docs/bridge-protocol.md): frame encoding, parsing and the serial
framing (COBS over frame + CRC-16/CCITT-FALSE, big-endian, then one 0x00)."""
import binascii
import struct
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple, Union

VERSION = 1
KIND_HELLO, KIND_HEARTBEAT, KIND_DATA, KIND_LINK = 1, 2, 3, 4
TRANSPORT_ANT, TRANSPORT_BLE = 1, 2
LINK_SEARCHING, LINK_CONNECTED, LINK_DISCONNECTED = 0, 1, 2
RADIO_ANT, RADIO_BLE = 1, 2
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


def _sensor_bytes(sensor: SensorId, profile: int) -> bytes:
    if isinstance(sensor, AntId):
        body = struct.pack("<BHBB3x", TRANSPORT_ANT, sensor.device_number, sensor.device_type, sensor.transmission_type)
    else:
        body = bytes([TRANSPORT_BLE]) + sensor.address_bytes() + bytes([1 if sensor.random else 0])
    return body + struct.pack("<H", profile)


def hello(time_us: int, radios: int, bridge_id: int) -> bytes:
    return struct.pack("<BBQBBI", VERSION, KIND_HELLO, time_us, VERSION, radios, bridge_id)


def heartbeat(time_us: int, sequence: int) -> bytes:
    return struct.pack("<BBQI", VERSION, KIND_HEARTBEAT, time_us, sequence & 0xFFFFFFFF)


def data(time_us: int, sensor: SensorId, profile: int, payload: bytes) -> bytes:
    payload = bytes(payload)
    if len(payload) > PAYLOAD_BYTES_MAX:
        payload = payload[:PAYLOAD_BYTES_MAX]  # the app's limit; RR intervals beyond it are dropped
    return struct.pack("<BBQ", VERSION, KIND_DATA, time_us) + _sensor_bytes(sensor, profile) + bytes([len(payload)]) + payload


def link(time_us: int, sensor: SensorId, profile: int, state: int) -> bytes:
    return struct.pack("<BBQ", VERSION, KIND_LINK, time_us) + _sensor_bytes(sensor, profile) + bytes([state])


def parse(b: bytes) -> Frame:
    """Parses one frame (the inverse of the encoders above); raises ProtocolError."""
    if len(b) < HEADER_BYTES:
        raise ProtocolError(f"frame of {len(b)} bytes is shorter than the {HEADER_BYTES}-byte header")
    version, kind, t = struct.unpack_from("<BBQ", b)
    if version != VERSION:
        raise ProtocolError(f"protocol version {version}, expected {VERSION}")
    if kind == KIND_HELLO and len(b) == 16:
        v, radios, bid = struct.unpack_from("<BBI", b, 10)
        return Frame(KIND_HELLO, t, protocol_version_max=v, radios=radios, bridge_id=bid)
    if kind == KIND_HEARTBEAT and len(b) == 14:
        return Frame(KIND_HEARTBEAT, t, sequence=struct.unpack_from("<I", b, 10)[0])
    if kind in (KIND_DATA, KIND_LINK) and len(b) >= 21:
        transport = b[10]
        if transport == TRANSPORT_ANT:
            n, dt, tt = struct.unpack_from("<HBB", b, 11)
            sensor: SensorId = AntId(n, dt, tt)
        elif transport == TRANSPORT_BLE:
            sensor = BleId(":".join(f"{x:02X}" for x in b[11:17]), random=b[17] == 1)
        else:
            raise ProtocolError(f"unknown transport {transport}")
        profile = struct.unpack_from("<H", b, 18)[0]
        if kind == KIND_LINK and len(b) == 21:
            return Frame(KIND_LINK, t, sensor, profile, link=b[20])
        if kind == KIND_DATA and len(b) == 21 + b[20]:
            return Frame(KIND_DATA, t, sensor, profile, payload=bytes(b[21:]))
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
