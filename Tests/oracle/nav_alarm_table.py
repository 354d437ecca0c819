"""The off-course alarm over every recorded ride with positions (issue 28, docs/navigation.md,
"Alarms over the recorded rides"): the fixture rides and the real recordings of other makers'
units that Tests/oracle/test_real_recordings.py fetches from Debian's sources.

For each ride with positions, two replays through the app (`bikesim --replay RIDE --course FILE
--headless`):

- **its own track** as the course (every recorded position as a GPX track): every off-course
  period is a false alarm (the rider rode the course); the distance to go at the end;
- **with detours** (rides of 4 km or more): two stretches of the track, starting at 30 % and
  65 % of its distance, each 10 % of it at most 1.5 km, moved 300 m sideways
  (test_course_ride_fit.py's course_with_detours): each should give one alarm, how long after
  the rider left the course it came (alarm − the period's start, the follower's own figure; and
  alarm − the first recorded position more than 50 m from the course's own part there, this
  table's own: the stretch and LOCAL_M of course around it, other laps' passes of the same road
  left out), and whether it cleared after the rider rejoined; another period starting while the
  rider is still in the stretch is that detour's again (the road crossed the moved course); any
  other period is a false alarm. A recording whose positions come further apart than the
  follower's longest gap (15 s) has no testable detour: every fix is a lost fix.

    .venv/bin/python Tests/oracle/nav_alarm_table.py [--bikesim PATH] [--json OUT]

Prints a Markdown table (and writes every replay's periods to --json). Not a test: the bounds
are held by test_course_ride_fit.py and the Navigation tests; this is the table the issue asks for.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import test_course_ride_fit as crf  # noqa: E402
import test_real_recordings as trr  # noqa: E402

SEMI = 180.0 / 2**31
FIXTURES = ("garmin-edge-500-activity.fit", "garmin-edge-820-bike.fit", "sample-activity-indoor-trainer.fit")
DETOUR_MIN_M = 4_000.0  # rides shorter than this get no detours (the two would be under 400 m)
DETOUR_AT = (0.30, 0.65)
DETOUR_SHARE, DETOUR_MAX_M = 0.10, 1_500.0
ALARM_WINDOW_BEFORE_S, ALARM_WINDOW_AFTER_S = 30.0, 60.0
# The course's part a rider in a detour is on by the distance ridden: the stretch and this much
# of the course before and after it (other laps' passes of the same road are not where the rider
# belongs, and the follower alarms there too: docs/navigation.md, "Laps").
LOCAL_M = 300.0


def positions(unit: dict) -> list:
    """(t s from the first timer start, or from the first record without one; lat; lon; distance
    m) of every record with a position and a distance, from what test_real_recordings.unit_file
    decoded (a damaged file: the records before the damage)."""
    recs = [r for r in unit["records"]
            if None not in (r.get("timestamp"), r.get("position_lat"), r.get("position_long"), r.get("distance"))]
    if not recs:
        return []
    start = unit.get("timer_start")

    def secs(t) -> float:  # a datetime, or raw seconds since the FIT epoch (1989-12-31) in some files
        return t.timestamp() if hasattr(t, "timestamp") else float(t) + 631065600

    t0 = secs(start if start is not None else recs[0]["timestamp"])
    lat = lambda x: x * SEMI if isinstance(x, int) else x  # noqa: E731 - semicircles, or degrees already
    return [(secs(r["timestamp"]) - t0, lat(r["position_lat"]), lat(r["position_long"]), float(r["distance"]))
            for r in recs]


def replay(bikesim: pathlib.Path, ride: pathlib.Path, course_text: str, work: pathlib.Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    course = work / "course.gpx"
    course.write_text(course_text)
    out = work / "out"
    r = subprocess.run([str(bikesim), "--replay", str(ride), "--course", str(course), "--headless", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1:] or [f"exit {r.returncode}"]}
    return json.loads((out / "summary.json").read_text()).get("navigation") or {"error": ["no navigation in summary.json"]}


def detours_of(points: list) -> list[tuple[float, float]]:
    total = points[-1][3] - points[0][3]
    if total < DETOUR_MIN_M:
        return []
    length = min(DETOUR_SHARE * total, DETOUR_MAX_M)
    return [(points[0][3] + f * total, points[0][3] + f * total + length) for f in DETOUR_AT]


OFF_M = 60.0  # a fix this far from every point of the course is off it (the alarm's 50 m, and some)


def off_fixes(points: list, course: list, lo: float, hi: float) -> int:
    """How many of the rider's fixes in the detour's stretch are more than OFF_M from the whole
    course: none when the course uses that road elsewhere (a lap, an out-and-back), where the
    rider never leaves it and no alarm is right."""
    import math
    out = 0
    for _, lat, lon, d in points:
        if not lo <= d <= hi:
            continue
        k = math.cos(math.radians(lat)) * 111_320.0
        near = min(((lat - a) * 111_320.0) ** 2 + ((lon - b) * k) ** 2 for a, b in course)
        out += near > OFF_M ** 2
    return out


def distance_to_course(lat: float, lon: float, course: list) -> float:
    """Metres from (lat, lon) to the course's polyline (its segments, in a local plane; only the
    segments with an end within ~2 km are looked at)."""
    import math
    k = math.cos(math.radians(lat)) * 111_320.0
    best = float("inf")
    for (a1, b1), (a2, b2) in zip(course, course[1:]):
        if min(abs(a1 - lat), abs(a2 - lat)) > 0.02 or min(abs(b1 - lon), abs(b2 - lon)) * k > 2_000:
            continue
        x1, y1, x2, y2 = (b1 - lon) * k, (a1 - lat) * 111_320.0, (b2 - lon) * k, (a2 - lat) * 111_320.0
        dx, dy = x2 - x1, y2 - y1
        n = dx * dx + dy * dy
        t = 0.0 if n == 0 else max(0.0, min(1.0, -(x1 * dx + y1 * dy) / n))
        best = min(best, math.hypot(x1 + t * dx, y1 + t * dy))
    return best


def left_at(points: list, course: list, enter: float, leave: float) -> float | None:
    """The time of the rider's first recorded position in the stretch more than 50 m (the
    alarm's distance) from the course's polyline: when the rider had left it, by this table's
    own geometry rather than the follower's."""
    for t, lat, lon, _ in points:
        if enter - ALARM_WINDOW_BEFORE_S <= t <= leave and distance_to_course(lat, lon, course) > 50.0:
            return t
    return None


