"""GPS through a real gpsd: the app's client, parser and fix rules (`bikecomputer gps`) against
Debian's gpsd fed with the recorded rides' own positions and with receiver logs nobody here
wrote (gpsd's regression logs from its Debian source package), plus a gpsd restart, a lost fix
and garbage from a fake gpsd. docs/gps.md describes the rules checked here.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import pathlib
import queue
import signal
import socket
import subprocess
import threading
import time

import pytest

import gps_nmea
import gpsd_rig
from gpsd_rig import FakeGpsd, free_port

ORACLE = pathlib.Path(__file__).resolve().parent
FEEDER = ORACLE / "gpsd_feed.py"
SYSTEM_PYTHON = "/usr/bin/python3"  # the one that sees python3-gps (gpsfake's library)

# gpsd's regression logs used here: one per chipset family and protocol.
RECEIVER_LOGS = ["bu303-moving", "bu353s4", "mtk-3301", "neo-m8n", "gr601-w", "garmin18x-bin", "quectel", "nmea-rtk"]


@pytest.fixture(scope="module", autouse=True)
def gpsd_installed():
    gpsd_rig.ensure_gpsd()  # raises (the test fails, naming the packages) when it cannot


class App:
    """`bikecomputer gps` following gpsd, its JSON lines read as they come."""

    def __init__(self, binary: pathlib.Path, port: int, extra: tuple[str, ...] = ()):
        self.proc = subprocess.Popen([str(binary), "gps", "--gpsd", f"127.0.0.1:{port}", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue = queue.Queue()
        self.all: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            obj = json.loads(line)
            self.all.append(obj)
            self.lines.put(obj)

    def wait_for(self, predicate, timeout_s: float = 20.0, what: str = "line"):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                obj = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if predicate(obj):
                return obj
        raise AssertionError(f"no {what} within {timeout_s} s; app said: {self.all[-10:]} {self.proc.stderr.read() if self.proc.poll() is not None else ''}")

    def settle(self, quiet_s: float, limit_s: float = 120.0) -> None:
        """Waits until the app has said nothing new for `quiet_s`: gpsd has handed on everything
        fed, but a loaded host (the suite in two workers beside a build) can leave the app
        seconds behind it, and stopping it then loses the reports still on their way."""
        deadline = time.monotonic() + limit_s
        seen = -1
        while len(self.all) != seen:
            assert time.monotonic() < deadline, f"the app still printing {limit_s} s after the feed ended ({len(self.all)} lines)"
            seen = len(self.all)
            time.sleep(quiet_s)

    def stop(self) -> dict:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        time.sleep(0.1)
        summary = [o for o in self.all if o.get("event") == "summary"]
        assert summary, f"no summary line: {self.all[-5:]} {self.proc.stderr.read()}"
        return summary[-1]

    def events(self, kind: str) -> list[dict]:
        return [o for o in self.all if o.get("event") == kind]


# Sentences fed before the test waits for the app to catch up (Feeder.feed with caught_up): about
# 200 of the Edge 500's epochs, well inside the socket buffers between gpsd and the app.
CHUNK_SENTENCES = 500


class Feeder:
    """A real gpsd on `port`, fed `log` through a pty once told to go."""

    def __init__(self, log: pathlib.Path, port: int, cycle_s: float):
        self.proc = subprocess.Popen([SYSTEM_PYTHON, str(FEEDER), str(port), str(cycle_s), str(log)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening"), f"gpsd did not start: {line!r} {self.proc.stderr.read()[-2000:]}"

    def _say(self, command: str, timeout_s: float) -> list[str]:
        """Sends a command; its "fed N [done]" answer, split."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        result: list[str] = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout_s)
        assert result and result[0].startswith("fed"), f"feeding did not finish: {result} {self.proc.stderr.read()[-2000:] if self.proc.poll() is not None else ''}"
        return result[0].split()

    def feed(self, timeout_s: float = 300, caught_up=None, chunk: int = CHUNK_SENTENCES) -> int:
        """Feeds the whole log: at once, or with `caught_up` (a function that waits until the app
        has taken what it was fed), `chunk` sentences at a time with that wait in between."""
        if caught_up is None:
            return int(self._say("go", timeout_s)[1])
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._say(f"feed {chunk}", max(1.0, deadline - time.monotonic()))
            if answer[-1] == "done":
                return int(answer[1])
            caught_up()
            assert time.monotonic() < deadline, f"feeding did not finish within {timeout_s} s ({answer[1]} fed)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)


