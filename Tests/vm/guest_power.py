"""The rider's side of the power VM tests (Tests/vm/test_vm_power.py, test_vm_powercut.py), run
inside the installed Debian guest by its own python3 as root, beside guest_system.py (whose
helpers it uses: the config, the buttons, the status, the ride):

    python3 /out/guest_power.py SCENARIO [options]

- poweroff-1: a MAX17048 on i2c-stub at 60 %; a ride; the gauge drops to 4 %: the app pauses the
  ride, makes it durable, asks for the power-off (its request file, the path unit); the guest
  powers off by itself (the host sees QEMU exit).
- poweroff-2: the next boot, the pack recharged (80 %): the ride recovered paused, resumed,
  ended; its FIT file in /out.
- configure: the wiring's config as a rider sets it, then a clean power-off (the next boot is
  measured).
- boot-timing: what the boot took, by systemd-analyze and by the app's own stamps.
- powercut: one iteration of the power-cut loop (see `scenario_powercut`).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

sys.path.insert(0, "/out")
import guest_system as gs  # noqa: E402

OUT = pathlib.Path("/out")
record: dict = gs.record


def save() -> None:
    p = OUT / "record.json.tmp"
    p.write_text(json.dumps(record, indent=1))
    os.replace(p, OUT / "record.json")


def stub_bus() -> int | None:
    for a in pathlib.Path("/sys/class/i2c-adapter").glob("i2c-*"):
        if (a / "name").read_text().strip() == "SMBus stub driver":
            return int(a.name.split("-")[1])
    return None


def swapped(v: int) -> int:
    return ((v & 0xFF) << 8) | (v >> 8)


def gauge(bus: int, soc_percent: float, vcell_v: float, crate_pct_h: float) -> None:
    """The MAX17048's registers as the chip would hold them (i2c-stub: words stored swapped)."""
    regs = {0x08: 0x0012, 0x02: int(vcell_v / 78.125e-6), 0x04: int(soc_percent * 256),
            0x16: int(round(crate_pct_h / 0.208)) & 0xFFFF}
    for r, v in regs.items():
        gs.run("i2cset", "-y", str(bus), "0x36", hex(r), f"{swapped(v):#06x}", "w")


def load_gauge() -> int:
    if stub_bus() is None:
        gs.run("modprobe", "i2c-stub", "chip_addr=0x36")
    bus = stub_bus()
    assert bus is not None, "no i2c-stub adapter"
    return bus


def with_battery(bus: int) -> None:
    """[battery] in the config as a rider adds it (docs/power.md)."""
    text = gs.CONFIG.read_text()
    if "[battery]" in text:
        text = re.sub(r"(?ms)^\[battery\].*?(?=^\[|\Z)", "", text)
    text += f'\n[battery]\nenabled = true\ngauge = "max17048"\nbus = {bus}\n'
    gs.CONFIG.write_text(text)
    gs.run("bikecomputer", "config", "check", str(gs.CONFIG))


def battery(st: dict) -> dict:
    return st.get("battery") or {}


def follow_journal(name: str) -> subprocess.Popen:
    """The app's and the power-off units' journal, written to /out as it comes (the guest may
    power off at any moment)."""
    f = open(OUT / name, "w")
    return subprocess.Popen(["journalctl", "-f", "-n", "50", "-o", "short-monotonic", "-u", "bikecomputer",
                             "-u", "bikecomputer-poweroff.path", "-u", "bikecomputer-poweroff.service", "-u", "systemd-logind"],
                            stdout=f, stderr=subprocess.STDOUT)


# ------------------------------------------------------------------------------ power-off

def scenario_poweroff_1(a) -> None:
    gs.configure(companion=False)
    bus = load_gauge()
    gauge(bus, 60, 3.92, -8.3)
    with_battery(bus)
    follow_journal("journal-1.log")
    gs.start_units()
    gs.wait_for(lambda: battery(gs.status()).get("percent") == 60.0, 30, "the gauge's 60 % in the status")
    record["path_unit"] = gs.run("systemctl", "is-active", "bikecomputer-poweroff.path", check=False).strip()
    gs.ride_running()
    time.sleep(5)
    before = gs.status()
    record["before"] = {"state": before["state"], "timer_ms": before["timer_ms"], "ride_id": before["ride_id"],
                        "battery": battery(before)}
    save()
    # The pack runs down: the gauge says 4 %, 3.45 V.
    gauge(bus, 4, 3.45, -9.0)
    t = time.monotonic()
    paused = gs.wait_for(lambda: (lambda s: s if s["state"] == "paused" else None)(gs.status()), 30,
                         "the ride paused at the critical level")
    record["paused_after_s"] = round(time.monotonic() - t, 2)
    record["paused"] = {"state": paused["state"], "timer_ms": paused["timer_ms"], "ride_id": paused["ride_id"],
                        "battery": battery(paused)}
    save()
    # Follow the status until the power goes (each one saved: the last saved is the last seen).
    while True:
        try:
            st = gs.status()
            record["last_status"] = {"state": st["state"], "timer_ms": st["timer_ms"], "battery": battery(st),
                                     "t_s": round(time.monotonic() - t, 2)}
            save()
        except Exception as e:  # noqa: BLE001 - the app stopped: the power-off is under way
            record["status_gone"] = f"{type(e).__name__}: {e}"
            record["status_gone_after_s"] = round(time.monotonic() - t, 2)
            save()
            break
        time.sleep(0.25)
    time.sleep(120)  # the power-off ends this; the host's timeout says it did not come


