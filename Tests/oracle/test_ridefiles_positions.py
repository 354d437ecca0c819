"""Where the ride went and how much it climbed, in every file format, read by independent
decoders (issue 19): FIT position_lat/long (semicircles), enhanced_altitude and enhanced_speed
beside the legacy fields, grade; lap and session start/end positions, the session's bounding box,
total ascent/descent; GPX track points with elevation and time; TCX positions and altitude.

The samples are the simulated and replayed rides test_ridefiles.py reads (written by
`swift test --filter RideFilesTests` into .build/ridefiles-samples).
"""
import datetime
import json

import fitdecode
import fitparse
import gpxpy
import pytest
from garmin_fit_sdk import Decoder, Stream
from tcxreader.tcxreader import TCXReader

from test_ridefiles import SAMPLES, rides  # noqa: F401  (the samples fixture)

SEMI = 180.0 / 2**31


def garmin(name):
    data = (SAMPLES / f"{name}.fit").read_bytes()
    messages, errors = Decoder(Stream.from_byte_array(bytearray(data))).read(convert_types_to_strings=True)
    assert errors == [], (name, errors)
    return messages


def deg(semicircles):
    return None if semicircles is None else semicircles * SEMI


def ts(v):
    return v.timestamp() if isinstance(v, datetime.datetime) else v + 631065600


def positioned(records):
    return [r for r in records if r.get("position_lat") is not None and r.get("position_long") is not None]


def test_fit_records_carry_positions_enhanced_fields_and_grade(rides):  # noqa: F811
    outdoor = 0
    for name, exp in rides:
        recs = garmin(name)["record_mesgs"]
        pos = positioned(recs)
        assert len(pos) == exp["position_points"], name
        if not pos:
            continue
        outdoor += 1
        for r in recs:
            if r.get("altitude") is not None:
                # enhanced_altitude (32-bit) beside the legacy 16-bit field, the same value
                assert abs(r["enhanced_altitude"] - r["altitude"]) < 1e-6, (name, r)
            if r.get("speed") is not None:
                assert abs(r["enhanced_speed"] - r["speed"]) < 1e-6, (name, r)
            assert -90 <= deg(r.get("position_lat") or 0) <= 90 and -180 <= deg(r.get("position_long") or 0) < 180
        grades = [r["grade"] for r in recs if r.get("grade") is not None]
        if name.startswith("ride-"):
            assert grades and all(-100 <= g <= 100 for g in grades), name
    assert outdoor >= 5, "too few outdoor rides in the samples"


def test_laps_and_session_start_end_positions_box_and_climbing(rides):  # noqa: F811
    checked = 0
    for name, exp in rides:
        m = garmin(name)
        recs = m["record_mesgs"]
        pos = positioned(recs)
        session = m["session_mesgs"][0]
        if not pos:
            for k in ("start_position_lat", "end_position_lat", "nec_lat", "swc_long"):
                assert session.get(k) is None, (name, k)
            continue
        checked += 1
        assert session["start_position_lat"] == pos[0]["position_lat"] and session["start_position_long"] == pos[0]["position_long"], name
        assert session["end_position_lat"] == pos[-1]["position_lat"] and session["end_position_long"] == pos[-1]["position_long"], name
        assert session["nec_lat"] == max(r["position_lat"] for r in pos), name
        assert session["nec_long"] == max(r["position_long"] for r in pos), name
        assert session["swc_lat"] == min(r["position_lat"] for r in pos), name
        assert session["swc_long"] == min(r["position_long"] for r in pos), name
        for i, (lap, want) in enumerate(zip(m["lap_mesgs"], exp["laps"])):
            start, end = ts(lap["start_time"]), ts(lap["timestamp"])
            inside = [r for r in pos if start <= ts(r["timestamp"]) <= end]
            if not inside:
                assert lap.get("start_position_lat") is None, (name, i)
                continue
            assert (lap["start_position_lat"], lap["start_position_long"]) == (inside[0]["position_lat"], inside[0]["position_long"]), (name, i)
            assert (lap["end_position_lat"], lap["end_position_long"]) == (inside[-1]["position_lat"], inside[-1]["position_long"]), (name, i)
            if want.get("ascent_m") is not None:
                assert lap["total_ascent"] == int(want["ascent_m"] + 0.5), (name, i, lap["total_ascent"], want["ascent_m"])
                assert lap["total_descent"] == int(want["descent_m"] + 0.5), (name, i)
        s = exp["session"]
        if s.get("ascent_m") is not None:
            assert session["total_ascent"] == int(s["ascent_m"] + 0.5), (name, session["total_ascent"], s["ascent_m"])
            assert session["total_descent"] == int(s["descent_m"] + 0.5), name
            assert s["ascent_m"] > 0, name
    assert checked >= 5


