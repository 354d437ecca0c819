"""What the system VM tests share: the installed image, a booted System, the recorded ride the
bridge unit replays, and the FIT checks with the independent decoders (issue 17)."""
from __future__ import annotations

import json
import pathlib
import struct

import builds
import system
import vmlib
from vmlib import REPO

GUEST_DRIVER = pathlib.Path(__file__).resolve().parent / "guest_system.py"
RIDE_SECONDS = 20  # one pass of the recording; the bridge repeats it
HR_ANT = (1234, 120, 1)
POWER_BLE = "C0:FF:EE:00:11:22"


def ride_recording(seconds: int = RIDE_SECONDS) -> str:
    """JSON lines for bikebridge --replay: an ANT+ heart-rate strap (device 1234) at 4 Hz and a
    BLE power meter with crank data at 2 Hz, both connected from the start."""
    lines = [json.dumps({"t_ms": 0, "ble": POWER_BLE, "link": "connected"})]
    beats = 0
    revs = 0
    for step in range(seconds * 4):
        t_ms = step * 250
        bpm = 130 + (step // 8) % 20
        if step % 2 == 0:
            beats += 1
        beat_time = int(beats * 60 / bpm * 1024) & 0xFFFF
        page = 0x04 if step % 4 == 0 else 0x00
        hr = bytes([page, 0xFF, 0xFF, 0xFF, beat_time & 0xFF, beat_time >> 8, beats & 0xFF, bpm])
        lines.append(json.dumps({"t_ms": t_ms, "ant": list(HR_ANT), "hex": hr.hex()}))
        if step % 2 == 1:
            revs += 1
            power = 180 + (step * 7) % 60
            crank_time = (revs * 1024 * 60 // 85) & 0xFFFF  # 85 rpm
            cpm = struct.pack("<hhHH", 0x20, power, revs & 0xFFFF, crank_time)
            lines.append(json.dumps({"t_ms": t_ms, "ble": POWER_BLE, "uuid": "2a63", "hex": cpm.hex()}))
    return "\n".join(lines) + "\n"


def binaries() -> pathlib.Path:
    return builds.swift_products(["bikecomputer", "bikecompanion"])


def installed(k: vmlib.Kernel) -> pathlib.Path:
    return system.installed_image(k, binaries(), builds.modules(k))


def guest_script(scenario: str, *args: str) -> str:
    return f"python3 /out/guest_system.py {scenario} {' '.join(args)}"


def prepare_outdir(name: str) -> pathlib.Path:
    """A run directory with the guest driver and the recording in it."""
    import tempfile
    runs = vmlib.CACHE / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    out = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=runs))
    out.chmod(0o777)
    (out / "guest_system.py").write_text(GUEST_DRIVER.read_text())
    (out / "ride.jsonl").write_text(ride_recording())
    return out


def record_of(result: vmlib.Result) -> dict:
    p = result.outdir / "record.json"
    return json.loads(p.read_text()) if p.exists() else {"errors": ["no record.json"], "steps": []}


def explain(result: vmlib.Result, record: dict) -> str:
    journal = record.get("journal_app_on_error") or record.get("journal_app") or ""
    return (f"{record.get('errors')}\n{result.describe()}\n--- bikecomputer's journal\n{journal[-3000:]}"
            f"\n--- bridge's journal\n{record.get('journal_bridge_on_error', '')[-1500:]}")


def fit_records(path: pathlib.Path) -> dict:
    """The FIT file read strictly by fitdecode (CRC checked) and by Garmin's SDK: record count,
    laps, sessions and the heart-rate and power values of the records."""
    import fitdecode
    from garmin_fit_sdk import Decoder, Stream
    out = {"records": 0, "laps": 0, "sessions": 0, "heart_rates": [], "powers": []}
    with fitdecode.FitReader(str(path), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as fit:
        for frame in fit:
            if isinstance(frame, fitdecode.FitDataMessage):
                if frame.name == "record":
                    out["records"] += 1
                    if frame.has_field("heart_rate") and frame.get_value("heart_rate") is not None:
                        out["heart_rates"].append(frame.get_value("heart_rate"))
                    if frame.has_field("power") and frame.get_value("power") is not None:
                        out["powers"].append(frame.get_value("power"))
                elif frame.name == "lap":
                    out["laps"] += 1
                elif frame.name == "session":
                    out["sessions"] += 1
    decoder = Decoder(Stream.from_file(str(path)))
    assert decoder.is_fit() and decoder.check_integrity(), f"{path}: Garmin's SDK finds it not a whole FIT file"
    messages, errors = decoder.read()
    assert not errors, f"{path}: Garmin's SDK: {errors}"
    out["sdk_records"] = len(messages.get("record_mesgs", []))
    return out


def usb_image_files(image: pathlib.Path) -> list[str]:
    """The files in the FAT image's Activities/ (mtools, no mount)."""
    vmlib.ensure_packages(["mtools"])
    r = vmlib.sh(["mdir", "-b", "-i", str(image), "::/Activities"], env={"MTOOLS_SKIP_CHECK": "1", "PATH": "/usr/bin:/bin"})
    return [line.strip().rsplit("/", 1)[-1] for line in r.stdout.splitlines() if line.strip()]
