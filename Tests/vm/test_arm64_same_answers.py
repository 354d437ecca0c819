"""Issue 26, item 4: the same answers on both CPUs. The aarch64 `bikesim` of the release (static,
Swift 6.2.3: bash scripts/release-arm64.sh), run under qemu-aarch64-static, and this machine's
x86_64 `bikesim` (BIKE_BIN's, else the debug build; scripts/test.sh gives it the release build,
as the aarch64 one is) replay the fixture rides (../shared/fixtures/rides) and
run the scenarios headless; every file they write (summary.json, the FIT, GPX and TCX files, the
journal's ride files, the screenshots) must be byte for byte the same. A difference is a bug
(floating-point order, integer widths, endianness), never a tolerance.

qemu-user runs these: they make no hardware calls (the hardware path runs in the arm64 VM:
test_vm_run.py, test_vm_barometer.py, test_vm_package.py)."""
from __future__ import annotations

import concurrent.futures
import json
import pathlib
import subprocess

import pytest

import builds
import vmlib
from conftest import prepared

FIXTURES = vmlib.REPO.parent / "shared" / "fixtures" / "rides"
SCENARIOS = vmlib.REPO / "Simulator" / "scenarios"
CASES = {
    "demo": [],
    **{f"scenario-{p.stem}": ["--scenario", str(p)] for p in sorted(SCENARIOS.glob("*.scenario"))},
    **{f"replay-{p.stem}": ["--replay", str(p)] for p in sorted(FIXTURES.glob("*.fit"))},
}
RUN_TIMEOUT_S = 900  # the ten-hour scenario under qemu-user on a loaded 2-core host


def run_case(command: list[str], args: list[str], out: pathlib.Path) -> dict[str, bytes]:
    r = subprocess.run([*command, "--headless", "--out", str(out), *args], capture_output=True, text=True,
                       timeout=RUN_TIMEOUT_S, env={"PATH": "/usr/bin:/bin", "SWIFT_BACKTRACE": "interactive=no"})
    assert r.returncode == 0, f"{' '.join(command)} {' '.join(args)}: exit {r.returncode}\n{r.stderr[-3000:]}"
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def answers(arm64_release, tmp_path_factory):
    """{case: (x86 files, aarch64 files)}, the cases run two at a time."""
    prepared("qemu-user-static", vmlib.ensure_packages, ["qemu-user-static"])
    x86 = prepared("the x86_64 bikesim", builds.swift_products, ["bikesim"]) / "bikesim"
    arm = ["qemu-aarch64-static", str(arm64_release / "bikesim")]
    root = tmp_path_factory.mktemp("same-answers")
    assert len([c for c in CASES if c.startswith("replay-")]) >= 3, f"the fixture rides in {FIXTURES}"
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {(case, cpu): pool.submit(run_case, cmd, args, root / cpu / case)
                for case, args in CASES.items() for cpu, cmd in (("x86_64", [str(x86)]), ("aarch64", arm))}
        return {case: (jobs[(case, "x86_64")].result(), jobs[(case, "aarch64")].result()) for case in CASES}


def describe_difference(name: str, a: bytes, b: bytes) -> str:
    if name.endswith(".json"):
        ja, jb = json.loads(a), json.loads(b)
        keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k)) if isinstance(ja, dict) else []
        return f"{name}: keys differing: {[(k, ja.get(k), jb.get(k)) for k in keys[:10]]}"
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{name}: {len(a)} vs {len(b)} bytes, first difference at byte {first}"


@pytest.mark.parametrize("case", list(CASES))
def test_aarch64_and_x86_64_write_the_same_bytes(answers, case):
    x86, arm = answers[case]
    assert "summary.json" in x86 and any(n.endswith(".fit") for n in x86), sorted(x86)
    assert sorted(arm) == sorted(x86), f"different files: {sorted(set(arm) ^ set(x86))}"
    different = [describe_difference(n, x86[n], arm[n]) for n in sorted(x86) if x86[n] != arm[n]]
    assert not different, "\n".join(different)
