"""The follower on recorded rides that pass the same roads again (docs/navigation.md, "Laps"):
each replayed through the app (`bikesim --replay RIDE --course FILE --headless`) along its own
track with the table's two detours moved 300 m aside (Tests/oracle/nav_alarm_table.py's
courses), the recordings fetched from Debian's sources as test_real_recordings.py does.

- 2018-10-03-08-05-11.fit (GoldenCheetah): a 600 m road ridden out and back six times. Before
  the lap rule and the off-course window's bound, the first detour gave no alarm (a jump onto
  another pass of the same road), the window's match walked onto another leg, and the follower
  said "finished" a lap early with two false alarms.
- 2012_01_11_11_51_01.fit (GoldenCheetah): a ride that passes its own roads 5.4 and 11 km later;
  a jump 5.4 km ahead in the first detour gave three false alarms after it.

Each detour: one alarm within 10 s of the period's start, cleared within 30 s of the rider's end of
the stretch; no other period; the course finished with at most 50 m to go.
"""
from __future__ import annotations

import pathlib
import subprocess
import json

import pytest

import debian_source
import nav_alarm_table as table
import test_course_ride_fit as crf
import test_real_recordings as trr

RIDES = ("2018-10-03-08-05-11.fit", "2012_01_11_11_51_01.fit")


@pytest.fixture(scope="module")
def recordings():
    try:
        found = {pathlib.Path(rel).name: path for _, rel, path in trr.recordings()}
    except debian_source.SourceUnavailable as e:
        pytest.fail(f"the real recordings could not be fetched from Debian's source packages: {e}", pytrace=False)
    missing = [r for r in RIDES if r not in found]
    assert not missing, f"not among the fetched recordings: {missing}"
    return found


@pytest.mark.parametrize("name", RIDES)
def test_detours_on_a_course_that_passes_its_roads_again(bikesim, recordings, name, tmp_path):
    path = recordings[name]
    points = table.positions(trr.unit_file(path))
    detours = table.detours_of(points)
    assert len(detours) == 2, f"{name}: {len(points)} positions, {detours}"
    course = tmp_path / "course.gpx"
    course.write_text(crf.course_with_detours(points, detours, f"{name} detours"))
    out = tmp_path / "out"
    r = subprocess.run([str(bikesim), "--replay", str(path), "--course", str(course), "--headless", "--out", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    nav = json.loads((out / "summary.json").read_text())["navigation"]
    periods = nav["off_course"]
    assert len(periods) == len(detours), f"{name}: {periods} for detours {detours}"
    for (lo, hi), p in zip(detours, periods):
        enter = next(t for t, _, _, d in points if d >= lo)
        leave = next(t for t, _, _, d in points if d >= hi)
        assert enter - 5 <= p["start_elapsed_s"] <= leave, f"{name}: {p} for the stretch {enter}-{leave} s"
        assert p["alarm_elapsed_s"] - p["start_elapsed_s"] <= 10, f"{name}: {p}"
        assert p["end_elapsed_s"] is not None and leave - 10 <= p["end_elapsed_s"] <= leave + 30, \
            f"{name}: {p} for the stretch {enter}-{leave} s"
        assert not p["wrong_way"], f"{name}: {p}"
    assert nav["state"] == "finished" and nav["distance_to_go_m"] <= 50, f"{name}: {nav['state']}, {nav['distance_to_go_m']} m to go"
