"""A ride that followed a course, in its FIT file, read by every independent decoder (issue 28).

The Garmin Edge 500's recorded ride (../shared/fixtures/rides) is replayed along a course made
from its own track (every recorded position, as a GPX track written here) in which two stretches
are moved 300 m sideways: the rider, riding the recorded track, leaves the course at each and
rejoins it after. `bikesim --replay RIDE.fit --course FILE --headless` must then:

- say in `summary.json` (`navigation`) exactly two off-course periods, one for each detour, each
  starting after the rider reached the detour and alarming within 10 s of leaving the course at
  riding speed (no false alarm anywhere else on 92 km of a course the ride followed);
- write an activity FIT that fitdecode, fitparse and the Garmin FIT SDK all read without errors
  (CRC checked), in which all three see the `course` message (global 31) with the course's name
  and the same `off_course` events (event 7: start with data 0, or 1 for wrong way; stop with the
  farthest distance in whole metres) at the same whole seconds, matching the summary's periods;
- and `bikecomputer rides show` (text and --json) says the same course and periods.
"""
import datetime
import io
import json
import subprocess
from xml.sax.saxutils import escape as xml_escape

import fitdecode
import fitparse
import pytest
from garmin_fit_sdk import Decoder, Stream
from geographiclib.geodesic import Geodesic

RIDE = "garmin-edge-500-activity.fit"
SEMI = 180.0 / 2**31
# The stretches of the recorded track (distance along it, m) moved sideways in the course.
DETOURS = [(20_000.0, 21_500.0), (60_000.0, 61_000.0)]
SHIFT_M = 300.0
COURSE_NAME = "Edge 500 with two detours"


def recorded(fit_path):
    """The ride's positioned records: (seconds from its first timer start, lat, lon, distance m)."""
    f = fitparse.FitFile(str(fit_path))
    start = next(e.get_value("timestamp") for e in f.get_messages("event")
                 if e.get_value("event") == "timer" and e.get_value("event_type") == "start")
    out = []
    for r in f.get_messages("record"):
        v = r.get_values()
        if v.get("position_lat") is None or v.get("position_long") is None or v.get("distance") is None:
            continue
        out.append(((v["timestamp"] - start).total_seconds(), v["position_lat"] * SEMI, v["position_long"] * SEMI, v["distance"]))
    return out


def course_with_detours(points, detours=DETOURS, name=COURSE_NAME):
    """A GPX track of every recorded position ((t, lat, lon, distance m)), each detour's stretch
    (distances along the track, m) moved SHIFT_M to the left of its chord (so the rider on the
    recorded track is SHIFT_M from it). No detours: the ride's own track as its course.
    (Tests/oracle/nav_alarm_table.py makes its courses with it too.)"""
    g = Geodesic.WGS84
    out = []
    for lo, hi in detours:
        a = min(points, key=lambda p: abs(p[3] - lo))
        b = min(points, key=lambda p: abs(p[3] - hi))
        chord = g.Inverse(a[1], a[2], b[1], b[2])["azi1"]
        out.append((lo, hi, chord - 90.0))
    pts = []
    for _, lat, lon, d in points:
        for lo, hi, azi in out:
            if lo <= d <= hi:
                moved = g.Direct(lat, lon, azi, SHIFT_M)
                lat, lon = moved["lat2"], moved["lon2"]
        pts.append(f'<trkpt lat="{lat:.7f}" lon="{lon:.7f}"/>')
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<gpx version="1.1" creator="test_course_ride_fit">'
            f"<trk><name>{xml_escape(name)}</name><trkseg>" + "".join(pts) + "</trkseg></trk></gpx>\n")


