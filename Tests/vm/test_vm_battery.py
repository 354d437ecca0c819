"""The battery's fuel-gauge drivers on a real kernel I²C bus (docs/power.md, "Battery boards"):
Debian's amd64 kernel in QEMU with `i2c-stub` simulating a MAX17048 at 0x36, INA219s at 0x43
(Waveshare's UPS HAT (C) address) and 0x40, and a PiSugar 3 at 0x57, their registers written with
busybox's i2cset to the values worked out from the data sheets' register definitions
(Tests/BatteryTests/FuelGaugeTests.swift decodes the same values); `bikecomputer battery` reads
them through libi2c, i2c-dev and the kernel's SMBus transfers, as the unit does.

i2c-stub keeps each register as a 16-bit word and answers an SMBus word read low byte first: a
chip that sends its most significant byte first (the MAX17048, the INA219) is simulated by
storing the word byte-swapped, so the bytes on the wire are the chip's.
"""
from __future__ import annotations

import json

import pytest

import vmlib
from conftest import guest_result, launcher, prepared


def swapped(v: int) -> int:
    return ((v & 0xFF) << 8) | (v >> 8)


def words(address: int, regs: dict[int, int]) -> str:
    return "\n".join(f"i2cset -y $STUB {address:#x} {r:#x} {swapped(v):#06x} w" for r, v in regs.items())


def bytes_(address: int, regs: dict[int, int]) -> str:
    return "\n".join(f"i2cset -y $STUB {address:#x} {r:#x} {v:#x}" for r, v in regs.items())


# MAX17048: VERSION 0x0012; VCELL 0xCE40 → 52 800 × 78.125 µV = 4.125 V; SOC 0x5A80 → 90.5 %;
# CRATE 0xFFD9 → −39 × 0.208 = −8.112 %/h (discharging).
MAX17048 = {0x08: 0x0012, 0x02: 0xCE40, 0x04: 0x5A80, 0x16: 0xFFD9}
# INA219 (Waveshare UPS HAT (C), 0.1 Ω shunt): configuration 0x399F (power-on value); shunt
# 0xFF06 → −250 × 10 µV = −2.5 mV → −25 mA (discharging); bus 3 840 mV = 960 × 4 mV → 960 << 3.
INA219 = {0x00: 0x399F, 0x01: 0xFF06, 0x02: 960 << 3}
# Not an INA219: bits 15 and 14 of its configuration register set.
NOT_INA219 = {0x00: 0xC000, 0x01: 0, 0x02: 960 << 3}
# PiSugar 3: USB power in (0x02 bit 7), soft power-off enabled and asked (0x03 bits 4 and 3),
# 3 912 mV (0x0F, 0x48), 67 %; write protection (0x0B) locked.
PISUGAR3 = {0x02: 0x80, 0x03: 0x18, 0x22: 0x0F, 0x23: 0x48, 0x2A: 67, 0x0B: 0x00}


