"""One iteration of the power-cut loop over the whole installed system (Tests/vm/test_vm_powercut.py,
docs/power.md "Power cuts over the whole system"), inside the guest:

1. the checks of what the last cut left: the app running and answering, a valid config that
   is one the rider had, the data partition checked and mounted, the binaries whole, every ride
   whose end the app had shown durable in the ride list (once), the ride in progress recovered
   with at most 1 s lost, a whole USB drive image; written to /out/check-N.json;
2. the activity the host chose (`--activity`), during which the host pulls the plug: the guest
   writes /out/armed-N as the activity begins and, after $CUT_DELAY_S seconds,
   /out/pull-the-plug (the host kills QEMU within a few ms of it appearing). "boot" cuts are
   made by the host during the boot itself.

The Debian package's system (Tests/vm/test_vm_package_powercut.py) sets PACKAGE_PREVIOUS and
PACKAGE_CURRENT (the two .deb files in /out): the set-up installs the previous one with apt, the
binaries are /usr/bin's, and the "package-upgrade" activity is `apt install` of the other
version with a ride in progress, cut while dpkg unpacks and configures it. The checks after such
a cut also finish the upgrade as docs/board.md tells a rider to (`dpkg -i` of the same file) and
require the package installed and the ride still there.

What the rider saw is kept in /out/ledger.json (the host's disk: it survives the cut): the rides
whose end was durable, the ride in progress with its last shown timer and state, a state change
in flight, and the config's shapes.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading
import time
import tomllib

import guest_system as gs

OUT = pathlib.Path("/out")
LEDGER = OUT / "ledger.json"
PAIRED = "C0:FF:EE:00:55:66"
USB_IMAGE = gs.DATA / "usb.img"
# install.sh's binaries, or the package's (/usr/bin).
BIN_DIR = os.environ.get("BIN_DIR", "/usr/local/bin")
PACKAGES = {"previous": os.environ.get("PACKAGE_PREVIOUS"), "current": os.environ.get("PACKAGE_CURRENT")}
# apt's line from which the cut's delay counts (PACKAGE_CUT_LINE, test_vm_package_powercut.PHASES:
# the old version's prerm, the unpacking, the postinst); every line's time is counted from the first.
PACKAGE_UNPACK_LINE = "Preparing to unpack"
PACKAGE_CUT_LINE = os.environ.get("PACKAGE_CUT_LINE", PACKAGE_UNPACK_LINE)
lock = threading.Lock()


def load() -> dict:
    if LEDGER.exists():
        return json.loads(LEDGER.read_text())
    return {"rides_ended": [], "in_progress": None, "pending_state": None, "base_config": None, "iterations": []}


def store(ledger: dict) -> None:
    with lock:
        p = OUT / "ledger.json.tmp"
        p.write_text(json.dumps(ledger, indent=1))
        os.replace(p, LEDGER)


def sh(*cmd: str, timeout: float = 120) -> tuple[int, str]:
    """(exit status, output); a program that cannot be run at all (missing, not executable) is
    status 126 with the reason, so the checks say it instead of stopping."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except OSError as e:
        return 126, f"{cmd[0]}: {e}"
    return r.returncode, (r.stdout + r.stderr)


def config_shape(text: str) -> dict:
    """The config without the sensor this loop pairs and forgets: what must survive any cut."""
    c = tomllib.loads(text)
    c["sensor"] = [s for s in c.get("sensor", []) if s.get("ble_address") != PAIRED]
    return c


# ------------------------------------------------------------------------------ checks

