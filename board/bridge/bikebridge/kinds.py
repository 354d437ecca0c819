"""The kinds of sensor the bike computer pairs, as the bridge needs them: the config file's
`role`, the ANT+ device type and channel period, the BLE service a search filters on and the
found frame's service bit, the characteristics whose notifications carry the measurements (and
those read once). This is the app's sensor vocabulary (Sources/RideModel/SensorVocabulary.swift,
`SensorKind`) copied: `bikecomputer sensors kinds` prints the app's, and
Tests/oracle/test_sensors_bridge.py checks that this table is the same. A new kind of sensor is a
row here and a case there."""
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

SIG_BASE = "-0000-1000-8000-00805f9b34fb"


def sig_uuid(u: int) -> str:
    """The 128-bit text of a Bluetooth SIG 16-bit UUID."""
    return f"0000{u:04x}{SIG_BASE}"


def varia_uuid(u: int) -> str:
    """A UUID of Garmin's Varia radar family (radar service 0x3200, targets characteristic 0x3203)."""
    return f"6a4e{u:04x}-667b-11e3-949a-0800200c9a66"


@dataclass(frozen=True)
class Kind:
    name: str  # the config's role, the protocol's kind word
    label: str
    roles: Tuple[str, ...]  # the roles a ride expects once it is paired
    ant_device_type: int
    ant_channel_period: int  # 1/32768 s
    ble_service: str  # 128-bit text
    found_service_bit: Optional[int]  # None: found as another kind with the same service
    ble_measurements: Tuple[Tuple[int, str], ...]  # (profile code on the wire, characteristic UUID)
    ble_reads: Tuple[Tuple[int, str], ...] = ()


KINDS: Tuple[Kind, ...] = (
    Kind("heart_rate", "HR", ("heart_rate",), 120, 8070, sig_uuid(0x180D), 1, ((0x2A37, sig_uuid(0x2A37)),)),
    Kind("power", "PWR", ("power",), 11, 8182, sig_uuid(0x1818), 2, ((0x2A63, sig_uuid(0x2A63)),),
         ((0x2A65, sig_uuid(0x2A65)),)),
    Kind("speed_cadence", "S+C", ("speed", "cadence"), 121, 8086, sig_uuid(0x1816), 4, ((0x2A5B, sig_uuid(0x2A5B)),)),
    Kind("speed", "SPD", ("speed",), 123, 8118, sig_uuid(0x1816), None, ((0x2A5B, sig_uuid(0x2A5B)),)),
    Kind("cadence", "CAD", ("cadence",), 122, 8102, sig_uuid(0x1816), None, ((0x2A5B, sig_uuid(0x2A5B)),)),
    Kind("radar", "RDR", ("radar",), 40, 4084, varia_uuid(0x3200), 8, ((0x3203, varia_uuid(0x3203)),)),
)

BY_NAME: Dict[str, Kind] = {k.name: k for k in KINDS}
BY_ANT_TYPE: Dict[int, Kind] = {k.ant_device_type: k for k in KINDS}
# The ANT+ device types, in kind order (a search opens a wildcard channel per type).
ANT_TYPES: Tuple[int, ...] = tuple(k.ant_device_type for k in KINDS)
ANT_PERIODS: Dict[int, int] = {k.ant_device_type: k.ant_channel_period for k in KINDS}
# A search's BLE filter and the found frame's bits per advertised service.
SEARCH_SERVICES: Dict[str, int] = {k.ble_service: k.found_service_bit for k in KINDS if k.found_service_bit is not None}
# Characteristic UUID -> profile code, for every measurement and read characteristic.
MEASUREMENTS: Dict[str, int] = {}
READS: Dict[str, int] = {}
for _k in KINDS:
    for _code, _uuid in _k.ble_measurements:
        MEASUREMENTS.setdefault(_uuid, _code)
    for _code, _uuid in _k.ble_reads:
        READS.setdefault(_uuid, _code)


def ant_device_type(role: Optional[str]) -> Optional[int]:
    """The ANT+ device type a config role implies (None for an unknown role)."""
    k = BY_NAME.get(role) if isinstance(role, str) else None
    return k.ant_device_type if k else None


def as_json():
    """The table as `bikecomputer sensors kinds` prints the app's."""
    return [{"kind": k.name, "label": k.label, "roles": list(k.roles), "ant_device_type": k.ant_device_type,
             "ant_channel_period": k.ant_channel_period, "ble_service": k.ble_service,
             "found_service_bit": k.found_service_bit,
             "ble_measurements": [c for c, _ in k.ble_measurements], "ble_measurement_uuids": [u for _, u in k.ble_measurements],
             "ble_reads": [c for c, _ in k.ble_reads]} for k in KINDS]


def profile_code(uuid: str) -> Optional[int]:
    """The wire's profile code for a characteristic UUID: a SIG UUID's 16 bits, or the code a
    kind gives its own 128-bit characteristic; None for anything else."""
    u = uuid.lower()
    if u in MEASUREMENTS:
        return MEASUREMENTS[u]
    if u in READS:
        return READS[u]
    if len(u) == 36 and u.startswith("0000") and u.endswith(SIG_BASE):
        return int(u[4:8], 16)
    return None


def characteristic_uuid(code: int) -> str:
    """The characteristic UUID a profile code stands for (the inverse of `profile_code`)."""
    for table in (MEASUREMENTS, READS):
        for u, c in table.items():
            if c == code:
                return u
    return sig_uuid(code)


def service_uuid(service) -> str:
    """A service given as a SIG 16-bit number or as 128-bit text, as text."""
    return sig_uuid(service) if isinstance(service, int) else service.lower()
