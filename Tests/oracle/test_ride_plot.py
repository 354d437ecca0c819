"""`bikecomputer rides show ID --plot FILE.svg`, checked by parsing the SVG (xml.etree) against
the ride's FIT file as an independent decoder (fitdecode) reads it: a panel with axes and one
path per channel the ride has, each point the average of the records in its slice of time, the
laps at their start times, and the heart-rate zones the file carries as bands."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import fitdecode
import pytest

NS = {"s": "http://www.w3.org/2000/svg"}


@pytest.fixture(scope="module")
def plotted(bikesim, bikecomputer, tmp_path_factory):
    d = tmp_path_factory.mktemp("plot")
    lib = d / "data"
    subprocess.run([str(bikesim), "--headless", "--out", str(d / "out"), "--data-dir", str(lib)],
                   check=True, capture_output=True, timeout=300)
    rides = json.loads(subprocess.run([str(bikecomputer), "rides", "list", "--data-dir", str(lib), "--json"],
                                      check=True, capture_output=True, text=True).stdout)
    ride_id = rides[0]["id"]
    svg = d / "ride.svg"
    r = subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--data-dir", str(lib), "--plot", str(svg)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"plot:     {svg}" in r.stdout
    fit = lib / "rides" / rides[0]["files"]["fit"]["name"]
    if not fit.exists():
        fit = next(lib.rglob(rides[0]["files"]["fit"]["name"]))
    return ET.parse(svg).getroot(), fit, (bikecomputer, lib, ride_id, d)


def read_fit(path):
    records, laps, hr_highs = [], [], []
    with fitdecode.FitReader(str(path)) as r:
        for f in r:
            if not isinstance(f, fitdecode.FitDataMessage):
                continue
            if f.name == "record":
                ts = f.get_value("timestamp").timestamp()
                row = {"t": ts}
                for k in ("speed", "enhanced_speed", "heart_rate", "power", "cadence"):
                    if f.has_field(k) and f.get_value(k) is not None:
                        row[k] = f.get_value(k)
                records.append(row)
            elif f.name == "lap":
                laps.append(f.get_value("start_time").timestamp())
            elif f.name == "hr_zone":
                hr_highs.append(f.get_value("high_bpm"))
    return records, laps, hr_highs


def path_points(d):
    pts, cur = [], []
    for cmd, x, y in re.findall(r"([ML])([-\d.]+) ([-\d.]+)", d):
        if cmd == "M" and cur:
            pts.append(cur)
            cur = []
        cur.append((float(x), float(y)))
    if cur:
        pts.append(cur)
    return pts


def test_one_panel_with_axes_and_one_path_per_channel(plotted):
    root, fit, _ = plotted
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    panels = root.findall("s:g[@class='channel']", NS)
    assert [g.get("data-channel") for g in panels] == ["speed", "heart_rate", "power", "cadence"], "the demo ride's channels, no altitude"
    for g in panels:
        axes = g.findall("s:line[@class='axis']", NS)
        assert len(axes) == 2, "an x and a y axis"
        x_axis, y_axis = axes
        assert x_axis.get("y1") == x_axis.get("y2") and y_axis.get("x1") == y_axis.get("x2")
        paths = g.findall("s:path[@class='series']", NS)
        assert len(paths) == 1 and paths[0].get("data-channel") == g.get("data-channel")


def test_each_point_is_the_average_of_the_records_in_its_slice(plotted):
    root, fit, _ = plotted
    records, _, _ = read_fit(fit)
    t0, t1 = records[0]["t"], records[-1]["t"]
    for g in root.findall("s:g[@class='channel']", NS):
        key = g.get("data-channel")
        x_axis, y_axis = g.findall("s:line[@class='axis']", NS)
        x0, x1 = float(x_axis.get("x1")), float(x_axis.get("x2"))
        top, bottom = float(y_axis.get("y1")), float(y_axis.get("y2"))
        lo, hi = float(g.get("data-min")), float(g.get("data-max"))

        def value(r):
            if key == "speed":
                v = r.get("enhanced_speed", r.get("speed"))
                return None if v is None else v * 3.6
            return r.get(key)

        points = [p for seg in path_points(g.find("s:path", NS).get("d")) for p in seg]
        assert len(points) > 100
        slice_s = (t1 - t0) / min(900, int(t1 - t0) + 1)
        checked = 0
        for px, py in points[::25]:
            t = t0 + (px - x0) / (x1 - x0) * (t1 - t0)
            v = lo + (bottom - py) / (bottom - top) * (hi - lo)
            near = [value(r) for r in records if abs(r["t"] - t) <= slice_s and value(r) is not None]
            assert near, f"{key}: a point at {t - t0:.0f} s with no record near it"
            assert min(near) - 0.02 * (hi - lo) <= v <= max(near) + 0.02 * (hi - lo), f"{key} at {t - t0:.0f} s: {v} not within {min(near)}..{max(near)}"
            checked += 1
        assert checked > 4


def test_laps_are_marked_at_their_start_time(plotted):
    root, fit, _ = plotted
    records, laps, _ = read_fit(fit)
    assert len(laps) >= 2, "the demo laps at 20 min"
    t0, t1 = records[0]["t"], records[-1]["t"]
    x_axis = root.find("s:g[@class='channel']/s:line[@class='axis']", NS)
    x0, x1 = float(x_axis.get("x1")), float(x_axis.get("x2"))
    marks = root.findall("s:line[@class='lap']", NS)
    assert [m.get("data-lap") for m in marks] == [str(n + 1) for n in range(1, len(laps))]
    for mark, start in zip(marks, laps[1:]):
        expected = x0 + (start - t0) / (t1 - t0) * (x1 - x0)
        assert float(mark.get("x1")) == pytest.approx(expected, abs=0.01)
        assert mark.get("x1") == mark.get("x2")


def test_heart_rate_zones_are_shaded_at_the_files_boundaries(plotted):
    root, fit, _ = plotted
    _, _, highs = read_fit(fit)
    assert highs, "the ride's FIT file carries its heart-rate zones"
    g = root.find("s:g[@data-channel='heart_rate']", NS)
    lo, hi = float(g.get("data-min")), float(g.get("data-max"))
    _, y_axis = g.findall("s:line[@class='axis']", NS)
    top, bottom = float(y_axis.get("y1")), float(y_axis.get("y2"))
    zones = g.findall("s:rect[@class='zone']", NS)
    assert zones
    for z in zones:
        below = z.get("data-below")
        if below != "inf":
            assert float(below) in [float(h) for h in highs]
            # The band's top edge is the zone's upper bound on the panel's scale (when in range).
            if lo < float(below) < hi:
                y_top = float(z.get("y"))
                assert y_top == pytest.approx(bottom - (float(below) - lo) / (hi - lo) * (bottom - top), abs=0.02)
    assert root.find("s:g[@data-channel='speed']/s:rect[@class='zone']", NS) is None, "no zones on speed"


def test_png_is_refused_with_the_reason(plotted):
    _, _, (bikecomputer, lib, ride_id, d) = plotted
    r = subprocess.run([str(bikecomputer), "rides", "show", ride_id, "--data-dir", str(lib), "--plot", str(d / "x.png")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "SVG only" in r.stderr and "x.svg" in r.stderr