def follow(bikecomputer, log: pathlib.Path, cycle_s: float = 0.0, settle_s: float = 1.0) -> tuple[App, dict]:
    """Runs gpsd with `log` and the app watching it; returns the app and its summary."""
    port = free_port()
    feeder = Feeder(log, port, cycle_s)
    app = App(bikecomputer, port)
    try:
        app.wait_for(lambda o: o.get("event") == "connected", what="connection to gpsd")
        time.sleep(0.3)  # the WATCH is in effect
        feeder.feed(caught_up=lambda: app.settle(0.1))
        app.settle(settle_s)
        return app, app.stop()
    finally:
        if app.proc.poll() is None:
            app.proc.kill()
        feeder.stop()


def geodesic_m(lat1, lon1, lat2, lon2) -> float:
    """Vincenty's inverse formula on WGS 84 (an independent distance for the checks)."""
    a, f = 6378137.0, 1 / 298.257223563
    b = (1 - f) * a
    L = math.radians(lon2 - lon1)
    U1, U2 = math.atan((1 - f) * math.tan(math.radians(lat1))), math.atan((1 - f) * math.tan(math.radians(lat2)))
    sinU1, cosU1, sinU2, cosU2 = math.sin(U1), math.cos(U1), math.sin(U2), math.cos(U2)
    lam = L
    for _ in range(200):
        sinl, cosl = math.sin(lam), math.cos(lam)
        sins = math.hypot(cosU2 * sinl, cosU1 * sinU2 - sinU1 * cosU2 * cosl)
        if sins == 0:
            return 0.0
        coss = sinU1 * sinU2 + cosU1 * cosU2 * cosl
        sigma = math.atan2(sins, coss)
        sina = cosU1 * cosU2 * sinl / sins
        cos2a = 1 - sina * sina
        cos2sm = coss - 2 * sinU1 * sinU2 / cos2a if cos2a else 0.0
        C = f / 16 * cos2a * (4 + f * (4 - 3 * cos2a))
        prev, lam = lam, L + (1 - C) * f * sina * (sigma + C * sins * (cos2sm + C * coss * (-1 + 2 * cos2sm * cos2sm)))
        if abs(lam - prev) < 1e-12:
            break
    u2 = cos2a * (a * a - b * b) / (b * b)
    A = 1 + u2 / 16384 * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)))
    B = u2 / 1024 * (256 + u2 * (-128 + u2 * (74 - 47 * u2)))
    ds = B * sins * (cos2sm + B / 4 * (coss * (-1 + 2 * cos2sm ** 2) - B / 6 * cos2sm * (-3 + 4 * sins ** 2) * (-3 + 4 * cos2sm ** 2)))
    return b * A * (sigma - ds)


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def time_ms(text: str) -> int:
    """Unix ms of gpsd's ISO 8601 time (fraction truncated to ms, as the app does)."""
    whole, _, frac = text.rstrip("Z").partition(".")
    base = dt.datetime.fromisoformat(whole + "+00:00")
    return int(base.timestamp()) * 1000 + int((frac + "000")[:3])


# ------------------------------------------------------------------------------ recorded rides