def local_part(points: list, course: list, lo: float, hi: float) -> list:
    """The course's points (one per recorded position) from LOCAL_M before the stretch to LOCAL_M
    after it: consecutive, so a polyline."""
    return [c for c, p in zip(course, points) if lo - LOCAL_M <= p[3] <= hi + LOCAL_M]


# The follower's longest gap between consecutive fixes (FollowerSettings.fixLostMaxMs): a source
# whose fixes come further apart than this has every fix "lost" and never alarms, by design.
FIX_LOST_MAX_S = 15.0


def usual_interval(points: list) -> float:
    """The median time between consecutive recorded positions, s."""
    gaps = sorted(b[0] - a[0] for a, b in zip(points, points[1:]))
    return gaps[len(gaps) // 2] if gaps else 0.0


def judge(points: list, detours: list, periods: list, course: list) -> dict:
    """Each detour's alarm (the first period starting in its window), the false ones, delays."""
    assert len(course) == len(points), "the course has one point per recorded position"
    found, used = [], set()
    sparse = usual_interval(points) > FIX_LOST_MAX_S
    for lo, hi in detours:
        enter = next(t for t, _, _, d in points if d >= lo)
        # From where the rider was when the table starts looking (30 s before the stretch).
        start = next(d for t, _, _, d in points if t >= enter - ALARM_WINDOW_BEFORE_S)
        local = local_part(points, course, min(lo, start), hi)
        leave = next((t for t, _, _, d in points if d >= hi), points[-1][0])
        hit = next((i for i, p in enumerate(periods) if i not in used
                    and enter - ALARM_WINDOW_BEFORE_S <= p["start_elapsed_s"] <= leave + ALARM_WINDOW_AFTER_S), None)
        if hit is None:
            # No alarm: right where the rider never left the course's roads (a lap or an
            # out-and-back passes there: the follower, which knows where along the course the
            # rider is, may still alarm then, and then it counts above), else missed.
            found.append("sparse" if sparse else "n/a" if off_fixes(points, local, lo, hi) < 3 else None)
            continue
        used.add(hit)
        p = periods[hit]
        # Another period starting while the rider is still in the stretch: off the moved course
        # again after crossing it (a curving road crosses its own copy moved 300 m aside), not
        # a false alarm; counted as `again`.
        again = [i for i, q in enumerate(periods) if i not in used and enter <= q["start_elapsed_s"] <= leave]
        used.update(again)
        # When the rider left the course's own part here; whether another part (another lap's
        # pass of the same road) stayed within 50 m longer.
        left = left_at(points, local, enter, leave)
        left_any = left_at(points, course, enter, leave)
        found.append({"delay_s": round(p["alarm_elapsed_s"] - p["start_elapsed_s"], 1) if p.get("alarm_elapsed_s") is not None else None,
                      "after_left_s": round(p["alarm_elapsed_s"] - left, 1) if left is not None and p.get("alarm_elapsed_s") is not None else None,
                      "cleared": p.get("end_elapsed_s") is not None, "max_distance_m": p.get("max_distance_m"),
                      "again": len(again),
                      "other_pass": left is not None and (left_any is None or left_any > left + 5)})
    return {"detours": found, "false": [p for i, p in enumerate(periods) if i not in used]}



def rides() -> list[tuple[str, pathlib.Path]]:
    out = [(f"{name} (fixture)", crf_shared() / "fixtures" / "rides" / name) for name in FIXTURES]
    for package, rel, path in trr.recordings():
        out.append((f"{pathlib.Path(rel).name} ({package})", path))
    return out


def crf_shared() -> pathlib.Path:
    return HERE.parents[1].parent / "shared"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bikesim", default=None, help="the bikesim to run (default: swift build --show-bin-path)/bikesim")
    ap.add_argument("--json", default=None, help="write every replay's periods here")
    a = ap.parse_args()
    bikesim = pathlib.Path(a.bikesim) if a.bikesim else pathlib.Path(subprocess.run(
        ["swift", "build", "--show-bin-path"], capture_output=True, text=True, check=True, cwd=HERE.parents[1]).stdout.strip()) / "bikesim"
    if not bikesim.exists():
        raise SystemExit(f"nav_alarm_table: no {bikesim}: run swift build first")
    rows, report = [], []
    all_rides = rides()
    for k, (name, path) in enumerate(all_rides, 1):
        unit = trr.unit_file(path)
        why = trr.classify(unit)
        if why is not None and "pool swim" not in why:
            print(f"[{k}/{len(all_rides)}] {name}: {why}: left out", file=sys.stderr)
            continue
        points, error = positions(unit), unit["error"]
        if len(points) < 10:
            print(f"[{k}/{len(all_rides)}] {name}: {len(points)} positions: not a ride along a course, left out", file=sys.stderr)
            continue
        km = (points[-1][3] - points[0][3]) / 1000
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            work = pathlib.Path(tmp)
            own = replay(bikesim, path, crf.course_with_detours(points, [], f"{name} own track"), work / "own")
            detours = detours_of(points)
            moved = replay(bikesim, path, crf.course_with_detours(points, detours, f"{name} detours"), work / "detours") if detours else None
        entry = {"ride": name, "km": round(km, 2), "positions": len(points), "decode_error": error, "own": own,
                 "detour_stretches_m": detours, "detours": moved}
        own_false = None if "error" in own else len(own.get("off_course", []))
        course = [(float(x), float(y)) for x, y in re.findall(r'lat="([-\d.]+)" lon="([-\d.]+)"', crf.course_with_detours(points, detours, "c"))]
        verdict = judge(points, detours, moved.get("off_course", []), course) if moved and "error" not in moved else None
        entry["verdict"] = verdict
        report.append(entry)
        delays = "—" if not detours else ("error: " + " ".join(moved["error"]) if verdict is None else
                                          ", ".join("missed" if d is None else "n/a (course passes here)" if d == "n/a" else
                                                    f"n/a (fixes {usual_interval(points):.0f} s apart)" if d == "sparse" else
                                                    f"{d['delay_s']} s ({'course passes here' if d['after_left_s'] is None else str(d['after_left_s']) + ' s'})" + ("" if d["cleared"] else " (not cleared)")
                                                    + (" (on another lap's road)" if d.get("other_pass") else "")
                                                    + (f" (+{d['again']} after crossing it)" if d.get("again") else "")
                                                    for d in verdict["detours"]))
        rows.append((name, f"{km:.1f}", str(len(points)),
                     "error: " + " ".join(own["error"]) if own_false is None else str(own_false),
                     "—" if "error" in own else f"{own.get('distance_to_go_m', float('nan')):.1f}",
                     "—" if not detours else ("—" if verdict is None else
                                              f"{sum(isinstance(d, dict) for d in verdict['detours'])} / {sum(d not in ('n/a', 'sparse') for d in verdict['detours'])}"),
                     delays,
                     "—" if not verdict else str(len(verdict["false"]))))
        print(f"[{k}/{len(all_rides)}] {name}: {km:.1f} km, own-track alarms {own_false}, detours {delays} "
              f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
    head = ("ride", "km", "positions", "alarms on its own track (false)", "distance to go at the end, m",
            "detour alarms", "alarm delay: the follower's (after the first fix > 50 m from the course's own part)",
            "other alarms with detours (false)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