@pytest.fixture(scope="module")
def ride(bikesim, shared, tmp_path_factory):
    fit_path = shared / "fixtures" / "rides" / RIDE
    points = recorded(fit_path)
    d = tmp_path_factory.mktemp("course-ride")
    course = d / "detours.gpx"
    course.write_text(course_with_detours(points))
    out = d / "out"
    r = subprocess.run([str(bikesim), "--replay", str(fit_path), "--course", str(course), "--headless",
                        "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    fit = (out / f"{summary['ride_id']}.fit").read_bytes()
    # The replay writes the FIT beside summary.json; `rides show` reads a library, <data>/rides/
    # START_ID_vN.fit (docs/rides.md): the same file put there under its library name.
    created = next(m.get_value("time_created") for m in fitparse.FitFile(fit).get_messages("file_id"))
    data = d / "data"
    (data / "rides").mkdir(parents=True)
    (data / "rides" / f"{created:%Y-%m-%d-%H%M%S}_{summary['ride_id']}_v1.fit").write_bytes(fit)
    return {"points": points, "summary": summary, "data": data, "fit": fit}


def test_the_summary_has_one_off_course_period_per_detour_and_no_other(ride):
    nav = ride["summary"]["navigation"]
    assert nav["course"] == COURSE_NAME
    periods = nav["off_course"]
    assert len(periods) == len(DETOURS), periods
    points = ride["points"]
    for (lo, hi), p in zip(DETOURS, periods):
        # When the rider on the recorded track was 50 m (the off-course distance) from the moved
        # stretch's start: riding into the detour, and out of it at its end.
        enter = next(t for t, _, _, dist in points if dist >= lo)
        leave = next(t for t, _, _, dist in points if dist >= hi)
        assert not p["wrong_way"], p
        assert enter <= p["start_elapsed_s"] <= leave, (lo, enter, p)
        assert p["alarm_elapsed_s"] - p["start_elapsed_s"] <= 10, p
        assert enter < p["end_elapsed_s"] <= leave + 60, (hi, leave, p)
        # how far the rider was from the course: the moved stretch is SHIFT_M from the track
        assert SHIFT_M - 30 <= p["max_distance_m"] <= SHIFT_M + 5, p


def fitdecode_view(data):
    name, events = None, []
    with fitdecode.FitReader(io.BytesIO(data), check_crc=fitdecode.CrcCheck.RAISE,
                             error_handling=fitdecode.ErrorHandling.RAISE) as reader:
        for f in reader:
            if not isinstance(f, fitdecode.FitDataMessage):
                continue
            if f.name == "course":
                assert name is None, "one course message"
                name = f.get_value("name")
            elif f.name == "event":
                events.append((f.get_value("timestamp"), f.get_value("event"), f.get_value("event_type"), f.get_value("data")))
    return name, events


def fitparse_view(data):
    f = fitparse.FitFile(data, check_crc=True)
    names = [m.get_value("name") for m in f.get_messages("course")]
    assert len(names) == 1, names
    events = [(m.get_value("timestamp"), m.get_value("event"), m.get_value("event_type"), m.get_value("data"))
              for m in f.get_messages("event")]
    return names[0], events


def garmin_view(data):
    assert Decoder(Stream.from_byte_array(bytearray(data))).check_integrity()
    messages, errors = Decoder(Stream.from_byte_array(bytearray(data))).read(convert_types_to_strings=True)
    assert errors == [], errors
    courses = messages.get("course_mesgs", [])
    assert len(courses) == 1, courses
    events = [(m.get("timestamp"), m.get("event"), m.get("event_type"), m.get("data")) for m in messages["event_mesgs"]]
    return courses[0].get("name"), events


def off_course_periods(events):
    """(start s, end s from the first timer start, farthest m, wrong way) from a decoder's events."""
    def secs(t):
        return t.timestamp() if isinstance(t, datetime.datetime) else float(t) + 631065600

    t0 = next(secs(t) for t, e, k, _ in events if e == "timer" and k == "start")
    out, open_ = [], None
    for t, e, k, d in events:
        if e != "off_course":
            continue
        if k == "start":
            assert open_ is None, "a start inside an open period"
            open_ = (secs(t) - t0, d)
        else:
            assert k == "stop" and open_ is not None, (k, open_)
            out.append((open_[0], secs(t) - t0, d, open_[1] == 1))
            open_ = None
    assert open_ is None, "every off_course start has its stop"
    return out


def test_every_decoder_reads_the_course_and_its_off_course_events_as_the_summary_says(ride):
    data = ride["fit"]
    views = {"fitdecode": fitdecode_view(data), "fitparse": fitparse_view(data), "garmin-fit-sdk": garmin_view(data)}
    periods = ride["summary"]["navigation"]["off_course"]
    want = [(p["start_elapsed_s"], p["end_elapsed_s"], round(p["max_distance_m"]), p["wrong_way"]) for p in periods]
    seen = {}
    for who, (name, events) in views.items():
        assert name == COURSE_NAME, (who, name)
        got = off_course_periods(events)
        seen[who] = got
        assert len(got) == len(want) == len(DETOURS), (who, got, want)
        for g, w in zip(got, want):
            # the events are at whole seconds (the FIT timestamp), the summary's at the fix's ms
            assert abs(g[0] - w[0]) <= 1 and abs(g[1] - w[1]) <= 1, (who, g, w)
            assert g[2] == w[2] and g[3] == w[3], (who, g, w)
    assert seen["fitdecode"] == seen["fitparse"] == seen["garmin-fit-sdk"], seen
    # The rest of the activity still reads as before: its records, laps and one session.
    m, _ = Decoder(Stream.from_byte_array(bytearray(data))).read()
    assert len(m["record_mesgs"]) > 10_000 and len(m["session_mesgs"]) == 1 and len(m["lap_mesgs"]) == 9


def test_rides_show_says_the_course_and_the_periods(ride, bikecomputer):
    ride_id = ride["summary"]["ride_id"]
    periods = ride["summary"]["navigation"]["off_course"]
    doc = json.loads(subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--json", "--data-dir", str(ride["data"])],
                                    check=True, capture_output=True, text=True).stdout)
    assert doc["course"]["name"] == COURSE_NAME
    got = doc["course"]["off_course"]
    assert len(got) == len(periods) == len(DETOURS), (got, periods)
    for g, p in zip(got, periods):
        assert abs(g["start_elapsed_s"] - p["start_elapsed_s"]) <= 1 and abs(g["end_elapsed_s"] - p["end_elapsed_s"]) <= 1, (g, p)
        assert g["max_distance_m"] == round(p["max_distance_m"]) and g["wrong_way"] == p["wrong_way"], (g, p)
    text = subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--data-dir", str(ride["data"])],
                          check=True, capture_output=True, text=True).stdout
    assert f"course:   {COURSE_NAME}" in text, text
    line = next(l for l in text.splitlines() if l.startswith("off course: "))
    assert line.count("up to") == len(periods), line
    for g in got:
        clock = lambda s: f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
        assert f"{clock(g['start_elapsed_s'])}-{clock(g['end_elapsed_s'])} (up to {g['max_distance_m']} m)" in line, line
