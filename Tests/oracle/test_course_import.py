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
