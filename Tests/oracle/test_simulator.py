"""The simulator as a rider and a test harness use it: the interactive demo in a pseudo-terminal,
and headless runs whose outputs are byte-identical for the same scenario and seed."""
import json
import os
import pty
import select
import subprocess
import time

import pytest

from conftest import REPO


def read_until(fd, needle: bytes, timeout_s: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if needle in seen:
                return seen
    raise AssertionError(f"{needle!r} not seen within {timeout_s} s; got {seen[-400:]!r}")


def test_interactive_demo_draws_in_a_pty_and_quits_on_q(bikesim):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execv(str(bikesim), [str(bikesim), "--speed", "20"])
    try:
        out = read_until(fd, b"? help", 20)
        assert b"\x1b[?25l" in out, "raw mode hides the cursor"
        os.write(fd, b"?")
        read_until(fd, b"long-press", 10)
        # The demo presses start at 5 s of ride time; at 20x the countdown (state "prepared")
        # comes within a second, then the ride runs.
        read_until(fd, b"prepared", 15)
        read_until(fd, b"running", 15)
        os.write(fd, b"q")
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            try:
                select.select([fd], [], [], 0.1)
                os.read(fd, 65536)
            except OSError:
                pass
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"status {status}"
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)


def run_headless(bikesim, tmp_path, name, *args):
    out = tmp_path / name
    subprocess.run([str(bikesim), "--headless", "--out", str(out), *args], check=True, capture_output=True, timeout=300)
    return out


def test_headless_is_deterministic(bikesim, tmp_path):
    scenario = str(REPO / "Simulator" / "scenarios" / "faults.scenario")
    a = run_headless(bikesim, tmp_path, "a", "--scenario", scenario)
    b = run_headless(bikesim, tmp_path, "b", "--scenario", scenario)
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert "summary.json" in names
    assert any(n.startswith("frames/") and n.endswith(".png") for n in names), "the scenario's screenshot"
    assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), f"{n} differs between two runs"
    summary = json.loads((a / "summary.json").read_text())
    assert summary["state"] in ("ended", "stopped", "running", "paused")
    assert summary["timer_time_s"] > 0