def checks(ledger: dict, it: int) -> dict:
    c: dict = {"iteration": it, "failures": []}

    def fail(what: str) -> None:
        c["failures"].append(what)

    t = time.monotonic()
    try:
        st = gs.wait_for(gs.status, 90, "the app's control socket after the cut")
        c["app_up_s"] = round(time.monotonic() - t, 1)
    except TimeoutError as e:
        fail(f"the app is not running: {e}; unit {gs.unit('bikecomputer')}")
        c["app_log"] = gs.run("journalctl", "-b", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-3000:]
        st = None
    c["unit"] = gs.unit("bikecomputer")
    # The binaries and the units are whole.
    for b in [f"{BIN_DIR}/bikecomputer", f"{BIN_DIR}/bikecompanion"]:
        code, out = sh(b, "--version")
        if code != 0:
            fail(f"{b} --version: exit {code}: {out[-300:]} (size {os.path.getsize(b) if os.path.exists(b) else 'missing'})")
    for u in ["bikecomputer.service", "bikebridge.service", "bikecomputer-poweroff.path"]:
        code, out = sh("systemctl", "is-enabled", u)
        if out.strip() != "enabled":
            fail(f"{u} is {out.strip()!r}, not enabled")
    # A valid config, the one the rider had (a paired sensor or not).
    code, out = sh("bikecomputer", "config", "check", str(gs.CONFIG))
    if code != 0:
        fail(f"config check: exit {code}: {out[-500:]}")
    else:
        try:
            if ledger["base_config"] is not None and config_shape(gs.CONFIG.read_text()) != ledger["base_config"]:
                fail(f"the config is not one the rider had:\n{gs.CONFIG.read_text()[-1500:]}")
        except Exception as e:  # noqa: BLE001
            fail(f"the config does not parse: {e}")
    # The data partition: checked at boot (systemd-fsck), mounted, no ext4 error since.
    code, out = sh("systemctl", "show", "systemd-fsck@dev-vdb.service", "-p", "Result,ExecMainStatus,ActiveState")
    c["fsck_data"] = out.strip()
    if "Result=success" not in out:
        fail(f"the data partition's fsck: {out.strip()}")
    code, out = sh("findmnt", "-n", "-o", "SOURCE,OPTIONS", str(gs.DATA))
    c["data_mount"] = out.strip()
    if code != 0 or "rw" not in out.split()[-1].split(","):
        fail(f"the data partition is not mounted read-write: {out.strip()}")
    kernel = gs.run("journalctl", "-k", "-b", "--no-pager", "-o", "cat", check=False)
    c["ext4_lines"] = [line for line in kernel.splitlines() if "EXT4-fs" in line][-12:]
    if any("error" in line.lower() or "read-only" in line.lower() for line in c["ext4_lines"]):
        fail(f"ext4 reported errors: {c['ext4_lines']}")
    # Every ride whose end was durable is listed, once (its file may be written at this start).
    want = set(ledger["rides_ended"])
    if want:
        try:
            listed = gs.wait_for(lambda: (lambda ids: ids if want <= set(ids) else None)([e["id"] for e in gs.rides_list()]), 60,
                                 "every ended ride in the ride list")
            dupes = sorted({i for i in listed if listed.count(i) > 1})
            if dupes:
                fail(f"rides listed more than once: {dupes}")
        except TimeoutError as e:
            fail(f"rides lost: {sorted(want - {x['id'] for x in gs.rides_list()})}: {e}")
    c["rides_listed"] = len(gs.rides_list()) if st else None
    # The ride in progress came back: the same ride, at most a second of it lost.
    p = ledger.get("in_progress")
    if p and st:
        st = gs.status()
        c["recovered"] = {"ride_id": st.get("ride_id"), "state": st["state"], "timer_ms": st["timer_ms"], "was": p,
                          "pending": ledger.get("pending_state")}
        # The timer when the ride was recovered: a running ride's timer has run on since (for
        # the app's uptime); a paused one's stands.
        at_recovery = st["timer_ms"] - (st.get("uptime_ms") or 0) if st["state"] == "running" else st["timer_ms"]
        c["recovered"]["timer_at_recovery_ms"] = at_recovery
        ended_since = ledger.get("pending_state") == "ended" and p["ride_id"] in {e["id"] for e in gs.rides_list()}
        if not ended_since:
            if st.get("ride_id") != p["ride_id"]:
                fail(f"the ride in progress ({p['ride_id']}) was not recovered: the app has {st.get('ride_id')} ({st['state']})")
            else:
                allowed = {p["state"], ledger.get("pending_state") or p["state"]}
                if "ended" in allowed:
                    allowed |= {"paused", "stopped"}
                if st["state"] not in allowed:
                    fail(f"recovered {st['state']}, the ride was {p['state']} (pending {ledger.get('pending_state')})")
                lost = p["timer_ms"] - at_recovery
                c["lost_ms"] = lost
                if lost > 1000:
                    fail(f"{lost} ms of the ride lost (shown {p['timer_ms']} ms before the cut, {at_recovery} ms when recovered)")
    # The USB drive's image is whole (the old one or the new one).
    if USB_IMAGE.exists():
        code, out = sh("env", "MTOOLS_SKIP_CHECK=1", "mdir", "-b", "-i", str(USB_IMAGE), "::/")
        c["usb_image"] = {"exit": code, "size": USB_IMAGE.stat().st_size}
        if code != 0:
            fail(f"the USB drive image does not read: {out[-300:]}")
    c["boot_s"] = float(pathlib.Path("/proc/uptime").read_text().split()[0])
    if ledger.get("upgrading_to"):
        finish_the_upgrade(ledger, c, fail)
    # Whole or not at all: the host may act on the file's appearance.
    (OUT / f"check-{it}.json.tmp").write_text(json.dumps(c, indent=1))
    os.replace(OUT / f"check-{it}.json.tmp", OUT / f"check-{it}.json")
    return c


