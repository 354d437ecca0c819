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


def frame(t_us: int, r: dict) -> bytes:
    """One recorded notification as a frame stamped `t_us`."""
    sensor, profile = sensor_of(r)
    if "link" in r:
        return protocol.link(t_us, sensor, profile, LINKS[r["link"]])
    return protocol.data(t_us, sensor, profile, bytes.fromhex(r["hex"]))


def frames(lines: Iterable[str]) -> Iterator[bytes]:
    """Frames for a recording, timestamped with the recording's times."""
    for t_ms, r in records(lines):
        yield frame(t_ms * 1000, r)


REPEAT_GAP_MS = 250  # with `repeat`, the recording starts again this long after its last record


def paced(lines: Iterable[str], repeat: bool, clock_us, sleep) -> Iterator[bytes]:
    """The recording in real time: each record is due at its t_ms after the start (after the
    previous pass's end + REPEAT_GAP_MS when repeating) and stamped with `clock_us()` when sent,
    like a live radio. `sleep(seconds)` waits. Without `repeat` it ends after one pass."""
    recorded = list(records(lines))
    if not recorded:
        return
    span_ms = recorded[-1][0] + REPEAT_GAP_MS
    start_us = clock_us()
    passes = 0
    while True:
        for t_ms, r in recorded:
            due_us = start_us + (passes * span_ms + t_ms) * 1000
            wait_us = due_us - clock_us()
            if wait_us > 0:
                sleep(wait_us / 1e6)
            yield frame(clock_us(), r)
        passes += 1
        if not repeat:
            return
