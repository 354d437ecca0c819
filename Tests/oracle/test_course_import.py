"""Course import (docs/navigation.md) against an independent reader, on files no one here wrote:
gpxpy's own test files (its sdist's test_files/, fetched from PyPI at test time, never committed).

For every file gpxpy reads: a course of two or more distinct points imports with the points gpxpy
sees (tracks, else routes), the name gpxpy sees, a length within 0.5 % of the WGS 84 geodesic
length of gpxpy's points (geographiclib; the importer simplifies within 2 m), and every waypoint
either a cue or counted as away from the route; a file without two points is refused, naming the
file. Fails (never skips) when the files cannot be fetched."""
import json
import math
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


# --- TCX and FIT courses written by others (Tests/oracle/courses/README.md says where each is from)

COURSES = pathlib.Path(__file__).resolve().parent / "courses"
TCX_COURSES = ["reference/track/course.tcx", "reference/track/tcxtest~gpx-course.tcx", "reference/track/gtrnctr-readcp.tcx"]
FIT_COURSES = ["cptr001.fit", "cptr002.fit", "cptr003.fit", "cptr003_connect.fit"]
# TCX's PointType (TrainingCenterDatabase v2 schema, CoursePointType_t) as the FIT profile names the
# same course_point types.
TCX_POINT_TYPES = {"Generic": "generic", "Summit": "summit", "Valley": "valley", "Water": "water", "Food": "food",
                   "Danger": "danger", "Left": "left", "Right": "right", "Straight": "straight", "First Aid": "first_aid",
                   "4th Category": "fourth_category", "3rd Category": "third_category", "2nd Category": "second_category",
                   "1st Category": "first_category", "Hors Category": "hors_category", "Sprint": "sprint"}
TCX_NS = "{http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2}"


