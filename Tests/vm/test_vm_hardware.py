"""The board layer on Debian's amd64 kernel (QEMU, TCG): one boot runs every hardware check,
each test below reads its part. docs/testing.md says what each proves and what it cannot.

- display: I2CBus and the driver against the project's ssd1306-sim module (picture, NACKs with
  a Pi's EREMOTEIO, brown-outs) and i2c-stub (the SMBus block path, ENODEV);
- streams: the kernel module and SSD1306Emulator on the same random byte streams, both ways;
- memlcd: SPIDevice (spidev) and the Sharp driver against the project's memlcd-sim SPI
  controller (picture vs SharpMemoryEmulator, mode and clock, VCOM while idle, power loss,
  the device missing and gone);
- gpio (v1, v2): GPIO lines and buttons against gpio-sim, the same checks in a build against
  Debian's libgpiod 1.6 and in a second build against libgpiod 2.x;
- shim (v1, v2): the C shims alone, compiled with gcc against both libgpiod APIs.
"""
from __future__ import annotations

import re

import pytest

import builds
import vmlib
from conftest import GUEST_SETUP, guest_result, launcher, prepared

STEPS = ["display", "streams", "memlcd", "gpio-v1", "gpio-v2", "shim-v1", "shim-v2"]
PROBE = "with spaces, 'quotes' and $dollars"


@launcher("test_vm_hardware", order=1)
def launch(request) -> vmlib.GuestRun:
    amd64 = request.getfixturevalue("amd64")
    modules = request.getfixturevalue("amd64_modules")
    swift_bin = request.getfixturevalue("swift_bin")
    gpiod2_checks = request.getfixturevalue("gpiod2_checks")
    shim1 = prepared("the C shim tests (amd64, libgpiod v1)", builds.shim_tests, "amd64", 1)
    shim2 = prepared("the C shim tests (amd64, libgpiod v2)", builds.shim_tests, "amd64", 2)
    vm = prepared("the amd64 guest", vmlib.Machine, amd64, ["i2c-dev", "i2c-stub chip_addr=0x3c"], modules)
    v1 = swift_bin / "board-vm-checks"
    script = GUEST_SETUP + f"""
step display inhost {v1} i2c --bus $I2C --debugfs $D --stub-bus $STUB
step streams inhost {v1} streams --bus $I2C --debugfs $D --count 150
modprobe memlcd-sim && M=/sys/kernel/debug/memlcd-sim && step memlcd inhost {v1} memlcd --bus $(cat $M/bus) --debugfs $M --speed 1000000
simchip gpio1 32 && step gpio-v1 inhost {v1} gpio --chip $CHIP --sim $SIM --lines 32 --api 1
simchip gpio2 32 && step gpio-v2 inhost {gpiod2_checks} gpio --chip $CHIP --sim $SIM --lines 32 --api 2
simchip shim1 32 && step shim-v1 inhost {shim1} --api 1 --chip $CHIP --sim $SIM --i2c /dev/i2c-$I2C --debugfs $D
simchip shim2 32 && step shim-v2 inhost {shim2} --api 2 --chip $CHIP --sim $SIM --i2c /dev/i2c-$I2C --debugfs $D
step env inhost /bin/sh -c 'printf "%s|%s" "$VM_PROBE" "$PWD"'
dmesg | grep -iE "ssd1306|memlcd|gpio-sim|bug|oops|warn" | head -20
"""
    return vm.start(script, timeout_s=240, name="hardware", env={"VM_PROBE": PROBE})


@pytest.fixture(scope="module")
def hardware_run(guests):
    result = guest_result(guests, "test_vm_hardware")
    assert result.ok, result.describe()
    return result


def step(run: vmlib.Result, name: str) -> tuple[int | None, str]:
    status = run.outdir / f"{name}.status"
    out = run.outdir / f"{name}.out"
    text = out.read_text(errors="replace") if out.exists() else ""
    return (int(status.read_text()) if status.exists() else None), text


