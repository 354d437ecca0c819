"""Replays recorded notifications (JSON lines) through the bridge, without radios:
{"t_ms": 250, "ble": "C0:FF:EE:00:11:22", "uuid": "2a63", "hex": "2000fa00..."}
{"t_ms": 250, "ant": [4321, 120, 1], "hex": "04ff00fe00010748"}
{"t_ms": 900, "ble": "C0:FF:EE:00:11:22", "link": "disconnected"}
"""
import json
from typing import Iterable, Iterator, Tuple

from . import protocol

LINKS = {"searching": protocol.LINK_SEARCHING, "connected": protocol.LINK_CONNECTED,
         "disconnected": protocol.LINK_DISCONNECTED}


def records(lines: Iterable[str]) -> Iterator[Tuple[int, dict]]:
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"line {n}: not JSON ({e}); each line is one recorded notification") from None
        yield int(r.get("t_ms", 0)), r


def sensor_of(r: dict) -> Tuple[protocol.SensorId, int]:
    if "ble" in r:
        return protocol.BleId(r["ble"].upper(), bool(r.get("random", False))), int(r.get("uuid", "0"), 16)
    if "ant" in r:
        number, device_type, trans = r["ant"]
        return protocol.AntId(number, device_type, trans), device_type
    raise ValueError(f"record {r} names no sensor: give \"ble\": address or \"ant\": [number, type, transmission]")


def frames(lines: Iterable[str]) -> Iterator[bytes]:
    """Frames for a recording, timestamped with the recording's times."""
    for t_ms, r in records(lines):
        sensor, profile = sensor_of(r)
        if "link" in r:
            yield protocol.link(t_ms * 1000, sensor, profile, LINKS[r["link"]])
        else:
            yield protocol.data(t_ms * 1000, sensor, profile, bytes.fromhex(r["hex"]))