def test_fitdecode_and_fitparse_read_the_same_positions(rides):  # noqa: F811
    for name, exp in rides:
        if exp["position_points"] == 0:
            continue
        ours = positioned(garmin(name)["record_mesgs"])
        fd = []
        with fitdecode.FitReader(str(SAMPLES / f"{name}.fit"), check_crc=fitdecode.CrcCheck.RAISE) as fit:
            for frame in fit:
                if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record" and frame.has_field("position_lat") \
                        and frame.get_value("position_lat") is not None:
                    fd.append((frame.get_value("position_lat"), frame.get_value("position_long"), frame.get_value("enhanced_altitude")))
        assert [(r["position_lat"], r["position_long"]) for r in ours] == [(a, b) for a, b, _ in fd], name
        fp = fitparse.FitFile(str(SAMPLES / f"{name}.fit"), check_crc=True)
        sess = [mm for mm in fp.get_messages("session")][0]
        assert sess.get_value("start_position_lat") == ours[0]["position_lat"], name


def test_gpx_track_points_have_the_fits_positions_elevation_and_time(rides):  # noqa: F811
    for name, exp in rides:
        if exp["position_points"] == 0:
            continue
        fit = {int(ts(r["timestamp"])): r for r in positioned(garmin(name)["record_mesgs"])}
        gpx = gpxpy.parse((SAMPLES / f"{name}.gpx").read_text())
        points = [p for t in gpx.tracks for s in t.segments for p in s.points]
        assert len(points) == len(fit), name
        for p in points:
            r = fit[int(p.time.timestamp())]
            assert abs(p.latitude - deg(r["position_lat"])) < 1.5e-7 and abs(p.longitude - deg(r["position_long"])) < 1.5e-7, (name, p)
            if r.get("enhanced_altitude") is not None:
                assert p.elevation is not None and abs(p.elevation - r["enhanced_altitude"]) <= 0.15, (name, p.elevation, r["enhanced_altitude"])
        # the GPX length follows the track the FIT holds
        seq = sorted(fit)
        fit_len = sum(gpxpy.geo.haversine_distance(deg(fit[a]["position_lat"]), deg(fit[a]["position_long"]),
                                                   deg(fit[b]["position_lat"]), deg(fit[b]["position_long"])) for a, b in zip(seq, seq[1:]))
        gpx_len = sum(s.length_2d() for t in gpx.tracks for s in t.segments)
        assert gpx_len <= fit_len + 1e-3 and gpx_len >= 0, name


def test_tcx_trackpoints_have_positions_and_altitude(rides):  # noqa: F811
    for name, exp in rides:
        if exp["position_points"] == 0:
            continue
        fit = {int(ts(r["timestamp"])): r for r in garmin(name)["record_mesgs"]}
        ex = TCXReader().read(str(SAMPLES / f"{name}.tcx"), only_gps=False)
        with_pos = [tp for tp in ex.trackpoints if tp.latitude is not None]
        assert len(with_pos) == exp["position_points"], name
        for tp in ex.trackpoints:
            r = fit[int(tp.time.timestamp())]
            if tp.latitude is not None:
                assert abs(tp.latitude - deg(r["position_lat"])) < 1.5e-7 and abs(tp.longitude - deg(r["position_long"])) < 1.5e-7, name
            if r.get("enhanced_altitude") is not None:
                assert tp.elevation is not None and abs(tp.elevation - r["enhanced_altitude"]) <= 0.15, name


@pytest.mark.parametrize("fixture_index", [0, 1])  # the two outdoor rides (sorted names)
def test_replayed_device_ride_keeps_the_devices_own_positions(rides, shared, fixture_index):  # noqa: F811
    """A recorded ride replayed into the app and written again: every second's position is the
    recording device's own (same semicircles), its altitude the device's (FIT's 0.2 m)."""
    fixtures = sorted(p.name for p in (shared / "fixtures" / "rides").glob("*.fit"))
    name = f"replayed-{fixture_index}"
    exp = json.loads((SAMPLES / f"{name}.json").read_text())
    assert exp["fixture"] == fixtures[fixture_index]
    device = {}
    with fitdecode.FitReader(str(shared / "fixtures" / "rides" / exp["fixture"])) as fit:
        for frame in fit:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record" and frame.has_field("position_lat") \
                    and frame.get_value("position_lat") is not None:
                alt = frame.get_value("enhanced_altitude") if frame.has_field("enhanced_altitude") else None
                device[int(frame.get_value("timestamp").timestamp())] = (frame.get_value("position_lat"), frame.get_value("position_long"), alt)
    ours = positioned(garmin(name)["record_mesgs"])
    assert len(ours) >= 0.99 * len(device) and ours, (name, len(ours), len(device))
    same = 0
    for r in ours:
        d = device.get(int(ts(r["timestamp"])))
        if d is None:
            continue
        assert (r["position_lat"], r["position_long"]) == (d[0], d[1]), (name, r["timestamp"])
        if d[2] is not None:
            assert abs(r["enhanced_altitude"] - d[2]) <= 0.2 + 1e-9, (name, r["enhanced_altitude"], d[2])
        same += 1
    assert same >= 0.99 * len(ours), (name, same, len(ours))