@pytest.mark.parametrize("ride,device_distance_m,tolerance", [
    # The Edge 820's 15 records are up to 9 s apart; its distance is 6.95 m at the first record.
    ("garmin-edge-820-bike.fit", 457.12 - 6.95, 0.01),
    ("garmin-edge-500-activity.fit", 92622.34, 0.005),
])
def test_recorded_ride_through_gpsd(bikecomputer, shared, tmp_path, ride, device_distance_m, tolerance):
    """The recording device's own positions, as NMEA through gpsd: every fix is the device's
    position (to NMEA's 0.000001' = 2 mm), none is lost or rejected, and the GPS distance is
    within the tolerance of the device's own (goal for a whole ride: 0.5 %)."""
    epochs = gps_nmea.epochs_from_fit(shared / "fixtures" / "rides" / ride)
    log = tmp_path / "ride.log"
    shift = gps_nmea.write_log(epochs, log, ride)
    app, summary = follow(bikecomputer, log)
    fixes = app.events("fix")
    expected = {e.time + shift: e for e in epochs if e.has_fix}
    assert summary["fixes"] == len(expected), summary
    assert summary["bad_reports"] == 0 and summary["rejected"]["impossible jump"] == 0, summary
    seen = set()
    for fx in fixes:
        t = dt.datetime.fromtimestamp(fx["time_ms"] / 1000, dt.timezone.utc)
        e = expected.get(t)
        assert e is not None, f"a fix at {t} that the ride does not have"
        assert geodesic_m(e.lat, e.lon, fx["lat"], fx["lon"]) < 0.05, (fx, e)
        seen.add(t)
    assert seen == set(expected), f"{len(set(expected) - seen)} positions missing"
    ours = summary["distance_m"]
    error = (ours - device_distance_m) / device_distance_m
    print(f"{ride}: GPS distance {ours:.1f} m, device {device_distance_m:.1f} m, {error * 100:+.3f} %")
    assert abs(error) < tolerance, f"GPS distance {ours} m vs the device's {device_distance_m} m ({error * 100:+.2f} %)"


# ------------------------------------------------------------------ receivers nobody here wrote

@pytest.fixture(scope="module")
def gpsd_logs() -> pathlib.Path:
    return gpsd_rig.regression_logs()


def chk_reports(chk: pathlib.Path) -> list[dict]:
    out = []
    for line in chk.read_text(errors="replace").splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.mark.parametrize("name", RECEIVER_LOGS)
def test_receiver_logs_from_gpsds_source(bikecomputer, gpsd_logs, name):
    """gpsd's own regression log of a real receiver, through gpsd: every fix the app takes is a
    TPV gpsd's expected output (.chk) has at that time, at the same place; the fix rules, worked
    out here from the .chk's TPVs, accept exactly the times the app accepted."""
    log = gpsd_logs / f"{name}.log"
    expected = [r for r in chk_reports(gpsd_logs / f"{name}.log.chk") if r.get("class") == "TPV"]
    app, summary = follow(bikecomputer, log, cycle_s=0.002)
    fixes = app.events("fix")
    by_ms: dict[int, list[dict]] = {}
    for r in expected:
        if "time" in r:
            by_ms.setdefault(time_ms(r["time"]), []).append(r)
    for fx in fixes:
        candidates = by_ms.get(fx["time_ms"], [])
        assert candidates, f"{name}: a fix at {fx['time']} that gpsd's expected output does not have"
        assert any(abs(r["lat"] - fx["lat"]) < 1e-8 and abs(r["lon"] - fx["lon"]) < 1e-8 for r in candidates if "lat" in r), \
            f"{name}: fix {fx} is not where gpsd put it: {candidates[:2]}"
    # The rules, independently: mode 2/3 with a position and a time, eph (or the epx/epy
    # combination) at most 50 m, a time after the last accepted, no jump faster than 50 m/s.
    accepted, last = [], None
    for r in expected:
        if r.get("mode", 0) < 2 or "lat" not in r or "lon" not in r or "time" not in r:
            continue
        eph = r.get("eph", math.hypot(r["epx"], r["epy"]) if "epx" in r and "epy" in r else None)
        if eph is not None and eph > 50:
            continue
        t = time_ms(r["time"])
        if last is not None and t <= last[0]:
            continue
        if last is not None and geodesic_m(last[1], last[2], r["lat"], r["lon"]) > 50 * (t - last[0]) / 1000:
            continue
        accepted.append(t)
        last = (t, r["lat"], r["lon"])
    ours = sorted({f["time_ms"] for f in fixes})
    assert ours == accepted, f"{name}: app took {len(ours)} fixes, the rules take {len(accepted)}: " \
                             f"only app {sorted(set(ours) - set(accepted))[:3]}, only rules {sorted(set(accepted) - set(ours))[:3]}"
    print(f"{name}: {len(ours)} fixes, summary {summary}")
    if name != "mtk-3301":  # an indoor log: every fix has eph > 50 m, so none counts
        assert ours, f"{name}: no fix at all ({summary})"