def import_one(bikecomputer, data, path):
    """`courses import --json FILE` then `courses show --json KEY`: (the import's object, the course)."""
    r = subprocess.run([str(bikecomputer), "courses", "import", "--data-dir", str(data), "--json", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{path.name}: {r.stderr}"
    got = json.loads(r.stdout.splitlines()[0])
    r = subprocess.run([str(bikecomputer), "courses", "show", "--data-dir", str(data), "--json", got["key"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"{path.name}: {r.stderr}"
    return got, json.loads(r.stdout)


def tcx_view(path):
    """What ElementTree sees in a TCX course: its name, its trackpoints' positions (those with
    one), and its course points (name, FIT type, notes, position) in file order."""
    import xml.etree.ElementTree as ET
    course = ET.parse(path).getroot().find(f"{TCX_NS}Courses/{TCX_NS}Course")
    assert course is not None, path

    def position(e):
        p = e.find(f"{TCX_NS}Position")
        return None if p is None else (float(p.findtext(f"{TCX_NS}LatitudeDegrees")), float(p.findtext(f"{TCX_NS}LongitudeDegrees")))

    points = [position(t) for t in course.iter(f"{TCX_NS}Trackpoint")]
    cues = [{"name": (c.findtext(f"{TCX_NS}Name") or "").strip(), "type": TCX_POINT_TYPES[c.findtext(f"{TCX_NS}PointType")],
             "notes": (c.findtext(f"{TCX_NS}Notes") or "").strip(), "at": position(c)}
            for c in course.findall(f"{TCX_NS}CoursePoint")]
    return course.findtext(f"{TCX_NS}Name").strip(), [p for p in points if p is not None], cues


def geodesic_length_of(pairs):
    g = Geodesic.WGS84
    return sum(g.Inverse(a[0], a[1], b[0], b[1])["s12"] for a, b in zip(pairs, pairs[1:]))


def along(pairs, at):
    """Distance along the polyline `pairs` (geodesic) of its vertex nearest `at`."""
    g = Geodesic.WGS84
    best, total, best_d = 0.0, 0.0, math.inf
    for i, p in enumerate(pairs):
        if i:
            total += g.Inverse(pairs[i - 1][0], pairs[i - 1][1], p[0], p[1])["s12"]
        d = g.Inverse(p[0], p[1], at[0], at[1])["s12"]
        if d < best_d:
            best, best_d = total, d
    return best


def check_course(name, got, shown, want_name, points, length_m, cues):
    """The imported course against an independent reader's view: name, points, length within
    0.5 %, and every cue in route order with its type, name and (where the file places it)
    distance along within 1 % of the course or 30 m."""
    assert got["name"] == want_name, (name, got["name"], want_name)
    assert got["points_read"] == len(points), (name, got["points_read"], len(points))
    assert 2 <= got["points_kept"] <= got["points_read"]
    assert abs(got["length_m"] - length_m) <= 0.005 * length_m, (name, got["length_m"], length_m)
    assert got["cues_from_file"] == len(cues), (name, got["cues_from_file"], len(cues))
    file_cues = shown["cues"][:] if got["cues_derived"] == 0 else None
    if cues:
        assert got["cues_derived"] == 0, (name, "a file with course points gets no derived cues")
        assert [(c["type"], c["name"]) for c in file_cues] == [(c["type"], c["name"][:64]) for c in cues], (name, file_cues, cues)
        ds = [c["distance_m"] for c in file_cues]
        assert all(a < b for a, b in zip(ds, ds[1:])), (name, "cues strictly increasing along", ds)
        for c, w in zip(file_cues, cues):
            assert abs(c["distance_m"] - w["along_m"]) <= max(30.0, 0.01 * length_m), (name, c, w)
            if "notes" in w:
                assert c["notes"] == w["notes"][:256], (name, c, w)


@pytest.fixture(scope="module")
def gpsbabel_tcx():
    import debian_source
    try:
        root = debian_source.extract("gpsbabel", lambda n: n in TCX_COURSES, suites=("trixie", "sid", "bookworm"))
    except debian_source.SourceUnavailable as e:
        pytest.fail(f"GPSBabel's TCX courses are needed (Tests/oracle/courses/README.md): {e}")
    missing = [n for n in TCX_COURSES if not (root / n).is_file()]
    assert not missing, missing
    return root


@pytest.mark.parametrize("rel", TCX_COURSES)
def test_gpsbabel_tcx_courses_import_as_elementtree_reads_them(bikecomputer, tmp_path, gpsbabel_tcx, rel):
    path = gpsbabel_tcx / rel
    name, points, cues = tcx_view(path)
    for c in cues:
        c["along_m"] = along(points, c["at"])
    # course points ordered along the course (a file may list them in any order)
    cues.sort(key=lambda c: c["along_m"])
    got, shown = import_one(bikecomputer, tmp_path / "data", path)
    assert got["format"] == "tcx", got
    check_course(rel, got, shown, name, points, geodesic_length_of(points), cues)
    if rel.endswith("readcp.tcx"):
        assert len(cues) == 16 and {c["type"] for c in shown["cues"]} == set(TCX_POINT_TYPES.values()), shown["cues"]


def fit_course_view(path):
    """What the Garmin FIT SDK sees in a FIT course (checked against fitdecode and fitparse):
    the course's name, the records' positions, the course points (type, name, distance) in
    file order."""
    import fitdecode
    import fitparse
    from garmin_fit_sdk import Decoder, Stream
    data = path.read_bytes()
    # (the SDK's check_integrity refuses RWGPS's cptr002.fit, whose CRCs fitdecode checks and
    # accepts; its reading has no errors)
    m, errors = Decoder(Stream.from_byte_array(bytearray(data))).read(convert_types_to_strings=True)
    assert errors == [], (path.name, errors)
    assert m["file_id_mesgs"][0]["type"] == "course", path.name
    semi = 180.0 / 2**31
    records = [(r["position_lat"] * semi, r["position_long"] * semi) for r in m["record_mesgs"]
               if r.get("position_lat") is not None and r.get("position_long") is not None]
    cps = [{"type": c["type"], "name": c.get("name") or "", "distance": c.get("distance"),
            "at": (c["position_lat"] * semi, c["position_long"] * semi) if c.get("position_lat") is not None else None}
           for c in m.get("course_point_mesgs", [])]
    # the other two decoders see the same records and course points (by the types' values: their
    # profiles are older than the SDK's and do not name rest_area, 29)
    raw, _ = Decoder(Stream.from_byte_array(bytearray(data))).read(convert_types_to_strings=False)
    want = [(c["type"], c.get("name") or "") for c in raw.get("course_point_mesgs", [])]
    with fitdecode.FitReader(path, check_crc=fitdecode.CrcCheck.RAISE) as reader:
        fd = [f for f in reader if isinstance(f, fitdecode.FitDataMessage)]
    assert sum(1 for f in fd if f.name == "record" and f.get_value("position_lat", fallback=None) is not None) == len(records)
    assert [(f.get_value("type", raw_value=True), f.get_value("name", fallback="") or "") for f in fd if f.name == "course_point"] == want
    fp = fitparse.FitFile(str(path), check_crc=True)
    assert [(c.get_raw_value("type"), c.get_value("name") or "") for c in fp.get_messages("course_point")] == want
    return m["course_mesgs"][0]["name"], records, cps


@pytest.mark.parametrize("name", FIT_COURSES)
def test_real_fit_courses_import_as_the_fit_sdk_reads_them(bikecomputer, tmp_path, name):
    path = COURSES / name
    course_name, points, cps = fit_course_view(path)
    length = geodesic_length_of(points)
    for c in cps:
        # where the course passes nearest the course point's position (its distance field is not
        # always right: Garmin Connect writes 0 for every one)
        c["along_m"] = along(points, c["at"]) if c["at"] else c["distance"]
    cps.sort(key=lambda c: c["along_m"])
    got, shown = import_one(bikecomputer, tmp_path / "data", path)
    assert got["format"] == "fit", got
    check_course(name, got, shown, course_name, points, length, cps)
