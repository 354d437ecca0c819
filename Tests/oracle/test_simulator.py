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
        os.execv(str(bikesim), [str(bikesim), "--speed", "4"])
    try:
        out = read_until(fd, b"? help", 20)
        assert b"\x1b[?25l" in out, "raw mode hides the cursor"
        os.write(fd, b"?")
        read_until(fd, b"long-press", 10)
        # The demo presses start at 5 s of ride time; at 4x the countdown (state "prepared")
        # comes after about 1.2 s and lasts about 0.75 s of wall time (at 20x it lasted 150 ms,
        # which a loaded machine's redraws could miss), then the ride runs.
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


def test_rides_show_prints_lap_and_interval_tables(bikesim, bikecomputer, tmp_path):
    """`rides show` prints the ride's laps (from its FIT laps) and its interval statistics
    (rebuilt through the app's statistics), states the averaging conventions, shows the moving
    time beside the timer time, and gives the same as JSON for charts."""
    data = tmp_path / "data"
    out = run_headless(bikesim, tmp_path, "out", "--data-dir", str(data))
    summary = json.loads((out / "summary.json").read_text())
    ride_id = summary["ride_id"]
    assert summary["averaging"] == {"cadence": "without_zeros", "power": "with_zeros"}
    assert 0 < summary["moving_time_s"] <= summary["timer_time_s"]
    text = subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--data-dir", str(data)],
                          check=True, capture_output=True, text=True).stdout
    assert "averages: cadence without zeros, power with zeros" in text
    assert "moving:" in text
    lines = text.splitlines()
    laps_at = lines.index("LAPS")
    lap_rows = lines[laps_at + 2:lines.index("", laps_at)]
    assert len(lap_rows) == len(summary["laps"])
    intervals_at = next(i for i, l in enumerate(lines) if l.startswith("INTERVALS"))
    interval_rows = [l for l in lines[intervals_at + 2:] if l.strip()]
    minutes = -(-summary["timer_time_s"] // 60)
    assert len(interval_rows) == minutes, (len(interval_rows), summary["timer_time_s"])
    doc = json.loads(subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--json", "--data-dir", str(data)],
                                    check=True, capture_output=True, text=True).stdout)
    assert doc["averaging"]["cadence"] == "without_zeros"
    assert len(doc["laps"]) == len(summary["laps"])
    buckets = doc["intervals"]["buckets"]
    assert len(buckets) == minutes
    assert [b["start_timer_s"] for b in buckets] == [60.0 * i for i in range(len(buckets))]
    # The buckets' time with heart-rate data adds up to the ride's, and their maxima to its maximum.
    assert abs(sum(b["heart_rate"]["data_s"] for b in buckets) - summary["timer_time_s"]) <= 2
    assert max(b["heart_rate"]["max"] for b in buckets if b["heart_rate"]["max"] is not None) == summary["max_hr_bpm"]
    assert abs(doc["session"]["moving_time_s"] - summary["moving_time_s"]) < 0.01


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

    # The board's clock goes on while it is down: restart 30 simulated seconds after the last
    # progress line. At 120x the simulator runs on between that line and the SIGKILL (3.5 s of
    # ride time at load 24 in one CI run), so the downtime the file shows is at least 10 s as long
    # as the kill lands within 20 simulated seconds (167 ms).
    wall_start = 1780729200 + (last_ms + 30_000) // 1000  # 2026-06-06T07:00:00Z + ...
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
    # The downtime is not timer time: the file's session and laps agree with its own timer events
    # (a stop where the device went down, a start when it came back).
    import io

    import fitdecode
    events, session, laps = [], None, []
    with fitdecode.FitReader(io.BytesIO((b / f"{whole_id}.fit").read_bytes())) as reader:
        for frame in reader:
            if not isinstance(frame, fitdecode.FitDataMessage):
                continue
            if frame.name == "event" and frame.get_value("event") == "timer":
                events.append((frame.get_value("timestamp"), frame.get_value("event_type")))
            elif frame.name == "session":
                session = frame
            elif frame.name == "lap":
                laps.append(frame)
    running_s, since = 0.0, None
    for ts, kind in events:
        if kind == "start" and since is None:
            since = ts
        elif kind in ("stop", "stop_all") and since is not None:
            running_s += (ts - since).total_seconds()
            since = None
    assert len(events) >= 4, "start, the stop where the device went down, the start after it, the end"
    assert abs(session.get_value("total_timer_time") - running_s) <= 2.0, (session.get_value("total_timer_time"), running_s)
    assert abs(sum(l.get_value("total_timer_time") for l in laps) - session.get_value("total_timer_time")) < 0.01
    assert session.get_value("total_elapsed_time") - session.get_value("total_timer_time") >= 10, "the downtime is elapsed time"


