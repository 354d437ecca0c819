"""What the system VM tests share: the installed image, a booted System, the recorded ride the
bridge unit replays, and the FIT checks with the independent decoders (issue 17)."""
from __future__ import annotations

import json
import pathlib
import struct
import threading
import time

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


# The longest a test waits for background work (an image to make, then its guests: the install
# boot took 404 s and the faults guest 378 s at load ~20), and for a value another thread
# computes. Past it the wait fails and says what it waited for, instead of hanging.
BACKGROUND_WAIT_S = 3600


class Background:
    """Work (booting guests, replaying logs) on a thread, so the system tests' guests run side by
    side with each other and with the other VM tests' (conftest.launcher); `wait()` returns what
    `fn` returned or raises what it raised. The guests mostly wait for ride seconds to pass."""

    def __init__(self, fn, what: str | None = None) -> None:
        self.value = None
        self.error: BaseException | None = None
        self.what = what or getattr(fn, "__qualname__", "background work")
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True, name=f"Background {self.what}")
        self.thread.start()

    def _run(self, fn) -> None:
        try:
            self.value = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised by wait()
            self.error = e

    def wait(self, timeout_s: float | None = None):
        timeout_s = BACKGROUND_WAIT_S if timeout_s is None else timeout_s
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            raise vmlib.VMUnavailable(f"waited {timeout_s:.0f} s for {self.what} (thread {self.thread.name}); it has not finished")
        if self.error is not None:
            raise self.error
        return self.value


_once_lock = threading.Lock()
_once: dict[str, tuple[threading.Lock, dict]] = {}


def once(key: str, fn):
    """fn() computed once per test session, whichever thread asks first; the others wait for it
    (at most BACKGROUND_WAIT_S)."""
    with _once_lock:
        lock, box = _once.setdefault(key, (threading.Lock(), {}))
    asked = time.monotonic()
    if not lock.acquire(timeout=BACKGROUND_WAIT_S):
        raise vmlib.VMUnavailable(f"waited {BACKGROUND_WAIT_S} s for {key}, which another test's thread computes")
    try:
        if "value" not in box and "error" not in box:
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001
                box["error"] = e
        elif time.monotonic() - asked > 0.5:
            vmlib.record_timing("wait", f"for {key} (computed by another test)", asked)
    finally:
        lock.release()
    if "error" in box:
        raise box["error"]
    return box["value"]


def binaries() -> pathlib.Path:
    return once("binaries", lambda: builds.swift_products(["bikecomputer", "bikecompanion"]))


def installed(k: vmlib.Kernel) -> pathlib.Path:
    return once("installed", lambda: system.installed_image(k, binaries(), builds.modules(k)))


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
    check = Decoder(Stream.from_file(str(path)))
    assert check.is_fit() and check.check_integrity(), f"{path}: Garmin's SDK finds it not a whole FIT file"
    messages, errors = Decoder(Stream.from_file(str(path))).read()  # a fresh stream: the checks consumed it
    assert not errors, f"{path}: Garmin's SDK: {errors}"
    out["sdk_records"] = len(messages.get("record_mesgs", []))
    return out


def usb_image_files(image: pathlib.Path) -> list[str]:
    """The files in the FAT image's Activities/ (mtools, no mount)."""
    vmlib.ensure_packages(["mtools"])
    r = vmlib.sh(["mdir", "-b", "-i", str(image), "::/Activities"], env={"MTOOLS_SKIP_CHECK": "1", "PATH": "/usr/bin:/bin"})
    return [line.strip().rsplit("/", 1)[-1] for line in r.stdout.splitlines() if line.strip()]


def true_env() -> dict[str, str]:
    """The host's time as QEMU starts: the guest adds its monotonic time to it (guest_system.true_ms)."""
    import time
    return {"TRUE_UNIX_MS": str(int(time.time() * 1000)), "TRUE_MONO_MS": "0"}


STALE_RTC = "2025-06-01T08:00:00"
def power_cut_ride(k: vmlib.Kernel) -> tuple[dict, dict, pathlib.Path]:
    """A ride on a synchronised clock, the plug pulled (SIGKILL to QEMU), the board booted again
    on a stale clock; the ride recovered, ridden on and ended. Run once per test session (the
    power-cut and the clock tests read the same ride)."""
    return once("power-cut", lambda: _power_cut_ride(k))


def _power_cut_ride(k: vmlib.Kernel) -> tuple[dict, dict, pathlib.Path]:
    vm = system.System(k, installed(k))
    out = prepare_outdir("power-cut")
    data = system.make_data_disk(out / "data.img", 64)
    first = vm.run(guest_script("clock-cut-1"), timeout_s=300, data_image=data, outdir=out, kill_when="pull-the-plug",
                   name="power-cut", env=true_env())
    before = record_of(first)
    assert getattr(first, "killed", False) and not before["errors"], explain(first, before)
    (out / "record-1.json").write_text((out / "record.json").read_text())
    (out / "record.json").unlink()
    second = vm.run(guest_script("clock-cut-2"), timeout_s=300, data_image=data, outdir=out, name="power-cut",
                    env=true_env(), rtc=STALE_RTC)
    after = record_of(second)
    assert second.ok and not after["errors"], explain(second, after)
    return before, after, out
