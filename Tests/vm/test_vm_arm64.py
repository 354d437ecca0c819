"""The hardware tests on the target board's architecture: Debian's arm64 kernel under
qemu-system-aarch64 (-M virt -cpu cortex-a53, TCG), the project's ssd1306-sim and gpio-sim
cross-built for it, and the C shims with their tests cross-compiled (aarch64-linux-gnu-gcc
-static, Debian's arm64 libi2c.a and libgpiod.a: 1.6, and 2.x from bookworm-backports).

The Swift code is not built for arm64 here: this toolchain has no aarch64 Linux runtime
(docs/board.md says how a rider cross-builds the board binary and what was verified)."""
from __future__ import annotations

import pytest

import builds
import vmlib
from conftest import GUEST_SETUP, guest_result, launcher, prepared
from test_vm_hardware import SHIM_REQUIRED, check_step


@launcher("test_vm_arm64", order=2)
def launch(request) -> vmlib.GuestRun:
    arm64 = request.getfixturevalue("arm64")
    modules = request.getfixturevalue("arm64_modules")
    shim1 = prepared("the C shim tests (arm64, libgpiod v1)", builds.shim_tests, "arm64", 1)
    shim2 = prepared("the C shim tests (arm64, libgpiod v2)", builds.shim_tests, "arm64", 2)
    vm = prepared("the arm64 guest", vmlib.Machine, arm64, ["i2c-dev"], modules)
    # Static aarch64 binaries run straight from the shared host root (inhost would chroot into
    # the amd64 host's programs).
    script = GUEST_SETUP + f"""
uname -m
simchip shim1 32 && step shim-v1 /host{shim1} --api 1 --chip $CHIP --sim $SIM --i2c /dev/i2c-$I2C --debugfs $D
simchip shim2 32 && step shim-v2 /host{shim2} --api 2 --chip $CHIP --sim $SIM --i2c /dev/i2c-$I2C --debugfs $D
ls -l /dev/gpiochip*
"""
    return vm.start(script, timeout_s=180, name="arm64")


@pytest.fixture(scope="module")
def arm64_run(guests):
    result = guest_result(guests, "test_vm_arm64")
    assert result.ok, result.describe()
    assert "aarch64" in result.stdout, result.stdout
    return result


def test_c_shims_on_arm64_with_libgpiod_v1(arm64_run):
    text = check_step(arm64_run, "shim-v1", SHIM_REQUIRED, minimum_ok=18)
    assert "libgpiod API 1 (1.6" in text


def test_c_shims_on_arm64_with_libgpiod_v2(arm64_run):
    text = check_step(arm64_run, "shim-v2", SHIM_REQUIRED, minimum_ok=18)
    assert "libgpiod API 2 (2." in text