FIXTURES = ["garmin-edge-500-activity.fit", "garmin-edge-820-bike.fit", "sample-activity-indoor-trainer.fit"]

# How close a replay must come to the recording unit's own session, per field (absolute, in the
# field's unit), and why where it is not exact. Everything not listed must agree exactly (to the
# file's own resolution: 0.01 m, 0.001 m/s, 0.001 s, whole bpm/rpm/W for maxima).
EXACT = {"timer_time_s": 0.0015, "elapsed_time_s": 0.0015, "distance_m": 0.011, "avg_speed_mps": 0.0015,
         "max_speed_mps": 0.0015, "max_hr_bpm": 0, "max_cadence_rpm": 0, "max_power_w": 0,
         # the unit writes whole numbers: ours within half of one
         "avg_hr_bpm": 0.5, "avg_cadence_rpm": 0.5, "avg_power_w": 0.5, "normalized_power_w": 0.5}
WHY = {
    "subsecond": "the unit's timer is sub-second (64.524 s), its timer events whole seconds: the replay can only start and stop on them",
    "elapsed": "the unit's elapsed time runs from its session start_time to a sub-second end between its last two timer events",
    "own-average": "the unit averages its own data (sub-second or unrecorded); its records give 162.9 bpm",
    "smart": "sparse records: the unit averaged its 1 s data, the replay only has the records it wrote (held until the next)",
    "smart-max": "the unit's maximum came from 1 s data its sparse records do not hold",
}
TOLERANCE = {
    "garmin-edge-500-activity.fit": {"timer_time_s": (1.0, "subsecond"), "elapsed_time_s": (2.0, "elapsed"),
                                     "avg_hr_bpm": (1.0, "own-average"), "avg_cadence_rpm": (1.0, "own-average")},
    "garmin-edge-820-bike.fit": {"timer_time_s": (1.0, "subsecond"), "elapsed_time_s": (1.0, "subsecond"),
                                 "avg_speed_mps": (0.06, "subsecond"), "avg_hr_bpm": (1.0, "smart"),
                                 "max_cadence_rpm": (1.0, "smart-max")},
    "sample-activity-indoor-trainer.fit": {"timer_time_s": (1.5, "subsecond"), "elapsed_time_s": (1.5, "subsecond"),
                                           "avg_power_w": (1.0, "own-average"), "normalized_power_w": (1.0, "own-average")},
    "garmin-smart-recording-style.fit": {"avg_hr_bpm": (1.0, "smart"), "avg_cadence_rpm": (1.0, "smart"),
                                         "avg_power_w": (5.0, "smart"), "max_speed_mps": (1.0, "smart-max"),
                                         "max_cadence_rpm": (3, "smart-max"), "max_power_w": (30, "smart-max"),
                                         "max_hr_bpm": (3, "smart-max")},
}
# Lap distances (m): exact unless the records cannot tell in which lap a second's distance lies.
LAP_DISTANCE_TOLERANCE = {
    # laps 5-9 ended between two records; the lap message's timestamp is the next whole second,
    # so the increment of that second is in the next lap for the unit and in this one for the
    # replay (the first four laps and the ride's distance are exact)
    "garmin-edge-500-activity.fit": 15.0,
    # a lap boundary between two sparse records: the whole increment goes to one lap
    "garmin-smart-recording-style.fit": 40.0,
}


