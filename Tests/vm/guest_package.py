"""The rider's side of the package test (Tests/vm/test_vm_package.py), run in a booted Debian 12
arm64 guest as root by its python3: the Debian package installed with `apt install ./….deb` as
docs/board.md tells a rider (the guest has no network: what apt needs is there or in the .deb),
the units as installed, a ride end to end through them, an upgrade with the ride in progress,
`apt remove` (the rides stay), the package again, `apt purge`. Writes /out/record.json.

    python3 /out/guest_package.py --previous /out/previous.deb --current /out/current.deb

Shares its helpers with guest_system.py (the ride through gpio-sim buttons, the status, the
bridge replaying a recorded ride as the rider's paired sensors).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import stat
import subprocess
import sys
import time

sys.path.insert(0, "/out")
import guest_system as gs  # noqa: E402
from guest_system import LAP, START, note, package_state, run, status, unit, wait_for  # noqa: E402

record = gs.record
UNITS = ["bikecomputer", "bikebridge", "bikecompanion"]


def apt(*args: str) -> dict:
    """apt as a rider types it (`apt install ./x.deb`, `apt remove bikecomputer`), answered yes;
    its output, exit status and time."""
    started = time.monotonic()
    r = subprocess.run(["apt", "-y", *args], capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    out = {"args": list(args), "status": r.returncode, "seconds": round(time.monotonic() - started, 1),
           "output": (r.stdout + r.stderr)[-4000:]}
    note("apt " + " ".join(args), status=r.returncode, seconds=out["seconds"])
    if r.returncode != 0:
        raise RuntimeError(f"apt {' '.join(args)} failed ({r.returncode}):\n{out['output']}")
    return out


def mode_owner(path: str) -> dict:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {"exists": False}
    import grp
    import pwd
    return {"exists": True, "mode": oct(stat.S_IMODE(st.st_mode)), "user": pwd.getpwuid(st.st_uid).pw_name,
            "group": grp.getgrgid(st.st_gid).gr_name}


def units_state() -> dict:
    out = {}
    for u in UNITS:
        show = unit(u)
        show["enabled"] = run("systemctl", "is-enabled", f"{u}.service", check=False).strip()
        show["fragment"] = run("systemctl", "show", f"{u}.service", "-p", "FragmentPath", "--value", check=False).strip()
        out[u] = show
    return out


def rides() -> list[str]:
    return sorted(str(p.relative_to(gs.DATA)) for p in gs.DATA.rglob("*.fit"))


def after_install(what: str) -> dict:
    """What the install left: the package's state, the units, users, directories, device nodes."""
    wait_for(lambda: unit("bikecomputer")["ActiveState"] == "active", 60, f"bikecomputer active after {what}")
    groups = {u: run("id", "-nG", u, check=False).split() for u in ("bike", "bikebridge")}
    devices = {}
    for pattern in ("gpiochip*", "i2c-*"):
        for d in sorted(pathlib.Path("/dev").glob(pattern)):
            devices[str(d)] = mode_owner(str(d))
    return {"package": package_state(), "units": units_state(), "groups": groups,
            "etc": mode_owner("/etc/bikecomputer"), "config": mode_owner("/etc/bikecomputer/config.toml"),
            "data": mode_owner("/var/lib/bikecomputer"), "devices": devices,
            # The tmpfiles directories (board/tmpfiles.d, /usr/lib/tmpfiles.d in the package).
            "run_dir": mode_owner("/run/bikecomputer"), "rides_dir": mode_owner("/var/lib/bikecomputer/rides"),
            "poweroff_path": {"enabled": run("systemctl", "is-enabled", "bikecomputer-poweroff.path", check=False).strip(),
                              "active": run("systemctl", "is-active", "bikecomputer-poweroff.path", check=False).strip()},
            "binaries": {b: mode_owner(f"/usr/bin/{b}") for b in ("bikecomputer", "bikecompanion")},
            "version": run("bikecomputer", "--version", check=False).strip(),
            "conffiles": run("dpkg-query", "-W", "-f=${Conffiles}", "bikecomputer", check=False).split(),
            "bridge_python": run("systemctl", "show", "bikebridge.service", "-p", "ExecStart", "--value", check=False)[:300]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--previous", required=True)
    p.add_argument("--current", required=True)
    a = p.parse_args()
    try:
        record["before"] = {"package": package_state(), "users": run("getent", "passwd", "bike", check=False).strip()}
        # 1. The previous version, installed as a rider installs it.
        record["install"] = apt("install", a.previous)
        record["installed"] = after_install("the install")
        # 2. Wired and paired as a rider does (the conffile is now the rider's), a ride with the units.
        gs.configure(companion=False)
        rider_config = gs.CONFIG.read_text()
        gs.start_units()
        gs.ride_running()
        note("running")
        time.sleep(4)
        gs.press(LAP, hold_s=1.0)
        time.sleep(2.5)
        # The rider has no phone companion and turns its unit off: the upgrade must leave it off.
        run("systemctl", "disable", "bikecompanion.service")
        record["rider_disabled"] = run("systemctl", "is-enabled", "bikecompanion.service", check=False).strip()
        before = status()
        record["before_upgrade"] = {"state": before["state"], "timer_ms": before["timer_ms"],
                                    "pid": unit("bikecomputer")["MainPID"], "version": before.get("version")}
        # 3. The upgrade, with the ride in progress.
        record["upgrade"] = apt("install", a.current)
        st = wait_for(status, 90, "the control socket answers after the upgrade")
        after = {"state": st["state"], "timer_ms": st["timer_ms"], "recovered": st.get("recovered"),
                 "pid": unit("bikecomputer")["MainPID"], "package": package_state()}
        record["after_upgrade"] = after
        record["config_kept"] = gs.CONFIG.read_text() == rider_config
        wait_for(lambda: gs.sensor_state(status(), "HR") == "connected" and gs.sensor_state(status(), "PWR") == "connected",
                 60, "the sensors back through the restarted bridge")
        record["units_after_upgrade"] = units_state()
        time.sleep(3)
        going = status()
        record["going_on"] = {"state": going["state"], "timer_ms": going["timer_ms"]}
        gs.end_ride()
        fits = wait_for(rides, 60, "the ride's FIT file")
        run("cp", str(gs.DATA / fits[-1]), "/out/package-ride.fit")
        record["rides_before_remove"] = fits
        record["rides_listed"] = json.loads(run("bikecomputer", "rides", "list", "--json"))
        # 4. apt remove: the program goes, the rides and the rider's config stay.
        record["remove"] = apt("remove", "bikecomputer")
        record["removed"] = {"package": package_state(), "units": units_state(), "rides": rides(),
                             "config_kept": gs.CONFIG.exists() and gs.CONFIG.read_text() == rider_config,
                             "binaries": {b: mode_owner(f"/usr/bin/{b}") for b in ("bikecomputer", "bikecompanion")},
                             "bridge_dir": mode_owner("/usr/lib/bikecomputer"),
                             "users": run("getent", "passwd", "bike", "bikebridge", check=False).split("\n")}
        # 5. Back again: the rides are there for it.
        record["reinstall"] = apt("install", a.current)
        record["reinstalled"] = after_install("the reinstall")
        record["rides_listed_after_reinstall"] = json.loads(run("bikecomputer", "rides", "list", "--json"))
        record["config_kept_over_reinstall"] = gs.CONFIG.read_text() == rider_config
        # 6. apt purge: the configuration goes, the rides stay.
        record["purge"] = apt("purge", "bikecomputer")
        record["purged"] = {"package": package_state(), "etc": mode_owner("/etc/bikecomputer"), "units": units_state(),
                            "default": mode_owner("/etc/default/bikebridge"), "rides": rides()}
    except Exception as e:
        record["errors"].append(f"{type(e).__name__}: {e}")
        record["journal_app_on_error"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]
        record["journal_bridge_on_error"] = run("journalctl", "-u", "bikebridge", "--no-pager", "-o", "cat", check=False)[-2000:]
        gs.save()
        raise
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-6000:]
    gs.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