@launcher("test_vm_battery", order=7)
def launch(request) -> vmlib.GuestRun:
    amd64 = request.getfixturevalue("amd64")
    swift_bin = request.getfixturevalue("swift_bin")
    vm = prepared("the amd64 guest with i2c-stub", vmlib.Machine, amd64, ["i2c-dev", "i2c-stub chip_addr=0x36,0x40,0x43,0x57"], [])
    bc = swift_bin / "bikecomputer"
    script = f"""
set -u
STUB=none
for a in /sys/class/i2c-adapter/i2c-*; do
    [ "$(cat $a/name)" = "SMBus stub driver" ] && STUB=${{a##*i2c-}}
done
[ "$STUB" = none ] && {{ echo "no i2c-stub adapter"; exit 92; }}
step() {{
    name=$1; shift
    "$@" > /out/$name.out 2>&1
    echo $? > /out/$name.status
}}
{words(0x36, MAX17048)}
{words(0x43, INA219)}
{words(0x40, NOT_INA219)}
{bytes_(0x57, PISUGAR3)}
step max17048 inhost {bc} battery --gauge max17048 --bus /dev/i2c-$STUB --count 2 --interval-ms 10
step ina219 inhost {bc} battery --gauge ina219 --bus /dev/i2c-$STUB --count 1
step notina219 inhost {bc} battery --gauge ina219 --bus /dev/i2c-$STUB --address 0x40 --count 1
step pisugar3 inhost {bc} battery --gauge pisugar3 --bus /dev/i2c-$STUB --count 1
step pisugar3_ctrl2 i2cget -y $STUB 0x57 0x03
step pisugar3_lock i2cget -y $STUB 0x57 0x0b
step pisugar3_again inhost {bc} battery --gauge pisugar3 --bus /dev/i2c-$STUB --count 1
step wrongchip inhost {bc} battery --gauge max17048 --bus /dev/i2c-$STUB --address 0x43 --count 1
step nodevice inhost {bc} battery --gauge ina219 --bus /dev/i2c-$STUB --address 0x41 --count 1
step nobus inhost {bc} battery --bus /dev/i2c-99 --count 1
"""
    return vm.start(script, timeout_s=120, name="battery")


@pytest.fixture(scope="module")
def run(guests):
    result = guest_result(guests, "test_vm_battery")
    assert result.ok, result.describe()
    return result


def step(run: vmlib.Result, name: str) -> tuple[int, str]:
    return int((run.outdir / f"{name}.status").read_text()), (run.outdir / f"{name}.out").read_text(errors="replace")


def readings(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_the_max17048_driver_reads_charge_voltage_and_rate_through_the_kernel(run):
    status, text = step(run, "max17048")
    assert status == 0, text
    rs = readings(text)
    assert len(rs) == 2, text
    for r in rs:
        assert r["address"] == "0x36" and r["percent"] == 90.5 and r["percent_from_voltage"] is False, r
        assert r["voltage_v"] == 4.125 and r["charge_rate_pct_per_h"] == -8.112, r


def test_the_ina219_driver_reads_voltage_and_current_and_estimates_the_charge(run):
    status, text = step(run, "ina219")
    assert status == 0, text
    (r,) = readings(text)
    assert r["address"] == "0x43" and r["voltage_v"] == 3.84 and r["current_ma"] == -25.0, r
    # 3.84 V on the lithium cell's curve: between 3.80 V (45 %) and 3.90 V (63 %).
    assert r["percent_from_voltage"] is True and abs(r["percent"] - 52.2) < 0.01, r


def test_the_pisugar3_driver_reads_its_registers_and_clears_the_power_buttons_request(run):
    status, text = step(run, "pisugar3")
    assert status == 0, text
    (r,) = readings(text)
    assert r["percent"] == 67 and r["voltage_v"] == 3.912 and r["external_power"] is True and r["power_button"] is True, r
    # The request bit (3) cleared, soft power-off still enabled (bit 4), the registers locked again.
    assert step(run, "pisugar3_ctrl2") == (0, "0x10\n")
    assert step(run, "pisugar3_lock") == (0, "0x00\n")
    status, text = step(run, "pisugar3_again")
    assert status == 0 and readings(text)[0]["power_button"] is False, text


def test_a_wrong_chip_a_missing_device_and_a_missing_bus_are_named(run):
    status, text = step(run, "notina219")
    assert status != 0 and "is no ina219" in text and "which no INA219 holds" in text and "check [battery] gauge and address" in text, text
    status, text = step(run, "wrongchip")
    assert status != 0 and "is no max17048" in text and "not a MAX17048/MAX17049's 0x001X" in text, text
    status, text = step(run, "nodevice")
    assert status != 0 and "nothing answers at 0x41" in text and "check the wiring" in text, text
    status, text = step(run, "nobus")
    assert status != 0 and "no I2C bus at /dev/i2c-99" in text, text
