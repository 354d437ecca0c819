"""The harness itself: a guest's exit status, output and files come back; a guest that hangs is
killed at its timeout and reported as a failure; a missing QEMU is a failure with the reason."""
from __future__ import annotations

import dataclasses

import pytest

import vmlib
from conftest import launcher, prepared


@launcher("test_vm_harness", order=3)
def launch(request):
    arm64 = request.getfixturevalue("arm64")
    vm = prepared("the arm64 guest", vmlib.Machine, arm64, [], [], host_root=False)
    return {
        "exits": vm.start("echo to-stdout; echo to-stderr >&2; printf 'a file' > /out/made; exit 7", timeout_s=120, name="harness-exit"),
        "hangs": vm.start("echo hanging; sleep 600", timeout_s=12, name="harness-hang"),
    }


@pytest.fixture(scope="module")
def runs(guests):
    started = guests.get("test_vm_harness")
    if isinstance(started, BaseException):
        raise started
    return {name: run.wait() for name, run in started.items()}


def test_status_output_and_files_come_back(runs):
    r = runs["exits"]
    assert not r.timed_out, r.describe()
    assert r.status == 7 and not r.ok
    assert r.stdout == "to-stdout\n" and r.stderr == "to-stderr\n"
    assert r.file("made") == b"a file"
    assert "exit status 7" in r.describe()


def test_a_hung_guest_is_killed_and_reported(runs):
    r = runs["hangs"]
    assert r.timed_out and r.status is None and not r.ok
    assert 12 <= r.seconds < 15, f"killed at its 12 s timeout, not when somebody waited: {r.seconds}"
    assert "did not finish within its timeout and was killed" in r.describe()


def test_no_qemu_is_a_failure_with_the_reason(arm64):
    vm = prepared("the arm64 guest", vmlib.Machine, arm64, [], [], host_root=False)
    vm.kernel = dataclasses.replace(arm64, arch=dataclasses.replace(arm64.arch, qemu="qemu-system-none", qemu_package="qemu-system-none"))
    with pytest.raises(vmlib.VMUnavailable, match="qemu-system-none is not installed"):
        vm.run("true", timeout_s=10)
