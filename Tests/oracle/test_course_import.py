"""Course import (docs/navigation.md) against an independent reader, on files no one here wrote:
gpxpy's own test files (its sdist's test_files/, fetched from PyPI at test time, never committed).

For every file gpxpy reads: a course of two or more distinct points imports with the points gpxpy
sees (tracks, else routes), the name gpxpy sees, a length within 0.5 % of the WGS 84 geodesic
length of gpxpy's points (geographiclib; the importer simplifies within 2 m), and every waypoint
either a cue or counted as away from the route; a file without two points is refused, naming the
file. Fails (never skips) when the files cannot be fetched."""
import json
import pathlib
import subprocess

import gpxpy
import pytest
from geographiclib.geodesic import Geodesic

from pypi_sdist import SourceUnavailable, extract

GPXPY = ("gpxpy", "1.6.2")


def gpx_files():
    try:
        root = extract(*GPXPY, lambda name: "/test_files/" in name and name.endswith(".gpx"))
    except SourceUnavailable as e:
        pytest.fail(f"gpxpy's test files are needed: {e}")
    files = sorted(root.rglob("*.gpx"))
    assert len(files) >= 20, f"gpxpy {GPXPY[1]}'s sdist should hold its test_files/*.gpx, found {len(files)}"
    return files


def geodesic_length(points):
    g = Geodesic.WGS84
    return sum(g.Inverse(a.latitude, a.longitude, b.latitude, b.longitude)["s12"] for a, b in zip(points, points[1:]))


def test_gpxpy_test_files_import_as_gpxpy_reads_them(bikecomputer, tmp_path):
    checked = refused = 0
    for f in gpx_files():
        g = gpxpy.parse(f.read_text(encoding="utf-8-sig"))
        track = [p for t in g.tracks for s in t.segments for p in s.points]
        points = track or [p for r in g.routes for p in r.points]
        distinct = {(round(p.latitude * 1e7), round(p.longitude * 1e7)) for p in points}
        r = subprocess.run([str(bikecomputer), "courses", "import", "--data-dir", str(tmp_path / "data"), "--json", str(f)],
                           capture_output=True, text=True, timeout=120)
        if len(distinct) < 2:
            assert r.returncode == 1, f"{f.name}: {len(points)} point(s) should be refused: {r.stdout}"
            assert f.name in r.stderr and ("no points" in r.stderr or "at least 2" in r.stderr), r.stderr
            refused += 1
            continue
        assert r.returncode == 0, f"{f.name}: {r.stderr}"
        got = json.loads(r.stdout.splitlines()[0])
        assert got["points_read"] == len(points), f"{f.name}: read {got['points_read']} points, gpxpy {len(points)}"
        assert 2 <= got["points_kept"] <= got["points_read"]
        want = geodesic_length(points)
        assert abs(got["length_m"] - want) <= 0.005 * want, f"{f.name}: {got['length_m']} m, geodesic {want:.2f} m"
        names = [t.name for t in g.tracks if t.name] if track else [r_.name for r_ in g.routes if r_.name]
        name = (names[0] if names else g.name if g.name else None) or f.stem
        assert got["name"] == name.strip()[:64], f"{f.name}: named {got['name']!r}, gpxpy {name!r}"
        assert got["cues_from_file"] + got["waypoints_away"] >= len(g.waypoints), f"{f.name}: {len(g.waypoints)} waypoints lost"
        checked += 1
    assert checked >= 10 and refused >= 3, (checked, refused)


