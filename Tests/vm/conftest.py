"""Fixtures of the VM tests (docs/testing.md). Anything that cannot be prepared (no qemu, no
network, a package gone from the archive) FAILS the tests that need it, with the reason."""
from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import builds  # noqa: E402
import vmlib  # noqa: E402


def prepared(what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except vmlib.VMUnavailable as e:
        pytest.fail(f"the VM tests cannot run: {what}: {e}", pytrace=False)


@pytest.fixture(scope="session")
def amd64():
    return prepared("Debian's amd64 kernel", vmlib.kernel, "amd64")


@pytest.fixture(scope="session")
def arm64():
    return prepared("Debian's arm64 kernel", vmlib.kernel, "arm64")


@pytest.fixture(scope="session")
def amd64_modules(amd64):
    return prepared("the ssd1306-sim and gpio-sim modules (amd64)", builds.modules, amd64)


@pytest.fixture(scope="session")
def arm64_modules(arm64):
    return prepared("the ssd1306-sim and gpio-sim modules (arm64)", builds.modules, arm64)


@pytest.fixture(scope="session")
def swift_bin():
    return prepared("the Swift products", builds.swift_products, ["board-vm-checks", "screen-oracle", "bikecomputer"])


@pytest.fixture(scope="session")
def arm64_release():
    """The board's release: static aarch64 executables and the Debian package (.build/release-arm64)."""
    return prepared("the aarch64 release (bash scripts/release-arm64.sh)", builds.arm64_release)


@pytest.fixture(scope="session")
def gpiod2_checks():
    return prepared("board-vm-checks against libgpiod 2", builds.swift_gpiod2_checks)


def pytest_sessionfinish(session, exitstatus):
    # Only a session that booted guests prunes: one that booted none (scripts/test.sh runs the
    # qemu-user comparison in a pytest of its own) has no run directories to keep in check.
    if any(e.kind == "guest" for e in vmlib.TIMINGS):
        vmlib.prune_runs()


# Each test module registers how it starts its guest; the session's first test starts the guests
# of every selected module side by side (they take 7-40 s each under TCG, the system guests
# minutes), and a module's fixture then waits for its own. First, not at the first module that
# needs a guest: the tests that need none (the harness's own, the write-log replayer) sorted
# before them and held every guest back for their 16 s (stop 45's CI).
LAUNCHERS: dict[str, tuple] = {}


def launcher(module: str, order: int):
    """Registers `fn(request) -> GuestRun` for `module`; lower `order` starts first (the
    longest guest first, so the others finish in its shadow)."""
    def register(fn):
        LAUNCHERS[module] = (order, fn)
        return fn
    return register


@pytest.fixture(scope="session", autouse=True)
def guests(request):
    import system
    selected = {item.module.__name__ for item in request.session.items}
    started: dict[str, object] = {}
    system.launching_done.clear()
    try:
        for name, (_, launch) in sorted(LAUNCHERS.items(), key=lambda kv: kv[1][0]):
            if name in selected:
                try:
                    with vmlib.timed(f"launching the guests of {name}", quiet=True):
                        started[name] = launch(request)
                except BaseException as e:  # noqa: BLE001 - reported by that module's tests
                    started[name] = e
    finally:
        system.launching_done.set()
    return started


def arches_selected(request, module: str, arches=("amd64", "arm64")) -> list[str]:
    """The architectures of `module`'s tests (parametrized by arch) that this run selected: a run
    split by `-k` (scripts/test.sh runs the arm64 tests beside the others) starts only the guests
    it tests."""
    ids = [item.nodeid for item in request.session.items if item.module.__name__ == module]
    return [a for a in arches if any(f"[{a}]" in i or f"[{a}-" in i or f"-{a}]" in i for i in ids)]


def launch_per_arch(request, module: str, launch) -> dict:
    """Starts `launch(request, arch)` for each architecture of `module`'s tests that this run
    selected; {arch: the guest, or the exception that stopped its start (its tests raise it)}."""
    started: dict = {}
    for arch in arches_selected(request, module):
        try:
            started[arch] = launch(request, arch)
        except BaseException as e:  # noqa: BLE001 - reported by that architecture's tests
            started[arch] = e
    return started


def _started(guests: dict, module: str):
    """What `module`'s launcher started (a guest, or {arch: guest}); its failure to start raised."""
    started = guests.get(module)
    if started is None:
        pytest.fail(f"no guest was started for {module}", pytrace=False)
    if isinstance(started, BaseException):
        raise started
    return started


def arch_guest_result(guests: dict, module: str, arch: str) -> vmlib.Result:
    """The finished guest of `module` for `arch` (started with launch_per_arch)."""
    run = _started(guests, module).get(arch)
    if run is None:
        pytest.fail(f"no {arch} guest was started for {module}", pytrace=False)
    if isinstance(run, BaseException):
        raise run
    return run.wait()


def guest_result(guests: dict, module: str) -> vmlib.Result:
    return _started(guests, module).wait()


# Shell for the guest: load the simulated hardware and make gpio-sim chips.
GUEST_SETUP = r"""
set -u
modprobe ssd1306-sim || { echo "modprobe ssd1306-sim failed"; exit 90; }
modprobe gpio-sim-oot || { echo "modprobe gpio-sim-oot failed"; exit 91; }
D=/sys/kernel/debug/ssd1306-sim
I2C=$(cat $D/adapter)
STUB=none
for a in /sys/class/i2c-adapter/i2c-*; do
    [ "$(cat $a/name)" = "SMBus stub driver" ] && STUB=${a##*i2c-}
done
# simchip NAME LINES: a new gpio-sim chip; sets CHIP (/dev/gpiochipN) and SIM (its sysfs dir).
simchip() {
    G=/sys/kernel/config/gpio-sim/$1
    mkdir $G $G/bank0 || return 1
    sysw $G/bank0/num_lines $2
    sysw $G/live 1
    CHIP=/dev/$(cat $G/bank0/chip_name)
    SIM=/sys/devices/platform/$(cat $G/dev_name)/$(cat $G/bank0/chip_name)
}
# step NAME CMD...: runs CMD, its output in /out/NAME.out, its exit status in /out/NAME.status.
step() {
    name=$1; shift
    echo "== $name: $*"
    "$@" > /out/$name.out 2>&1
    echo $? > /out/$name.status
}
"""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Where the run's time went (vmlib.timing_summary): the last thing Tests/vm/run prints."""
    terminalreporter.write_sep("=", "VM timings")
    booted = any(e.kind == "guest" for e in vmlib.TIMINGS)
    # A run that booted no guest (the qemu-user comparison on its own) keeps its own file.
    terminalreporter.write_line(vmlib.timing_summary(json_name="timings.json" if booted else "timings-no-guests.json"))