def check_step(run: vmlib.Result, name: str, required: list[str], minimum_ok: int) -> str:
    status, text = step(run, name)
    failures = [l for l in text.splitlines() if l.startswith("FAIL")]
    assert status == 0 and not failures, f"{name}: exit status {status}\n{text}\n{run.describe()}"
    oks = [l for l in text.splitlines() if l.startswith("ok ")]
    assert len(oks) >= minimum_ok, f"{name}: only {len(oks)} checks ran (expected at least {minimum_ok}):\n{text}"
    for r in required:
        assert any(re.search(r, l) for l in oks), f"{name}: no passing check matches {r!r}:\n{text}"
    return text


def test_display_through_the_kernel(hardware_run):
    check_step(hardware_run, "display", [
        r"SSD1306: 12 random frames: kernel GDDRAM = framebuffer = emulator",
        r"SH1106: 12 random frames",
        r"columns 0, 1, 130, 131",
        r"periodic refresh restores state and frame",
        r"reinitialize restores",
        r"EREMOTEIO \(i2c-bcm2835\) is a missing device",
        r"i2c-stub: a 32-byte I2C-block write lands",
        r"i2c-stub: ENODEV",
        r"reopened after the failed write",
    ], minimum_ok=20)


def test_kernel_module_and_emulator_agree_on_random_streams(hardware_run):
    text = check_step(hardware_run, "streams", [r"SSD1306: 150 random streams", r"SH1106: 150 random streams"], minimum_ok=2)
    for line in text.splitlines():
        m = re.search(r"\((\d+) SMBus block writes, (\d+) write\(\), (\d+) I2C_RDWR", line)
        if m:
            assert all(int(x) > 20 for x in m.groups()), f"each transport used: {line}"


def test_memory_lcd_through_the_kernel(hardware_run):
    check_step(hardware_run, "memlcd", [
        r"a missing spidev node is noSPIDevice",
        r"the same device opens once the node exists",
        r"start clears the panel and writes every line",
        r"mode 0, chip select active high, 8-bit words at 1000000 Hz",
        r"random frames: kernel memory = emulator after every step",
        r"flushed: kernel memory = emulator = framebuffer",
        r"idle: VCOM changes every ~500 ms, none more than 1 s apart",
        r"idle: VCOM alternates",
        r"the rolling rewrite puts the frame back",
        r"a device gone mid-ride is noSPIDevice",
        r"back: reopened, cleared and the whole frame written",
        r"do not reach the panel",
    ], minimum_ok=14)


GPIO_REQUIRED = [
    r"a pull-up request reaches the chip", r"a press gives exactly one edge", r"CLOCK_MONOTONIC timestamp",
    r"ten fast bounces all queue", r"naming the holder", r"line beyond the chip", r"set\(active: true\) drives the line high",
    r"active-low output is low when active", r"reach the loop as", r"pull-down request reaches", r"/dev/null",
]


def test_gpio_with_libgpiod_v1(hardware_run):
    text = check_step(hardware_run, "gpio-v1", [r"built against the libgpiod API the build asked for", r"1\.x library", *GPIO_REQUIRED],
                      minimum_ok=25)
    assert "libgpiod API 1" in text


def test_gpio_with_libgpiod_v2(hardware_run):
    text = check_step(hardware_run, "gpio-v2", [r"built against the libgpiod API the build asked for", r"2\.x library", *GPIO_REQUIRED],
                      minimum_ok=25)
    assert "libgpiod API 2" in text


SHIM_REQUIRED = [r"the pull-up reaches gpio-sim", r"a press is one edge", r"names its holder", r"reads back high",
                 r"GDDRAM holds the frame byte for byte", r"-EREMOTEIO"]


def test_c_shims_with_libgpiod_v1(hardware_run):
    check_step(hardware_run, "shim-v1", SHIM_REQUIRED, minimum_ok=18)


def test_c_shims_with_libgpiod_v2(hardware_run):
    check_step(hardware_run, "shim-v2", SHIM_REQUIRED, minimum_ok=18)


def test_the_run_environment_reaches_host_programs(hardware_run):
    status, text = step(hardware_run, "env")
    assert status == 0 and text == f"{PROBE}|{vmlib.REPO}", text