def test_headless_rejects_a_bad_scenario_with_its_line(bikesim, tmp_path):
    bad = tmp_path / "bad.scenario"
    bad.write_text("duration 10m\nat 1m press start\nat 2m jump\n")
    r = subprocess.run([str(bikesim), "--headless", "--out", str(tmp_path / "o"), "--scenario", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "line 3" in r.stderr and "unknown action" in r.stderr


def test_simulated_ride_is_listed_exported_and_on_the_usb_image(bikesim, bikecomputer, tmp_path):
    """Record a ride in the simulator on a data directory, then list it, export it in all three
    formats and find it in a fresh USB image, all with the documented commands."""
    import io

    import fitdecode
    import gpxpy
    from garmin_fit_sdk import Decoder, Stream

    data = tmp_path / "data"
    out = run_headless(bikesim, tmp_path, "out", "--data-dir", str(data))
    summary = json.loads((out / "summary.json").read_text())
    ride_id = summary["ride_id"]

    listed = json.loads(subprocess.run([str(bikecomputer), "rides", "list", "--json", "--data-dir", str(data)],
                                       check=True, capture_output=True, text=True).stdout)
    rides = listed if isinstance(listed, list) else listed.get("rides", [])
    assert [r["id"] for r in rides] == [ride_id]

    exported = {}
    for fmt in ("fit", "gpx", "tcx"):
        path = tmp_path / f"ride.{fmt}"
        subprocess.run([str(bikecomputer), "rides", "export", ride_id, "--format", fmt, "-o", str(path),
                        "--data-dir", str(data)], check=True, capture_output=True)
        exported[fmt] = path.read_bytes()
    assert exported["fit"] == (out / f"{ride_id}.fit").read_bytes()

    decoder = Decoder(Stream.from_byte_array(bytearray(exported["fit"])))
    assert decoder.check_integrity()
    # check_integrity() consumes the stream: read with a fresh decoder.
    messages, errors = Decoder(Stream.from_byte_array(bytearray(exported["fit"]))).read()
    assert errors == []
    session = messages["session_mesgs"][0]
    assert abs(session["total_timer_time"] - summary["timer_time_s"]) < 1.0
    assert abs(session["total_distance"] - summary["distance_m"]) < 1.0
    assert len(messages["lap_mesgs"]) == len(summary["laps"])
    assert session["max_heart_rate"] == round(summary["max_hr_bpm"])
    with fitdecode.FitReader(io.BytesIO(exported["fit"]), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as reader:
        assert sum(1 for f in reader if isinstance(f, fitdecode.FitDataMessage) and f.name == "record") > 3000
    gpx = gpxpy.parse(exported["gpx"].decode())
    assert len(gpx.tracks) == 1

    image = tmp_path / "usb.img"
    subprocess.run([str(bikecomputer), "usb-image", "--out", str(image), "--data-dir", str(data)], check=True, capture_output=True)
    fsck = subprocess.run(["fsck.fat", "-n", str(image)], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    listing = subprocess.run(["mdir", "-b", "-/", "-i", str(image), "::"], capture_output=True, text=True, check=True).stdout
    assert any(ride_id in line and line.endswith(".fit") for line in listing.splitlines()), listing


CRASH_RIDE = """seed 11
duration 12m
at 2s press start
at 3m press lap
at 11m press start
at 11m5s hold start 2s
"""

AFTER_RESTART = """duration 2m
at 1m press start
at 1m5s hold start 2s
"""


def fit_records(data: bytes):
    import io

    import fitdecode
    out = {}
    with fitdecode.FitReader(io.BytesIO(data), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as reader:
        for frame in reader:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record":
                ts = frame.get_value("timestamp")
                out[ts] = (frame.get_value("heart_rate", fallback=None), frame.get_value("power", fallback=None),
                           frame.get_value("cadence", fallback=None))
    return out


def test_sigkill_mid_ride_recovers_through_the_real_journal(bikesim, bikecomputer, tmp_path):
    """Crash drill with real processes: SIGKILL bikesim mid-ride on a data directory, start it
    again on the same directory, and compare the saved ride with an uninterrupted run of the
    same scenario: every sample older than one second at the kill is there, unchanged."""
    import signal
    import time as _time
    scenario = tmp_path / "ride.scenario"
    scenario.write_text(CRASH_RIDE)
    after = tmp_path / "after.scenario"
    after.write_text(AFTER_RESTART)
    data = tmp_path / "data"

    whole = run_headless(bikesim, tmp_path, "whole", "--scenario", str(scenario))
    whole_id = json.loads((whole / "summary.json").read_text())["ride_id"]
    reference = fit_records((whole / f"{whole_id}.fit").read_bytes())

    proc = subprocess.Popen([str(bikesim), "--headless", "--scenario", str(scenario), "--out", str(tmp_path / "a"),
                             "--data-dir", str(data), "--speed", "120", "--progress"], stdout=subprocess.PIPE)
    last_ms = 0
    deadline = _time.monotonic() + 60
    while _time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "bikesim ended before the kill"
        last_ms = int(line.split()[1])
        if last_ms >= 5 * 60_000:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert last_ms >= 5 * 60_000

    inspect = subprocess.run([str(bikecomputer), "journal", "inspect", str(data / "journal"), "--json"],
                             capture_output=True, text=True, check=True)
    assert whole_id in inspect.stdout, "the interrupted ride is in the journal"

    # The board's clock goes on while it is down: restart ten simulated seconds after the kill.
    wall_start = 1780729200 + (last_ms + 10_000) // 1000  # 2026-06-06T07:00:00Z + ...
    b = run_headless(bikesim, tmp_path, "b", "--scenario", str(after), "--data-dir", str(data),
                     "--wall-start", str(wall_start))
    summary = json.loads((b / "summary.json").read_text())
    assert summary["ride_id"] == whole_id, "the same ride continues after the restart"
    assert summary["recovered"] is True
    assert len(summary["laps"]) == 2, "the lap before the crash survives"

    recovered = fit_records((b / f"{whole_id}.fit").read_bytes())
    import datetime
    sim_start = datetime.datetime(2026, 6, 6, 7, tzinfo=datetime.timezone.utc)  # bikesim's default wall clock
    cutoff = sim_start + datetime.timedelta(milliseconds=last_ms - 1000)  # older than a second at the kill
    expected = {ts: v for ts, v in reference.items() if ts <= cutoff}
    assert len(expected) > 250
    missing = [ts for ts in expected if ts not in recovered]
    assert not missing, f"{len(missing)} samples lost before the last second, first {missing[:3]}"
    changed = [ts for ts, v in expected.items() if recovered[ts] != v]
    assert not changed, f"samples changed by recovery: {changed[:3]}"


FIXTURES = ["garmin-edge-500-activity.fit", "garmin-edge-820-bike.fit", "sample-activity-indoor-trainer.fit"]


def device_session(path):
    import fitdecode
    with fitdecode.FitReader(str(path), check_crc=fitdecode.CrcCheck.WARN) as reader:
        for frame in reader:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "session":
                return {f.name: f.value for f in frame.fields}
    raise AssertionError(f"{path.name} has no session")


@pytest.mark.parametrize("name", FIXTURES)
def test_replayed_fixture_ride_matches_the_recording_device(bikesim, shared, tmp_path, name):
    """Replay a real recorded ride through the app; its timer time, distance and heart-rate and
    power maxima match the recording device's within the tolerances documented in
    docs/simulator.md (the device's own rules differ on edges: see there)."""
    from garmin_fit_sdk import Decoder, Stream
    fit = shared / "fixtures" / "rides" / name
    out = tmp_path / "out"
    subprocess.run([str(bikesim), "--replay", str(fit), "--headless", "--out", str(out)], check=True,
                   capture_output=True, timeout=300)
    app = json.loads((out / "summary.json").read_text())
    dev = device_session(fit)
    assert abs(app["timer_time_s"] - dev["total_timer_time"]) <= 3.0, (app["timer_time_s"], dev["total_timer_time"])
    if dev.get("total_distance") and app["distance_m"] is not None:
        # The app counts the distance ridden between its own samples: what the device had counted
        # before its first record is not in the file to replay (34 m on the short Edge 820 ride).
        assert abs(app["distance_m"] - dev["total_distance"]) <= max(0.005 * dev["total_distance"], 40.0)
    if dev.get("max_heart_rate"):
        assert abs(app["max_hr_bpm"] - dev["max_heart_rate"]) <= 1
    if dev.get("max_power"):
        assert abs(app["max_power_w"] - dev["max_power"]) <= 1
    if dev.get("avg_heart_rate"):
        assert abs(app["avg_hr_bpm"] - dev["avg_heart_rate"]) <= 2
    laps = app["laps"]
    assert len(laps) >= 1
    app_fit = (out / f"{app['ride_id']}.fit").read_bytes()
    assert Decoder(Stream.from_byte_array(bytearray(app_fit))).check_integrity()
    messages, errors = Decoder(Stream.from_byte_array(bytearray(app_fit))).read()
    assert errors == []
    assert len(messages["record_mesgs"]) > 0


def test_markers_reach_the_fit_file(bikesim, tmp_path):
    """A water marker logged during the ride is a user_marker event in the FIT file, with its
    value and kind (docs/rides.md), as Garmin's decoder reads it."""
    from garmin_fit_sdk import Decoder, Stream
    out = run_headless(bikesim, tmp_path, "m", "--scenario", str(REPO / "Simulator" / "scenarios" / "faults.scenario"))
    ride_id = json.loads((out / "summary.json").read_text())["ride_id"]
    messages, errors = Decoder(Stream.from_byte_array(bytearray((out / f"{ride_id}.fit").read_bytes()))).read()
    assert errors == []
    markers = [e for e in messages["event_mesgs"] if e.get("event") == "user_marker"]
    assert len(markers) == 1
    assert markers[0]["event_type"] == "marker"
    assert markers[0]["data"] == 500 and markers[0]["event_group"] == 1  # water, 500 ml