def scenario_poweroff_2(a) -> None:
    record["boot_unit"] = gs.unit("bikecomputer")
    st = gs.wait_for(gs.status, 60, "the app after the power-off")
    record["after_boot"] = {"state": st["state"], "timer_ms": st["timer_ms"], "ride_id": st["ride_id"],
                            "recovered": st.get("recovered"), "battery": battery(st)}
    bus = load_gauge()
    gauge(bus, 80, 4.02, +25.0)  # recharged, the charger still in
    st = gs.wait_for(lambda: (lambda s: s if battery(s).get("percent") == 80.0 else None)(gs.status()), 40,
                     "the recharged pack read (the gauge retried every 10 s)")
    record["recharged"] = battery(st)
    # The VM's journal is in memory: the last boot's log is gone; its kernel's mounts say
    # whether the file systems were unmounted cleanly.
    record["kernel_ext4"] = [line for line in gs.run("journalctl", "-k", "-b", "--no-pager", "-o", "cat", check=False).splitlines()
                             if "EXT4-fs" in line]
    gs.wait_for(lambda: gs.sensor_state(gs.status(), "HR") == "connected", 30, "the bridge feeds the recovered ride")
    gs.press_until(gs.START, "running", "resumed")
    time.sleep(3)
    record["end"] = gs.end_ride()
    fits = gs.wait_for(lambda: gs.fit_files(), 30, "the ride file")
    gs.run("cp", fits[-1], str(OUT / "poweroff.fit"))
    record["journal_app"] = gs.run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]


# ------------------------------------------------------------------------------ boot timing

def scenario_configure(a) -> None:
    """The wiring's config (the next boot's app finds its display and buttons), then a clean
    power-off."""
    gs.configure(companion=False)
    gs.start_units()
    (OUT / "clean-poweroff").write_text("")


def scenario_boot_timing(a) -> None:
    """What this boot took: systemd-analyze (kernel, userspace, the app's critical chain, blame)
    and the app's own stamps (CLOCK_MONOTONIC ms since the kernel started: the process, its first
    screen wholly on the panel, its buttons in the loop)."""
    st = gs.wait_for(gs.status, 60, "the app's status")
    gs.wait_for(lambda: (gs.status().get("boot") or {}).get("first_frame_ms"), 30, "the first frame")
    record["boot"] = gs.status().get("boot")
    record["display_pages_sent"] = (st.get("display") or {}).get("pages_sent")
    for _ in range(60):
        r = subprocess.run(["systemd-analyze", "time"], capture_output=True, text=True)
        if r.returncode == 0:
            break
        time.sleep(1)  # "Bootup is not yet finished" while vm-test.service itself runs
    record["analyze_time"] = r.stdout + r.stderr
    record["critical_chain"] = gs.run("systemd-analyze", "critical-chain", "bikecomputer.service", check=False)
    record["blame"] = gs.run("systemd-analyze", "blame", "--no-pager", check=False)[:4000]
    record["critical_chain_basic"] = gs.run("systemd-analyze", "critical-chain", "basic.target", check=False)
    # When each step of the way was reached (CLOCK_MONOTONIC ms, the kernel's start = 0).
    t: dict = {}
    for u in ["bikecomputer.service", "var-lib-bikecomputer.mount", "systemd-fsck@dev-vdb.service", "dev-vdb.device",
              "systemd-udev-trigger.service", "vm-hardware.service", "local-fs.target", "sysinit.target", "basic.target",
              "systemd-timesyncd.service", "systemd-random-seed.service", "multi-user.target", "bikebridge.service"]:
        props = gs.run("systemctl", "show", u, "-p", "InactiveExitTimestampMonotonic,ActiveEnterTimestampMonotonic,ExecMainStartTimestampMonotonic",
                       check=False)
        for line in props.splitlines():
            k, _, v = line.partition("=")
            if v.isdigit() and int(v) > 0:
                t[f"{u}:{k.replace('TimestampMonotonic', '')}"] = int(v) // 1000
    record["timestamps_ms"] = t
    record["unit_file"] = gs.run("systemctl", "cat", "bikecomputer.service", check=False)
    record["uptime"] = pathlib.Path("/proc/uptime").read_text()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["poweroff-1", "poweroff-2", "configure", "boot-timing", "powercut"])
    p.add_argument("--iteration", type=int, default=0)
    p.add_argument("--activity", default="ride")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fn = {"poweroff-1": scenario_poweroff_1, "poweroff-2": scenario_poweroff_2, "configure": scenario_configure,
          "boot-timing": scenario_boot_timing}
    if a.scenario == "powercut":
        import guest_powercut
        fn["powercut"] = guest_powercut.scenario_powercut
    try:
        fn[a.scenario](a)
    except Exception as e:
        record["errors"].append(f"{type(e).__name__}: {e}")
        record["journal_app_on_error"] = gs.run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]
        save()
        raise
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
