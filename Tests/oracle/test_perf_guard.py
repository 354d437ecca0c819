"""CI guard (docs/performance.md): no heap allocation per sensor frame in steady state, end to end.

`bikebench --guard` runs 2 min of a synthetic ride's bridge frames (BLE heart rate with RR, power,
speed, cadence; about 13 frames per second) through parse, decoders, data source, the device
runtime, the app core, the renderer and the display driver, then counts heap allocations over the
next 5 min of frames with a malloc counter linked into the bench (Benchmarks/CMallocCounter).
It must read zero. Timings are reported elsewhere, never asserted here.
"""
import re
import subprocess

import pytest

from conftest import bin_path

GUARD_LINE = re.compile(r"(\d+) sensor frames in steady state, (\d+) heap allocations \((\d+) frames allocated")


@pytest.fixture(scope="module")
def bikebench():
    p = bin_path() / "bikebench"
    assert p.exists(), f"{p} not built: run swift build first"
    return p


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