def replay(bikesim, fit_path, out):
    r = subprocess.run([str(bikesim), "--replay", str(fit_path), "--headless", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())


def check_replay(bikesim, name, fit_path, tmp_path, table):
    """Replays `fit_path` and checks every session figure the unit wrote against ours, and
    every lap's timer time and distance; appends the comparison to `table`."""
    from garmin_fit_sdk import Decoder, Stream
    import replay_compare as rc
    out = tmp_path / ("out-" + name)
    app = replay(bikesim, fit_path, out)
    sessions, laps = rc.unit_messages(fit_path.read_bytes())
    unit = rc.combined(sessions)
    own = TOLERANCE.get(name, {})
    problems = []
    if unit is None:
        table.append((name, "(no session message)", None, None, "nothing to compare; the ride was made"))
        assert app["timer_time_s"] > 0 and app["laps"]
    else:
        for field, ours, theirs in rc.compare(app, unit):
            tol, why = own.get(field, (EXACT[field], None))
            ok = ours is not None and abs(ours - theirs) <= tol + 1e-9
            if field.startswith("max_") and why == "smart-max":
                ok = ours is not None and theirs - tol <= ours <= theirs  # never above the unit's
            table.append((name, field, ours, theirs, WHY[why] if why else ""))
            if not ok:
                problems.append(f"{field}: ours {ours}, the unit's {theirs} (tolerance {tol})")
    assert len(app["laps"]) == len(laps), (len(app["laps"]), len(laps))
    lap_tol = own.get("timer_time_s", (0.0015, None))[0]
    for i, (a, u) in enumerate(zip(app["laps"], laps)):
        if abs(a["timer_time_s"] - u["total_timer_time"]) > lap_tol + 1e-9:
            problems.append(f"lap {i + 1} timer: ours {a['timer_time_s']}, the unit's {u['total_timer_time']}")
        if u.get("total_distance") and a["distance_m"] is not None:
            if abs(a["distance_m"] - u["total_distance"]) > LAP_DISTANCE_TOLERANCE.get(name, 0.011):
                problems.append(f"lap {i + 1} distance: ours {a['distance_m']}, the unit's {u['total_distance']}")
    app_fit = (out / f"{app['ride_id']}.fit").read_bytes()
    assert Decoder(Stream.from_byte_array(bytearray(app_fit))).check_integrity()
    messages, errors = Decoder(Stream.from_byte_array(bytearray(app_fit))).read()
    assert errors == []
    assert len(messages["record_mesgs"]) > 0
    # Our own file says what our summary says (timer time agrees with its timer events).
    assert abs(messages["session_mesgs"][0]["total_timer_time"] - app["timer_time_s"]) < 0.002
    return problems


@pytest.mark.parametrize("name", FIXTURES)
def test_replayed_fixture_ride_matches_the_recording_device(bikesim, shared, tmp_path, name):
    """Replay a real recorded ride through the app: every session figure its records allow
    reproducing (timer, elapsed, distance, averages and maxima, laps) agrees with the recording
    unit's own, within the tolerances above, each with its reason (docs/simulator.md)."""
    table = []
    problems = check_replay(bikesim, name, shared / "fixtures" / "rides" / name, tmp_path, table)
    for row in table:
        print(" | ".join("" if v is None else str(v) for v in row))
    assert not problems, problems


def fit_unit_names():
    import fit_units
    return [u[0] for u in fit_units.UNITS]


@pytest.mark.parametrize("name", fit_unit_names())
def test_replayed_unit_style_ride_matches_its_session(bikesim, tmp_path, name):
    """Rides written the way other makers' units write them (Tests/oracle/fit_units.py: Wahoo,
    Hammerhead, Garmin smart recording, Zwift, Bryton, Coros, a Strava export, a 6 h ride), each
    checked by fitdecode and fitparse first, replayed and compared with the session the unit
    computed from its one-second data."""
    import io

    import fitdecode
    import fitparse
    import fit_units
    data, _ = fit_units.build(name)
    with fitdecode.FitReader(io.BytesIO(data), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as reader:
        decoded = sum(1 for f in reader if isinstance(f, fitdecode.FitDataMessage) and f.name == "record")
    assert decoded == sum(1 for _ in fitparse.FitFile(data, check_crc=True).get_messages("record")) > 100
    path = tmp_path / name
    path.write_bytes(data)
    table = []
    problems = check_replay(bikesim, name, path, tmp_path, table)
    for row in table:
        print(" | ".join("" if v is None else str(v) for v in row))
    assert not problems, problems


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


def test_radar_ride_counts_vehicles_and_writes_radar_events(bikesim, bikecomputer, tmp_path):
    """The radar scenario (cars overtaking, the radar switched off while one passes): summary.json
    counts the vehicles and beeps (none for the car the switched-off radar missed), the FIT file
    has one radar_threat_alert event per arrival whose data components, as Garmin's decoder and
    fitdecode expand them, agree with the explicit fields, and `rides show` adds them up the same
    way (docs/rides.md)."""
    import io

    import fitdecode
    from garmin_fit_sdk import Decoder, Stream

    data = tmp_path / "data"
    out = run_headless(bikesim, tmp_path, "r", "--scenario", str(REPO / "Simulator" / "scenarios" / "radar.scenario"),
                       "--data-dir", str(data))
    summary = json.loads((out / "summary.json").read_text())
    # 7 cars in the scenario, one while the radar is off: 6 counted, each beeped for on its own.
    assert summary["radar"]["vehicles"] == 6
    assert summary["radar"]["alerts"] == 6
    assert summary["radar"]["max_threat"] == "fast_approach"
    ride_id = summary["ride_id"]
    fit = (out / f"{ride_id}.fit").read_bytes()

    messages, errors = Decoder(Stream.from_byte_array(bytearray(fit))).read()
    assert errors == []
    radar = [e for e in messages["event_mesgs"] if e.get("event") == "radar_threat_alert"]
    assert len(radar) == 6
    assert sum(e["event_group"] & 0x7F for e in radar) == summary["radar"]["vehicles"]
    assert sum(1 for e in radar if e["event_group"] & 0x80) == summary["radar"]["alerts"]
    levels = {e["radar_threat_level_max"] for e in radar}
    assert levels <= {"threat_approaching", "threat_approaching_fast"} and "threat_approaching_fast" in levels
    assert all(e["radar_threat_count"] >= 1 for e in radar)
    top = max(e["radar_threat_max_approach_speed"] for e in radar)
    assert abs(top - summary["radar"]["max_closing_speed_mps"]) < 0.051

    # fitdecode keeps the explicit fields and the ones expanded from data apart: they agree.
    with fitdecode.FitReader(io.BytesIO(fit), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as reader:
        for frame in reader:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "event" and frame.get_value("event") == "radar_threat_alert":
                by_name = {}
                for f in frame.fields:
                    by_name.setdefault(f.name, []).append(f.raw_value)
                for name in ("radar_threat_level_max", "radar_threat_count"):
                    assert len(by_name[name]) == 2 and by_name[name][0] == by_name[name][1], (name, by_name[name])

    text = subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--data-dir", str(data)],
                          check=True, capture_output=True, text=True).stdout
    assert "radar:    6 vehicles, 6 beeps, worst threat fast approach, fastest " in text, text
    doc = json.loads(subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--json", "--data-dir", str(data)],
                                    check=True, capture_output=True, text=True).stdout)
    assert doc["radar"]["vehicles"] == 6 and doc["radar"]["beeps"] == 6
    assert doc["radar"]["max_threat"] == "fast_approach"
    assert abs(doc["radar"]["max_approach_speed_mps"] - summary["radar"]["max_closing_speed_mps"]) < 0.051
