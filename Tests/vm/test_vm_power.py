"""Issue 31: the battery's clean end and boot to ride-ready, on the installed system (docs/power.md).

- The shutdown path: the installed Debian guest with a MAX17048 on i2c-stub at 60 %, a ride; the
  gauge drops to 4 %; the app pauses the ride, makes it durable and asks for the power-off
  through /run/bikecomputer/power-off and the path unit (no privilege of its own); the guest
  powers off by itself (QEMU exits, the kernel says "reboot: Power down"). The next boot, the
  pack recharged: the ride is recovered paused, resumed, ended; the FIT file's device_info
  carries the unit's battery at the start (60 %) and at the end (80 %, charging).
- Boot to ride-ready: a boot with the wiring configured, timed by systemd-analyze (kernel,
  userspace, the app's critical chain) and by the app's own CLOCK_MONOTONIC stamps (its first
  screen wholly on the panel, its buttons in the loop).
"""
from __future__ import annotations

import json
import pathlib

import pytest

import system
import system_fixtures as sf
from conftest import guest_result, launcher, prepared

HERE = pathlib.Path(__file__).resolve().parent


def prepare_outdir(name: str) -> pathlib.Path:
    out = sf.prepare_outdir(name)
    for f in ["guest_power.py", "guest_powercut.py"]:
        (out / f).write_text((HERE / f).read_text())
    return out


def script(scenario: str, *args: str) -> str:
    return f"python3 /out/guest_power.py {scenario} {' '.join(args)}"


def power_off_run(k):
    vm = system.System(k, sf.installed(k))
    out = prepare_outdir("power-off")
    data = system.make_data_disk(out / "data.img", 64)
    first = vm.run(script("poweroff-1"), timeout_s=400, data_image=data, outdir=out, name="power-off")
    before = sf.record_of(first)
    (out / "record-1.json").write_text(json.dumps(before))
    (out / "record.json").unlink(missing_ok=True)
    second = vm.run(script("poweroff-2"), timeout_s=300, data_image=data, outdir=out, name="power-off")
    after = sf.record_of(second)
    assert second.ok and not after["errors"], sf.explain(second, after)
    return first, before, after, out


def boot_timing_run(k):
    vm = system.System(k, sf.installed(k))
    out = prepare_outdir("boot-timing")
    data = system.make_data_disk(out / "data.img", 64)
    first = vm.run(script("configure"), timeout_s=300, data_image=data, outdir=out, name="boot-timing")
    assert first.ok, first.describe()
    second = vm.run(script("boot-timing"), timeout_s=300, data_image=data, outdir=out, name="boot-timing")
    r = sf.record_of(second)
    assert second.ok and not r["errors"], sf.explain(second, r)
    (system.CACHE / "boot-timing.json").write_text(json.dumps(r, indent=1))
    return r


@launcher(__name__, order=2)
def _start(request):
    k = request.getfixturevalue("amd64")
    off = sf.Background(lambda: power_off_run(k))
    timing = sf.Background(lambda: boot_timing_run(k))
    return sf.Background(lambda: {"off": off.wait(), "timing": timing.wait()})


@pytest.fixture(scope="module")
def off(guests):
    return prepared("the power-off guest", lambda: guest_result(guests, __name__)["off"])


@pytest.fixture(scope="module")
def timing(guests):
    return prepared("the boot-timing guest", lambda: guest_result(guests, __name__)["timing"])


def test_at_the_critical_level_the_ride_is_paused_and_the_board_powers_off_by_itself(off):
    first, before, _, _ = off
    assert not first.timed_out, "the guest did not power off:\n" + first.describe()
    assert not before["errors"], sf.explain(first, before)
    assert "reboot: Power down" in first.console, first.describe()
    assert before["path_unit"] == "active", before
    assert before["before"]["battery"]["percent"] == 60.0 and before["before"]["state"] == "running", before
    p = before["paused"]
    assert p["state"] == "paused" and p["ride_id"] == before["before"]["ride_id"], p
    assert p["battery"]["level"] == "critical" and p["battery"]["power_off"] == "battery critical", p
    log = (first.outdir / "journal-1.log").read_text(errors="replace")
    assert "power: power-off asked for (battery critical); the journal is durable" in log, log[-3000:]
    # The path unit started the power-off unit, and the kernel powered down (asserted above). The
    # unit's own lines come during the shutdown, which may stop the journal follower first (seen
    # once: the log ended at "Starting bikecomputer-poweroff.service"); when they are there they
    # must say it succeeded.
    assert "Starting bikecomputer-poweroff.service" in log, log[-3000:]
    if "bikecomputer-poweroff.service" in log.split("Starting bikecomputer-poweroff.service", 1)[1]:
        tail = log.split("Starting bikecomputer-poweroff.service", 1)[1]
        assert "Failed" not in tail and "failed" not in tail, log[-3000:]


def test_after_the_recharge_the_ride_is_recovered_paused_and_goes_on(off):
    _, before, after, _ = off
    a = after["after_boot"]
    assert a["recovered"] and a["state"] == "paused" and a["ride_id"] == before["paused"]["ride_id"], a
    assert a["timer_ms"] >= before["paused"]["timer_ms"] - 1000, (before["paused"], a)
    assert after["recharged"]["percent"] == 80.0 and after["recharged"]["charging"] is True, after["recharged"]
    # A clean power-off unmounts the file systems: the next boot's mounts replay no journal.
    ext4 = after["kernel_ext4"]
    assert any("vdb" in line and "mounted filesystem" in line for line in ext4), ext4
    assert not [line for line in ext4 if "recovery" in line.lower() or "error" in line.lower()], ext4


def test_the_fit_file_carries_the_units_battery_at_start_and_end(off):
    import fitdecode
    _, _, _, out = off
    units = []
    with fitdecode.FitReader(str(out / "poweroff.fit"), check_crc=fitdecode.CrcCheck.RAISE) as fit:
        for frame in fit:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "device_info" \
                    and frame.get_value("device_index", fallback=None) in (0, "creator") \
                    and frame.get_value("battery_level", fallback=None) is not None:
                units.append({f: frame.get_value(f, fallback=None) for f in ["battery_level", "battery_status", "battery_voltage"]})
    assert len(units) == 2, units
    start, end = units
    assert start["battery_level"] == 60 and start["battery_status"] == "good" and abs(start["battery_voltage"] - 3.92) < 0.01, start
    assert end["battery_level"] == 80 and end["battery_status"] == "charging" and abs(end["battery_voltage"] - 4.02) < 0.01, end
    sf.fit_records(out / "poweroff.fit")  # Garmin's SDK reads the whole file without errors


def test_boot_to_ride_ready_is_measured(timing):
    b = timing["boot"]
    assert b["first_frame_ms"] and b["buttons_ready_ms"] and b["process_start_ms"], b
    assert b["process_start_ms"] <= b["buttons_ready_ms"] and b["process_start_ms"] <= b["first_frame_ms"], b
    t = timing["timestamps_ms"]
    # systemd started the app's main process before its own clock says it began (the exec, the
    # dynamic loader, the Swift runtime in between), and the unit after the data partition.
    assert t["bikecomputer.service:ExecMainStart"] <= b["process_start_ms"], (t, b)
    assert t["var-lib-bikecomputer.mount:ActiveEnter"] <= t["bikecomputer.service:InactiveExit"], t
    print("boot to ride-ready (VM, TCG):", json.dumps({"boot": b, "timestamps_ms": t, "analyze": timing["analyze_time"].strip(),
                                                        "chain": timing["critical_chain"]}, indent=1))