def test_every_report_of_gpsds_expected_output_parses_as_python_reads_it(bikecomputer, gpsd_logs):
    """Every JSON line of every .chk file in gpsd's test suite (real gpsd output from many
    receivers) through `bikecomputer gps --parse`, compared field by field with Python's json."""
    lines = []
    for chk in sorted(gpsd_logs.glob("*.chk")):
        lines += [line for line in chk.read_text(errors="replace").splitlines() if line.startswith("{")]
    assert len(lines) > 5_000, f"only {len(lines)} report lines in gpsd's test suite"
    r = subprocess.run([str(bikecomputer), "gps", "--parse"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=120)
    ours = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(ours) == len(lines)
    compared = {"TPV": 0, "SKY": 0}
    for text, got in zip(lines, ours):
        ref = json.loads(text)
        cls = ref.get("class")
        if "error" in got:
            # What the app refuses must be outside its ranges (gpsd's suite has e.g. a test of
            # the 2038 rollover and binary-decoding corner cases): check the reason is real.
            assert cls in ("TPV", "SKY"), f"{got['error']}: {text[:200]}"
            assert "absurd" in got["error"], f"{got['error']}: {text[:200]}"
            continue
        if cls == "TPV":
            compared["TPV"] += 1
            assert got["mode"] == ref.get("mode", 0), text
            for key, ours_key in (("lat", "lat"), ("lon", "lon"), ("speed", "speed"), ("track", "track"), ("epv", "epv")):
                if key in ref:
                    assert abs(got[ours_key] - ref[key]) <= 1e-9 * max(1, abs(ref[key])) + 5e-5, (key, text)
                else:
                    assert got[ours_key] is None, (key, text)
            alt = ref.get("altMSL", ref.get("alt"))
            assert (got["alt_msl"] is None) == (alt is None) and (alt is None or abs(got["alt_msl"] - alt) < 5e-5), text
            eph = ref.get("eph", math.hypot(ref["epx"], ref["epy"]) if "epx" in ref and "epy" in ref else None)
            assert (got["eph"] is None) == (eph is None) and (eph is None or abs(got["eph"] - eph) < 5e-4), text
            if "time" in ref:
                want = time_ms(ref["time"]) if isinstance(ref["time"], str) else round(ref["time"] * 1000)
                assert got["time_ms"] == want, text
        elif cls == "SKY":
            compared["SKY"] += 1
            used = ref.get("uSat", sum(1 for s in ref.get("satellites", []) if s.get("used")) if "satellites" in ref else None)
            seen = ref.get("nSat", len(ref["satellites"]) if "satellites" in ref else None)
            assert got["satellites_used"] == used and got["satellites_visible"] == seen, text
        else:
            assert got["class"] in ("VERSION", "DEVICES", "DEVICE", "WATCH", "ERROR", "other"), text
    assert compared["TPV"] > 2_000 and compared["SKY"] > 500, compared


# --------------------------------------------------------------------------- faults on the way

def test_gpsd_restart_is_survived(bikecomputer, shared, tmp_path):
    """gpsd dies mid-ride and a new one starts on the same port: the app says so, reconnects,
    takes the new fixes, and the distance carries on."""
    epochs = gps_nmea.epochs_from_fit(shared / "fixtures" / "rides" / "garmin-edge-500-activity.fit", limit=400)
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    gps_nmea.write_log(epochs[:200], first, "first half")
    gps_nmea.write_log(epochs[200:], second, "second half")
    port = free_port()
    app = App(bikecomputer, port)
    try:
        feeder = Feeder(first, port, 0.0)
        app.wait_for(lambda o: o.get("event") == "connected", what="first connection")
        time.sleep(0.3)
        feeder.feed()
        time.sleep(0.5)
        feeder.stop()  # gpsd goes away
        app.wait_for(lambda o: o.get("event") == "disconnected", what="disconnection")
        app.wait_for(lambda o: o.get("event") == "status" and o.get("mode") == "--", what="status: no GPS")
        feeder = Feeder(second, port, 0.0)
        app.wait_for(lambda o: o.get("event") == "connected", timeout_s=15, what="reconnection")
        time.sleep(0.3)
        feeder.feed()
        time.sleep(0.5)
        summary = app.stop()
        feeder.stop()
    finally:
        if app.proc.poll() is None:
            app.proc.kill()
    with_fix = [e for e in epochs if e.has_fix]
    assert summary["connects"] == 2 and summary["disconnects"] == 1, summary
    assert summary["fixes"] == len(with_fix), summary
    device = epochs[-1]
    expected = sum(geodesic_m(a.lat, a.lon, b.lat, b.lon) for a, b in zip(with_fix, with_fix[1:])
                   if (b.speed_mps or 0) >= 0.5)
    assert abs(summary["distance_m"] - expected) < 0.01 * expected + 1, (summary["distance_m"], expected, device)


def test_lost_fix_shows_no_fix_then_comes_back(bikecomputer, shared, tmp_path):
    """Ten epochs without a fix in the middle: the app reports NO FIX at once (the receiver says
    so), takes no position meanwhile, and 3D again after."""
    epochs = gps_nmea.epochs_from_fit(shared / "fixtures" / "rides" / "garmin-edge-500-activity.fit", limit=120)
    log = tmp_path / "lost.log"
    shift = gps_nmea.write_log(epochs, log, "lost fix", lose=range(50, 60))
    app, summary = follow(bikecomputer, log)
    modes = [o["mode"] for o in app.events("status")]
    assert "NO FIX" in modes and modes[-1] == "3D", modes
    i = modes.index("NO FIX")
    assert "3D" in modes[:i] and "3D" in modes[i:], modes
    lost_times = {epochs[k].time + shift for k in range(50, 60)}
    assert not [f for f in app.events("fix") if dt.datetime.fromtimestamp(f["time_ms"] / 1000, dt.timezone.utc) in lost_times]
    assert summary["fixes_lost"] >= 1 and summary["fixes"] == len([e for e in epochs if e.has_fix]) - 10, summary



def test_gpsfake_command_line_feeds_the_app(bikecomputer, shared, tmp_path):
    """Debian's `gpsfake` command itself, as a gpsd user runs it (issue 19 asks for it): `gpsfake
    -n -c 0.02 -P PORT LOG` starts gpsd reading the pty at once (-n) and feeds the ride's NMEA
    log round and round (400 epochs: 40 s a round), one sentence every 20 ms (an epoch every 0.1
    s). Sentences that go by
    before the app's WATCH are simply missed and the next round brings them again, so the
    feeder's hand-shake (gpsd_feed.py) is not needed here. Every fix the app takes is the
    ride's own position at that time; the app's clock rules refuse the replay's time, which
    runs ten times faster than the device's clock (docs/gps.md, "The wall clock")."""
    epochs = gps_nmea.epochs_from_fit(shared / "fixtures" / "rides" / "garmin-edge-500-activity.fit", limit=400)
    log = tmp_path / "gpsfake.log"
    shift = gps_nmea.write_log(epochs, log, "gpsfake")
    expected = {e.time + shift: e for e in epochs if e.has_fix}
    port = free_port()
    fake = subprocess.Popen(["gpsfake", "-n", "-q", "-c", "0.02", "-P", str(port), str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    app = App(bikecomputer, port)
    try:
        app.wait_for(lambda o: o.get("event") == "connected", what="connection to gpsfake's gpsd")
        for _ in range(30):
            app.wait_for(lambda o: o.get("event") == "fix", what="a fix from gpsfake")
        summary = app.stop()
    finally:
        if app.proc.poll() is None:
            app.proc.kill()
        os.killpg(fake.pid, signal.SIGTERM)  # gpsfake and the gpsd it started
        fake.wait(timeout=10)
    fixes = app.events("fix")
    assert len(fixes) >= 30, summary
    for fx in fixes:
        e = expected.get(dt.datetime.fromtimestamp(fx["time_ms"] / 1000, dt.timezone.utc))
        assert e is not None, f"a fix at {fx['time_ms']} that the ride does not have"
        assert geodesic_m(e.lat, e.lon, fx["lat"], fx["lon"]) < 0.05, (fx, e)
    assert summary["bad_reports"] == 0, summary
    assert summary["clock_times"] == 0 and summary["clock_rejected"]["GPS time jumped against the device's clock"] > 20, summary


def test_garbage_from_gpsd_is_counted_and_logged(bikecomputer):
    """A fake gpsd sends truncated JSON, unknown classes, absurd values, a line longer than the
    buffer and plain text between good reports: each is counted by kind and logged; the good
    reports still make fixes."""
    def tpv(s: int, lat: float = 52.0) -> bytes:
        return json.dumps({"class": "TPV", "mode": 3, "time": f"2025-06-01T10:00:{s:02d}.000Z", "lat": lat + s * 1e-4,
                           "lon": 5.0, "altMSL": 10.0, "speed": 11.0, "eph": 5.0, "epv": 8.0}).encode() + b"\r\n"
    lines = [b'{"class":"VERSION","release":"3.22","proto_major":3,"proto_minor":14}\r\n',
             b'{"class":"WATCH","enable":true,"json":true}\r\n',
             tpv(1),
             b'{"class":"TPV","mode":3,"time":"2025-06-01T10:00:02.000Z","lat":52.0\r\n',  # truncated
             tpv(2),
             b'{"class":"ATT","heading":10.0}\r\n',  # a class the app does not read
             b'{"class":"TPV","mode":3,"time":"2025-06-01T10:00:03.000Z","lat":123.0,"lon":5.0}\r\n',  # absurd
             tpv(3),
             b'{"class":"TPV","mode":3,"speed":-4.0}\r\n',  # absurd
             b'this is not json\r\n',
             b'{"class":"SKY","satellites":[' + b'{"PRN":1,"used":true},' * 2000 + b'{"PRN":2}]}\r\n',  # 44 kB
             tpv(4),
             b'{"class":"TPV","mode":3,"time":"2025-06-01T10:00:05.000Z","lat":53.0,"lon":5.0,"speed":11.0}\r\n',  # 100 km jump
             tpv(5)]
    port = free_port()
    fake = FakeGpsd(port, lines)
    app = App(bikecomputer, port)
    try:
        app.wait_for(lambda o: o.get("event") == "fix" and o["time"] == "2025-06-01T10:00:05Z", what="the last fix")
        time.sleep(0.3)
        summary = app.stop()
    finally:
        if app.proc.poll() is None:
            app.proc.kill()
        fake.stop()
    assert fake.watch_commands and fake.watch_commands[0].startswith(b'?WATCH={"enable":true,"json":true};'), fake.watch_commands
    assert summary["fixes"] == 5, summary
    assert summary["bad_reports"] == 4, summary          # truncated, two absurd, plain text
    assert summary["ignored_reports"] == 1, summary      # ATT
    assert summary["lines_too_long"] == 1, summary
    assert summary["rejected"]["impossible jump"] == 1, summary
    problems = " | ".join(p["problem"] for p in app.events("problem"))
    for words in ("truncated JSON", "absurd or mistyped lat", "absurd or mistyped speed", "not a JSON object",
                  "longer than the buffer", "impossible jump", "does not read"):
        assert words in problems, f"{words!r} not logged: {problems}"


# --------------------------------------------------------------------------- the whole app

def test_a_ride_through_gpsd_in_bikecomputer_run(bikecomputer, shared, tmp_path):
    """`bikecomputer run` with `[gps]` on, following a real gpsd fed the Edge 500 ride's own
    positions (far faster than real time). The first minute is fed before the ride starts (the
    GPS has a fix when the rider presses start); then gpsd is restarted with the rest while the
    ride runs. The saved FIT's distance is the GPS distance from there on, within 0.5 % of the
    device's own over the same stretch; its positions are the device's; `ctl status` shows the
    GPS, and the app reconnected to the new gpsd."""
    import os
    import fitdecode
    from test_run import App, write_config

    fixture = shared / "fixtures" / "rides" / "garmin-edge-500-activity.fit"
    run_dir = pathlib.Path(f"/tmp/bcgps-{os.getpid()}-{time.monotonic_ns() % 10**9}")
    run_dir.mkdir()
    epochs = gps_nmea.epochs_from_fit(fixture)
    head = 60
    first_log, rest_log = tmp_path / "first.log", tmp_path / "rest.log"
    gps_nmea.write_log(epochs[:head], first_log, "Edge 500, the first minute")
    gps_nmea.write_log(epochs[head:], rest_log, "Edge 500, the rest")
    # The device's distance over the same stretch: from the last fed epoch before the start.
    device_distance = {}
    with fitdecode.FitReader(str(fixture)) as fr:
        for f in fr:
            if isinstance(f, fitdecode.FitDataMessage) and f.name == "record" and f.get_value("distance") is not None:
                device_distance[f.get_value("timestamp")] = f.get_value("distance")
    from_m = device_distance[epochs[head - 1].time]
    device_stretch = 92622.34 - from_m
    port = free_port()
    cfg = write_config(run_dir, extra=f'\n[gps]\nenabled = true\ngpsd = "127.0.0.1:{port}"\n')
    feeder = Feeder(first_log, port, 0.0)
    app = App(bikecomputer, run_dir, cfg)
    try:
        app.wait_for(lambda s: s.get("gps", {}).get("state", "").startswith("ok"), timeout=15, what="the GPS connected to gpsd")
        feeder.feed()
        app.wait_for(lambda s: s["gps"]["fixes"] >= head - 2 and s["gps"]["fix"] == "3D", timeout=15, what="the first minute's fixes")
        feeder.stop()  # gpsd goes away ...
        assert app.ctl("start").startswith("prepared")
        app.wait_for(lambda s: s["state"] == "running", timeout=10, what="the ride running")
        feeder = Feeder(rest_log, port, 0.0)  # ... and a new one starts
        app.wait_for(lambda s: s["gps"]["connects"] == 2, timeout=15, what="the app reconnected to the new gpsd")

        def caught_up(limit_s: float = 60.0) -> None:
            """The app's fix count stopped growing (it took what gpsd was fed)."""
            deadline, seen = time.monotonic() + limit_s, -1
            while (n := app.status()["gps"]["fixes"]) != seen:
                assert time.monotonic() < deadline, f"the app still taking fixes {limit_s} s after a chunk ({n})"
                seen = n
                time.sleep(0.15)

        feeder.feed(caught_up=caught_up)
        status = app.wait_for(lambda s: s["gps"]["fixes"] >= len([e for e in epochs if e.has_fix]) - 3, timeout=30,
                              what="every fix taken")
        assert status["gps"]["fix"] == "3D" and status["gps"]["bad_reports"] == 0, status["gps"]
        assert {s["role"]: s["state"] for s in status["sensors"]}.get("GPS") == "connected", status["sensors"]
        time.sleep(2.5)
        app.ctl("end")
        # RIDE SAVED: the file's fsyncs run in the background after the end (issue 17 item 6).
        app.wait_for(lambda s: s["state"] in ("ended", "idle") and s["ride_files"]["written"] >= 1, timeout=20,
                     what="the ride ended and its file saved")
    finally:
        app.terminate()
        feeder.stop()
    fits = sorted((run_dir / "data").rglob("*.fit"))
    assert fits, f"no ride file in {run_dir / 'data'}: {app.stderr()[-2000:]}"
    records, session = [], None
    with fitdecode.FitReader(str(fits[-1])) as fr:
        for f in fr:
            if isinstance(f, fitdecode.FitDataMessage):
                if f.name == "record":
                    records.append(f)
                elif f.name == "session":
                    session = f
    distance = session.get_value("total_distance")
    error = (distance - device_stretch) / device_stretch
    print(f"bikecomputer run through gpsd: distance {distance:.1f} m vs the device's {device_stretch:.1f} m over the same "
          f"stretch ({error * 100:+.3f} %), {len(records)} records")
    assert abs(error) < 0.005, f"{distance} m vs {device_stretch} m"
    device = {(round(e.lat * 2**31 / 180), round(e.lon * 2**31 / 180)) for e in epochs if e.has_fix}
    positioned = [(r.get_value("position_lat"), r.get_value("position_long")) for r in records
                  if r.has_field("position_lat") and r.get_value("position_lat") is not None]
    assert positioned, "no position in the ride file"
    near = sum(1 for p in positioned if any(abs(p[0] - d[0]) <= 2 and abs(p[1] - d[1]) <= 2 for d in device))
    assert near == len(positioned), f"{len(positioned) - near} positions not the device's"
    import shutil
    shutil.rmtree(run_dir, ignore_errors=True)


class PacedGpsd(threading.Thread):
    """A gpsd stand-in that sends a TPV (and every fifth a SKY) every `period_s` to its client,
    riding north at 8 m/s: a receiver at any report rate."""

    def __init__(self, port: int, period_s: float):
        super().__init__(daemon=True)
        self.period_s = period_s
        self.lines_sent = 0
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(2)
        self.stopped = threading.Event()

    def run(self) -> None:
        conn, _ = self.server.accept()
        conn.recv(4096)
        # GPS time and place advance with the wall clock (a receiver reporting at this rate).
        t0 = dt.datetime(2026, 6, 6, 7, 0, tzinfo=dt.timezone.utc)
        started = time.monotonic()
        k = 0
        while not self.stopped.is_set():
            elapsed = time.monotonic() - started
            t = (t0 + dt.timedelta(seconds=elapsed)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            lat = 46 + elapsed * 8 / 111_200
            line = (f'{{"class":"TPV","device":"/dev/serial0","mode":3,"time":"{t}","lat":{lat:.9f},"lon":7.0,'
                    f'"altMSL":{400 + (k % 40) * 0.1:.1f},"speed":8.0,"track":0.0,"eph":8.0,"epv":14.0}}\r\n')
            if k % 5 == 0:
                line += f'{{"class":"SKY","device":"/dev/serial0","time":"{t}","nSat":12,"uSat":9}}\r\n'
            try:
                conn.sendall(line.encode())
            except OSError:
                return
            self.lines_sent += 1
            k += 1
            time.sleep(self.period_s)

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()


def test_no_heap_allocation_per_gps_report(bikecomputer):
    """The real `bikecomputer run` (release) following gpsd at 2 and then 8 reports a second
    (all of them go on to the ride: 125 ms apart), with a malloc counter interposed: what the
    faster windows cost beyond the slower ones is the reports' own cost, and it is zero."""
    import os
    import re
    import signal
    from test_run import write_config
    from test_run_alloc import build_counter, optimized_binary

    binary = optimized_binary(bikecomputer)
    run_dir = pathlib.Path(f"/tmp/bcgpsa-{os.getpid()}-{time.monotonic_ns() % 10**9}")
    run_dir.mkdir()
    lib = build_counter(run_dir)
    port = free_port()
    cfg = write_config(run_dir, extra=f'\n[gps]\nenabled = true\ngpsd = "127.0.0.1:{port}"\n')
    text = cfg.read_text()
    cfg.write_text(text[:text.index("[[sensor]]")] + text[text.index("[gps]"):])
    gpsd = PacedGpsd(port, 0.5)
    gpsd.start()
    err_path = run_dir / "stderr.log"
    err = open(err_path, "w")
    proc = subprocess.Popen([str(binary), "run", "--no-buttons", "--no-display", "--data-dir", str(run_dir / "data"),
                             "--config", str(cfg), "--ride-active-file", str(run_dir / "ride-active")],
                            stderr=err, stdout=subprocess.DEVNULL, env=dict(os.environ, LD_PRELOAD=str(lib)))
    control = run_dir / "control.sock"

    def count():
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        err.flush()
        return int(re.findall(r"MALLOC_COUNT=(\d+)", err_path.read_text())[-1]), gpsd.lines_sent

    try:
        for _ in range(400):
            if control.exists():
                break
            time.sleep(0.05)
        subprocess.run([str(binary), "ctl", "--socket", str(control), "start"], capture_output=True, timeout=10)
        time.sleep(6)
        windows = []
        for period in (0.5, 0.125, 0.5, 0.125):
            gpsd.period_s = period
            time.sleep(1.0)
            c0, l0 = count()
            time.sleep(8)
            c1, l1 = count()
            windows.append((period, c1 - c0, l1 - l0))
    finally:
        gpsd.stop()
        proc.kill()
        proc.wait(timeout=10)
        err.close()
    slow = [w for w in windows if w[0] == 0.5]
    fast = [w for w in windows if w[0] != 0.5]
    extra_allocs = sum(w[1] for w in fast) - sum(w[1] for w in slow)
    extra_lines = sum(w[2] for w in fast) - sum(w[2] for w in slow)
    print(f"GPS reports: {windows}; {extra_allocs} allocations over {extra_lines} extra reports")
    assert extra_lines > 80, windows
    assert extra_allocs / extra_lines < 0.05, f"{extra_allocs} allocations over {extra_lines} reports: {windows}"
    import shutil
    shutil.rmtree(run_dir, ignore_errors=True)
