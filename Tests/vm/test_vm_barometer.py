"""The barometer driver on a real kernel I²C bus (docs/gps.md, "Barometer"): Debian's amd64
kernel in QEMU (and Debian's arm64 kernel with the aarch64 release, the binary that ships) with `i2c-stub` simulating a BMP280 at 0x76 — its chip id, the datasheet's
worked-example calibration registers (0x88…0x9F) and raw data registers (0xF7…0xFC) written with
busybox's i2cset — and `bikecomputer barometer` reading it through libi2c, i2c-dev and the
kernel's SMBus I2C-block transfers, as on the board. A second stub chip at 0x77 answers with a
wrong chip id; nothing answers at 0x75.
"""
from __future__ import annotations

import json

import pytest

import vmlib
from conftest import arch_guest_result, launch_per_arch, launcher, prepared

# BST-BMP280-DS001 §3.12: dig_T1…dig_P9 little-endian, then adc_P = 415148, adc_T = 519888.
CALIBRATION = [0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
               0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17]
DATA = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00]


def register_writes(address: int, chip_id: int) -> str:
    lines = [f"i2cset -y $STUB {address:#x} 0xd0 {chip_id:#x}"]
    lines += [f"i2cset -y $STUB {address:#x} {0x88 + i:#x} {b:#x}" for i, b in enumerate(CALIBRATION)]
    lines += [f"i2cset -y $STUB {address:#x} {0xf7 + i:#x} {b:#x}" for i, b in enumerate(DATA)]
    return "\n".join(lines)


def _launch(request, arch: str) -> vmlib.GuestRun:
    """amd64: the x86 debug build through `inhost`; arm64: the static aarch64 release, run
    straight from the shared host root on Debian's arm64 kernel."""
    k = request.getfixturevalue(arch)
    if arch == "amd64":
        bc = f"inhost {request.getfixturevalue('swift_bin') / 'bikecomputer'}"
    else:
        bc = f"/host{request.getfixturevalue('arm64_release') / 'bikecomputer'}"
    # Debian's arm64 kernel has no i2c-stub: the same upstream file built out of tree for it.
    stub = [] if vmlib.has_module(k, "i2c-stub") else [prepared(f"i2c-stub for {arch}", vmlib.i2c_stub_module, k)]
    vm = prepared(f"the {arch} guest with i2c-stub", vmlib.Machine, k, ["i2c-dev", "i2c-stub chip_addr=0x76,0x77"], stub)
    script = f"""
set -u
STUB=none
for a in /sys/class/i2c-adapter/i2c-*; do
    [ "$(cat $a/name)" = "SMBus stub driver" ] && STUB=${{a##*i2c-}}
done
[ "$STUB" = none ] && {{ echo "no i2c-stub adapter"; exit 92; }}
export SWIFT_BACKTRACE=interactive=no
step() {{
    name=$1; shift
    "$@" > /out/$name.out 2>&1
    echo $? > /out/$name.status
}}
{register_writes(0x76, 0x58)}
{register_writes(0x77, 0x00)}
step read {bc} barometer --bus /dev/i2c-$STUB --address 0x76 --count 2 --interval-ms 10
step ctrl i2cget -y $STUB 0x76 0xf4
step config i2cget -y $STUB 0x76 0xf5
step wrongchip {bc} barometer --bus /dev/i2c-$STUB --address 0x77 --count 1
step nodevice {bc} barometer --bus /dev/i2c-$STUB --address 0x75 --count 1
step nobus {bc} barometer --bus /dev/i2c-99 --count 1
"""
    return vm.start(script, timeout_s=120, name=f"barometer-{arch}")


@launcher("test_vm_barometer", order=6)
def launch(request) -> dict:
    return launch_per_arch(request, "test_vm_barometer", _launch)


@pytest.fixture(scope="module", params=["amd64", "arm64"])
def run(guests, request):
    result = arch_guest_result(guests, "test_vm_barometer", request.param)
    assert result.ok, result.describe()
    return result


def step(run: vmlib.Result, name: str) -> tuple[int, str]:
    return int((run.outdir / f"{name}.status").read_text()), (run.outdir / f"{name}.out").read_text(errors="replace")


def test_the_driver_reads_the_datasheets_worked_example_through_the_kernel(run):
    status, text = step(run, "read")
    assert status == 0, text
    readings = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert len(readings) == 2, text
    for r in readings:
        assert r["chip"] == "BMP280" and r["chip_id"] == "0x58", r
        assert (r["adc_p"], r["adc_t"]) == (415148, 519888), r
        assert r["t_fine"] == 128422, r
        assert r["temperature_c"] == 25.08, r
        assert abs(r["pressure_pa"] - 100653.27) < 0.05, r


def test_the_driver_puts_the_sensor_in_normal_mode_with_the_documented_configuration(run):
    # osrs_t ×2, osrs_p ×16, normal mode; standby 62.5 ms, IIR 16 (docs/gps.md).
    assert step(run, "ctrl") == (0, "0x57\n")
    assert step(run, "config") == (0, "0x30\n")


def test_a_wrong_chip_a_missing_device_and_a_missing_bus_are_named(run):
    status, text = step(run, "wrongchip")
    assert status != 0 and "has id 0x0, not a BMP280 (0x58) or BME280 (0x60)" in text, text
    status, text = step(run, "nodevice")
    assert status != 0 and "no barometer answers at 0x75" in text and "check the wiring" in text, text
    status, text = step(run, "nobus")
    assert status != 0 and "no I2C bus at /dev/i2c-99" in text, text
