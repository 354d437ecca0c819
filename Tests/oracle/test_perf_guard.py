"""CI guard (docs/performance.md): no heap allocation per sensor frame in steady state, end to end.

`bikebench --guard` runs 2 min of a synthetic ride's bridge frames (BLE heart rate with RR, power,
speed, cadence; about 13 frames per second) through parse, decoders, data source, the device
runtime, the app core, the renderer and the display driver, then counts heap allocations over the
next 5 min of frames with a malloc counter linked into the bench (Benchmarks/CMallocCounter).
It must read zero. Timings are reported elsewhere, never asserted here.

The property is about the device's build, so the guard runs the release build of bikebench (a
debug build allocates dozens of times per frame in unspecialized generic code and closure
contexts, and proves nothing). The fixture builds it (release_build.py: minutes from a clean
clone, seconds afterwards); the guard itself runs in under a second. BIKEBENCH=path uses a given
binary instead.
"""
import os
import pathlib
import re
import subprocess

import pytest

from release_build import release_binary

REPO = pathlib.Path(__file__).resolve().parents[2]

GUARD_LINE = re.compile(r"(\d+) sensor frames in steady state, (\d+) heap allocations \((\d+) frames allocated")


@pytest.fixture(scope="module")
def bikebench():
    if os.environ.get("BIKEBENCH"):
        return pathlib.Path(os.environ["BIKEBENCH"])
    return release_binary("bikebench")


def guard(bikebench, *extra):
    r = subprocess.run([str(bikebench), "--guard", *extra], capture_output=True, text=True, timeout=120)
    m = GUARD_LINE.search(r.stdout)
    assert m, f"no guard line in bikebench output:\n{r.stdout}\n{r.stderr}"
    frames, allocations, allocating = map(int, m.groups())
    return r, frames, allocations, allocating


def test_no_heap_allocation_per_sensor_frame(bikebench):
    r, frames, allocations, allocating = guard(bikebench)
    assert frames > 3000, r.stdout
    assert allocations == 0 and allocating == 0, (
        "sensor frames allocate in steady state; find where with "
        f"`{bikebench} --guard --trace-allocations 5`:\n{r.stdout}")
    assert r.returncode == 0, r.stdout + r.stderr


def test_guard_fails_when_the_frame_path_allocates(bikebench):
    # The same run with one small Swift array allocated in the screen port on every show: the
    # counter must see it and the guard must fail, or the test above proves nothing.
    r, frames, allocations, allocating = guard(bikebench, "--inject-allocation")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout
    assert allocating > frames // 4 and allocations >= allocating, r.stdout


def test_allocation_trace_names_the_allocating_code(bikebench):
    # The tool the failure message points to prints a stack per allocation.
    r = subprocess.run([str(bikebench), "--guard", "--inject-allocation", "--trace-allocations", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.count("--- allocation of ") == 2, r.stderr
    assert "swift_allocObject" in r.stderr or "swift_slowAlloc" in r.stderr, r.stderr


GPS_LINE = re.compile(r"GPS: (\d+) gpsd lines \((\d+) fixes\), (\d+) heap allocations; barometer: (\d+) readings, (\d+) heap allocations")


def test_no_heap_allocation_per_gps_report_or_barometer_reading(bikebench):
    # The same guard with the GPS (gpsd report lines, 1 Hz) and the barometer (BMP280 registers,
    # 1 Hz) among the frames (docs/gps.md): every line and reading goes through the parser, the
    # fix rules, the compensation, the altimetry, the data source and the app core.
    r, frames, allocations, allocating = guard(bikebench, "--gps")
    m = GPS_LINE.search(r.stdout)
    assert m, f"no GPS line in bikebench output:\n{r.stdout}\n{r.stderr}"
    lines, fixes, gps_allocations, readings, baro_allocations = map(int, m.groups())
    assert lines > 300 and fixes > 250 and readings > 250, r.stdout
    assert gps_allocations == 0 and baro_allocations == 0, r.stdout
    assert allocations == 0 and allocating == 0, r.stdout
    assert r.returncode == 0, r.stdout + r.stderr