def test_a_climb_drawn_in_a_track_is_found_and_shown(bikecomputer, tmp_path):
    """A track due north: 2 km flat, 1.2 km at 6 %, 1 km flat (elevations by geometry, written
    here): `courses show --json` lists one climb where it was drawn, with its figures."""
    g = Geodesic.WGS84
    pts = []
    for i in range(0, 4201, 20):
        lat = g.Direct(46.0, 7.0, 0.0, i)["lat2"]
        ele = 500.0 + 0.06 * min(max(i - 2000, 0), 1200)
        pts.append(f'<trkpt lat="{lat:.7f}" lon="7.0000000"><ele>{ele:.2f}</ele></trkpt>')
    f = tmp_path / "hill.gpx"
    f.write_text('<gpx version="1.1"><trk><name>Hill</name><trkseg>' + "".join(pts) + "</trkseg></trk></gpx>")
    data = tmp_path / "data"
    r = subprocess.run([str(bikecomputer), "courses", "import", "--data-dir", str(data), str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(bikecomputer), "courses", "show", "--data-dir", str(data), "--json", "hill"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    climbs = json.loads(r.stdout)["climbs"]
    assert len(climbs) == 1, climbs
    c = climbs[0]
    assert set(c) == {"start_m", "end_m", "length_m", "gain_m", "grade_percent", "score", "category"}, c
    assert abs(c["start_m"] - 2000) <= 20 and abs(c["end_m"] - 3200) <= 20, c
    assert abs(c["length_m"] - (c["end_m"] - c["start_m"])) <= 0.1, c
    assert abs(c["gain_m"] - 72) <= 2 and abs(c["grade_percent"] - 6) <= 0.2, c
    assert abs(c["score"] - c["length_m"] * c["grade_percent"]) <= 1, c
    assert c["category"] is None  # score ~7 200: under Strava's category 4 (8 000)


def test_the_courses_folder_import_list_replace_and_remove(bikecomputer, tmp_path):
    """A file dropped in <data dir>/courses/ is imported under its key (unsafe characters made
    '-'), listed, replaced by a second import, shown by name in any case, and removed with its
    source (else it would be imported again); what is not there is an error that says so."""
    data = tmp_path / "data"
    (data / "courses").mkdir(parents=True)
    g = Geodesic.WGS84
    trk = "".join(f'<trkpt lat="{g.Direct(45.5, 6.5, 90.0, i)["lat2"]:.7f}" lon="{g.Direct(45.5, 6.5, 90.0, i)["lon2"]:.7f}"/>'
                  for i in range(0, 3001, 50))
    (data / "courses" / "My Alps.gpx").write_text(f'<gpx version="1.1"><trk><name>Col Test</name><trkseg>{trk}</trkseg></trk></gpx>')

    def bc(*args):
        return subprocess.run([str(bikecomputer), "courses", *args, "--data-dir", str(data)], capture_output=True, text=True, timeout=60)

    r = bc("list")
    assert "waiting to be imported" in r.stdout and "My Alps.gpx" in r.stdout, r.stdout
    r = bc("import")
    assert r.returncode == 0 and "imported as My-Alps" in r.stdout, (r.stdout, r.stderr)
    listed = json.loads(bc("list", "--json").stdout)
    assert [(c["key"], c["name"]) for c in listed] == [("My-Alps", "Col Test")], listed
    assert abs(listed[0]["length_m"] - 3000) <= 3, listed
    assert "waiting" not in bc("list").stdout
    r = bc("import", str(data / "courses" / "My Alps.gpx"))
    assert r.returncode == 0 and "replaced My-Alps" in r.stdout, r.stdout
    assert json.loads(bc("show", "--json", "col test").stdout)["name"] == "Col Test"
    r = bc("show", "nope")
    assert r.returncode == 1 and "no course named 'nope'" in r.stderr, r.stderr
    r = bc("remove", "My-Alps")
    assert r.returncode == 0 and "My Alps.gpx" in r.stdout, r.stdout
    assert sorted(p.name for p in (data / "courses").iterdir()) == [], "the course and its source are gone"
    assert json.loads(bc("list", "--json").stdout) == []
    r = bc("remove", "My-Alps")
    assert r.returncode == 1 and "no course 'My-Alps'" in r.stderr, r.stderr