def apt_install(deb: str, timeout: float = 900) -> tuple[int, str]:
    r = subprocess.run(["apt", "-y", "--allow-downgrades", "install", deb], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    return r.returncode, (r.stdout + r.stderr)


def finish_the_upgrade(ledger: dict, c: dict, fail) -> None:
    """After a cut during `apt install` of the package: what dpkg was left with, then the rider's
    recovery (docs/board.md, "If the power goes during an upgrade"): `dpkg -i` of the same file;
    the package must end installed ("ii") at that version with `dpkg --audit` silent, the app up
    and the ride in progress still its own. (`dpkg --configure -a` and `apt install` again do
    not do it: a cut in the old version's prerm leaves it "reinstall required" at the old
    version, and apt then wants that version's archive — measured, stop 40.)"""
    target = ledger["upgrading_to"]
    f: dict = {"left": gs.package_state(), "target": target}
    f["audit"] = sh("dpkg", "--audit")[1][-1500:]
    r = subprocess.run(["dpkg", "-i", PACKAGES[target]], capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    f["dpkg_exit"], f["dpkg_output"] = r.returncode, (r.stdout + r.stderr)[-1500:]
    if r.returncode != 0:
        fail(f"dpkg -i {PACKAGES[target]} after the cut: exit {r.returncode}: {f['dpkg_output'][-800:]}")
    f["state"] = gs.package_state()
    want_previous = target == "previous"
    if not f["state"].startswith("ii ") or f["state"].endswith("~previous") != want_previous:
        fail(f"after the recovery the package is {f['state']!r}, not installed at the {target} version")
    try:
        st = gs.wait_for(gs.status, 90, "the app after the upgrade was finished")
        was = (ledger.get("in_progress") or {}).get("ride_id")
        f["after"] = {"state": st["state"], "ride_id": st.get("ride_id")}
        if was and ledger.get("pending_state") != "ended" and st.get("ride_id") != was:
            fail(f"the ride in progress ({was}) is gone after the recovery: the app has {st.get('ride_id')}")
    except TimeoutError as e:
        fail(f"the app is not running after the recovery: {e}")
    code, f["audit_after"] = sh("dpkg", "--audit")
    if f["audit_after"].strip():
        fail(f"dpkg --audit after the recovery: {f['audit_after'][-500:]}")
    c["package"] = f
    ledger["upgrading_to"] = None
    store(ledger)


# ------------------------------------------------------------------------------ the ledger while riding

class Follower(threading.Thread):
    """Every 200 ms: what the app shows, into the ledger (the ride in progress and its timer; a
    ride whose end is durable — state `ended` — into rides_ended)."""

    def __init__(self, ledger: dict) -> None:
        super().__init__(daemon=True)
        self.ledger = ledger

    def run(self) -> None:
        while True:
            try:
                st = gs.status()
                L = self.ledger
                rid = st.get("ride_id")
                if st["state"] in ("running", "paused") and rid:
                    L["in_progress"] = {"ride_id": rid, "timer_ms": st["timer_ms"], "state": st["state"]}
                    if L.get("pending_state") == st["state"]:
                        L["pending_state"] = None
                elif st["state"] == "ended" and rid:
                    # The end is durable before the app shows `ended` (its journal's stop and
                    # finished records synced: docs/board.md, "Control from a shell").
                    if rid not in L["rides_ended"]:
                        L["rides_ended"].append(rid)
                    if L["in_progress"] and L["in_progress"]["ride_id"] == rid:
                        L["in_progress"] = None
                        L["pending_state"] = None
                store(L)
            except Exception:  # noqa: BLE001 - the app restarting (an upgrade), or the power going
                pass
            time.sleep(0.2)


def change(ledger: dict, button: int, want: str, what: str) -> None:
    """A state change by a button, noted as pending before the press (a cut may come before it
    is durable: either state is then right)."""
    ledger["pending_state"] = want
    store(ledger)
    gs.press_until(button, want, what)


def ensure_riding(ledger: dict) -> None:
    st = gs.status()
    if st["state"] == "paused":
        change(ledger, gs.START, "running", "resumed")
    elif st["state"] not in ("running",):
        if st["state"] == "ended":
            gs.press(gs.LAP)  # dismiss the summary
            gs.wait_for(lambda: gs.status()["state"] == "idle", 10, "idle after the summary")
        ledger["pending_state"] = "running"
        store(ledger)
        gs.ride_running()


# ------------------------------------------------------------------------------ activities

def activity_ride(ledger: dict, arm) -> None:
    ensure_riding(ledger)
    k = 0
    while True:
        time.sleep(2.5)
        k += 1
        st = gs.status()["state"]
        if k % 3 == 0:
            change(ledger, gs.START, "paused" if st == "running" else "running", "pause or resume")
        elif st == "running":
            gs.press(gs.LAP, hold_s=0.3)


def activity_pairing(ledger: dict, arm) -> None:
    while True:
        gs.run("bikecomputer", "sensors", "pair", f"ble:{PAIRED}", "--role", "cadence", "--name", "loop cadence", check=False)
        time.sleep(0.3)
        gs.run("bikecomputer", "sensors", "forget", f"ble:{PAIRED}", check=False)
        time.sleep(0.3)


def activity_ride_end(ledger: dict, arm) -> None:
    while True:
        ensure_riding(ledger)
        time.sleep(3)
        ledger["pending_state"] = "ended"
        store(ledger)
        gs.end_ride()
        gs.wait_for(lambda: gs.status()["state"] == "ended", 20, "the ride ended")
        gs.wait_for(lambda: gs.status()["ride_files"]["pending"] == 0, 60, "the ride's file written")


def activity_redating(ledger: dict, arm) -> None:
    """A ride on a stale, unsynchronised clock, saved under the board's date (its records kept
    for dating), then the clock synchronised: the ride is stored again under its true date."""
    gs.run("systemctl", "stop", "systemd-timesyncd", check=False)
    while True:
        gs.set_clock(gs.true_ms() - gs.STALE_BY_MS)
        gs.app_restarted("a start on the stale clock")
        ensure_riding(ledger)
        time.sleep(3)
        ledger["pending_state"] = "ended"
        store(ledger)
        gs.end_ride()
        gs.wait_for(lambda: gs.undated(), 30, "the ride's records kept for dating")
        gs.synchronise(gs.true_ms())
        gs.wait_for(lambda: not gs.undated(), 30, "the ride dated")


def activity_usb_refresh(ledger: dict, arm) -> None:
    while True:
        gs.run("bikecomputer", "usb-image", "--data-dir", str(gs.DATA), "--out", str(USB_IMAGE), check=False)


UPGRADE_BINARIES_LINE = os.environ.get("UPGRADE_BINARIES_LINE", "* binary and config")


def activity_upgrade(ledger: dict, arm) -> None:
    """install.sh again (or UPGRADE_COMMAND: the .deb's dpkg -i); the cut's delay counts from
    the moment it starts replacing the binaries (the line UPGRADE_BINARIES_LINE in its output),
    so it lands among those writes."""
    command = os.environ.get("UPGRADE_COMMAND") or "cd /root && board/install.sh --binary ./bikecomputer --companion ./bikecompanion --bridge-wheels ./wheels --boot-config"
    while True:
        p = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        lines = []
        for line in p.stdout:
            lines.append(line)
            if UPGRADE_BINARIES_LINE in line:
                arm()
        p.wait()
        (OUT / "upgrade.log").write_text("".join(lines)[-5000:])


# When apt finishes before the cut (the step was quicker than the seeded delay: a faster host
# than the one PHASES were measured on; the project's CI of stop 50, the postinst 16.3 s against
# a delay of 17.8 s), the upgrade goes again the other way with the cut at this fraction of the
# step's measured time, up to PACKAGE_ATTEMPTS upgrades in all.
PACKAGE_ATTEMPTS = 3
PACKAGE_RETRY_FRACTION = 0.5


def activity_package_upgrade(ledger: dict, arm: Cut) -> None:
    """`apt install ./….deb` of the other version (an upgrade to the current one, or back to the
    previous: either way dpkg unpacks over a running unit and restarts it) with a ride in
    progress; the cut's delay counts from apt's line PACKAGE_CUT_LINE; every line's time after
    dpkg's "Preparing to unpack" is kept in /out (package-upgrade-N.log), each attempt's own."""
    it = ledger["iterations"][-1]["iteration"]
    lines: list[str] = []
    log = OUT / f"package-upgrade-{it}.log"
    for attempt in range(1, PACKAGE_ATTEMPTS + 1):
        ensure_riding(ledger)
        time.sleep(2)
        target = "previous" if not gs.package_state().endswith("~previous") else "current"
        ledger["upgrading_to"] = target
        store(ledger)
        t0 = t_line = None
        p = subprocess.Popen(["apt", "-y", "--allow-downgrades", "install", PACKAGES[target]], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, bufsize=1, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        for line in p.stdout:
            if t0 is None and PACKAGE_UNPACK_LINE in line:
                t0 = time.monotonic()
            if t_line is None and PACKAGE_CUT_LINE in line:
                t_line = time.monotonic()
                arm()
            lines.append(f"{time.monotonic() - t0 if t0 else -1:7.2f} {line}")
            log.write_text("".join(lines))
        p.wait()
        # Apt done and the plug still in: the cut is not to come after it (between attempts).
        pending = arm.cancel()
        lines.append(f"{time.monotonic() - t0 if t0 else -1:7.2f} apt exit {p.returncode}\n")
        log.write_text("".join(lines))
        if p.returncode == 0:
            ledger["upgrading_to"] = None
            store(ledger)
        if t0 is None:
            raise RuntimeError(f"apt never began unpacking (exit {p.returncode}):\n{''.join(lines)[-1500:]}")
        if p.returncode != 0 or not pending:
            return  # a failed upgrade is for the checks after the cut to say; or the cut is on its way
        if t_line is None:
            raise RuntimeError(f"apt never printed {PACKAGE_CUT_LINE!r}, where the cut counts from:\n{''.join(lines)[-1500:]}")
        step_s = time.monotonic() - t_line
        arm.delay_s = round(step_s * PACKAGE_RETRY_FRACTION, 2)
        lines.append(f"attempt {attempt + 1}: apt finished {step_s:.2f} s after {PACKAGE_CUT_LINE!r}, before the cut; "
                     f"again the other way, the cut {arm.delay_s} s after that line\n")
        log.write_text("".join(lines))
        # The postinst restarted the app: the ride in progress recovered before the next attempt.
        gs.wait_for(lambda: gs.status()["state"] in ("running", "paused"), 90, "the ride after the upgrade's restart")
    raise RuntimeError(f"{PACKAGE_ATTEMPTS} upgrades all finished before the cut:\n{''.join(lines)[-1500:]}")


ACTIVITIES = {"ride": activity_ride, "pairing": activity_pairing, "ride-end": activity_ride_end, "redating": activity_redating,
              "usb-refresh": activity_usb_refresh, "upgrade": activity_upgrade,
              "package-upgrade": activity_package_upgrade}


class Cut:
    """The cut's timer: armed (once; again only after `cancel`) at the activity's start or where
    it says (upgrade), it writes /out/pull-the-plug `delay_s` seconds later and the host kills
    QEMU within a few ms."""

    def __init__(self, it: int, activity: str, delay_s: float) -> None:
        self.it, self.activity, self.delay_s = it, activity, delay_s
        self.timer: threading.Timer | None = None

    def __call__(self) -> None:
        if self.timer is not None:
            return
        (OUT / f"armed-{self.it}").write_text(f"{self.activity} {self.delay_s}\n")
        self.timer = threading.Timer(self.delay_s, self.pull)
        self.timer.daemon = True
        self.timer.start()

    def pull(self) -> None:
        (OUT / "pull-the-plug").write_text(f"iteration {self.it}, {self.delay_s:.2f} s into the activity\n")

    def cancel(self) -> bool:
        """Stops a timer that has not fired; True if it had not (the next arming starts afresh)."""
        t, self.timer = self.timer, None
        if t is None:
            return True
        t.cancel()
        t.join()
        return not (OUT / "pull-the-plug").exists()


def scenario_powercut(a) -> None:
    it = a.iteration
    ledger = load()
    if a.activity == "setup":
        if PACKAGES["previous"]:
            code, out = apt_install(PACKAGES["previous"])
            (OUT / "package-install.log").write_text(out[-5000:])
            assert code == 0, f"apt install {PACKAGES['previous']}: exit {code}:\n{out[-2000:]}"
        gs.configure(companion=False)
        gs.start_units()
        ledger["base_config"] = config_shape(gs.CONFIG.read_text())
        store(ledger)
        (OUT / "clean-poweroff").write_text("")
        return
    c = checks(ledger, it)
    ledger["iterations"].append({"iteration": it, "activity": a.activity, "failures": len(c["failures"])})
    store(ledger)
    if a.activity == "boot":
        time.sleep(600)  # the host cut during the boot; reaching here means it came late
        return
    Follower(ledger).start()
    # The bridge is needed by the ride activities (its sensors); it comes back by itself.
    gs.wait_for(lambda: gs.sensor_state(gs.status(), "HR") == "connected", 60, "the bridge's sensors")
    arm = Cut(it, a.activity, float(os.environ.get("CUT_DELAY_S", "5")))
    if a.activity not in ("upgrade", "package-upgrade"):
        arm()
    try:
        ACTIVITIES[a.activity](ledger, arm)
    except Exception as e:  # noqa: BLE001 - said in /out; the cut still comes
        import traceback
        (OUT / f"activity-error-{it}.txt").write_text(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        if arm.timer is None:
            raise  # and no cut coming (the package upgrade's): the guest ends, the host says why
    time.sleep(600)  # until the plug is pulled
