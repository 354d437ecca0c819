"""The rider's side of the system VM tests (Tests/vm/test_vm_system.py, test_vm_logwrites.py),
run inside the installed Debian guest by its own python3 as root: configures the board as a rider
would (/etc/bikecomputer/config.toml, /etc/default/bikebridge), rides through gpio-sim buttons,
reads the kernel's SSD1306 and the app's status, and writes what it saw to /out.

    python3 /out/guest_system.py SCENARIO [options]

Scenarios: ride (end to end with unit crashes), logwrites (a ride on dm-log-writes with marks),
clock-cut-1 / clock-cut-2 (a ride, the plug pulled by the host, the board booted on a stale
clock, the ride recovered), clock (stale and stepped clocks mid-ride, a ride dated after it
ended, a ride waiting for its date when the plug is pulled) and clock-2 (the boot after that
cut), faults (storage faults),
latency (buttons on a card stalled by dm-delay).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import socket
import struct
import subprocess
import sys
import threading
import time

OUT = pathlib.Path("/out")
CONFIG = pathlib.Path("/etc/bikecomputer/config.toml")
DATA = pathlib.Path("/var/lib/bikecomputer")
CONTROL = "/run/bikecomputer/control.sock"
DEBUGFS = "/sys/kernel/debug/ssd1306-sim"
START, LAP, PAGE, BUZZER = 17, 27, 22, 18
HR_ANT = 1234
POWER_BLE = "C0:FF:EE:00:11:22"
RECORDING = "/etc/bikecomputer/vm-ride.jsonl"
record: dict = {"steps": [], "errors": []}
LONG_PRESS_S = 1.5  # [buttons] long_press_ms of the installed config
# LAP presses in the ride they were pressed in (the dm-log-writes marks): ride id, count.
LAPS_PRESSED = {"ride": None, "count": 0}
t0 = time.monotonic()


def note(what: str, **fields) -> None:
    entry = {"t": round(time.monotonic() - t0, 3), "what": what, **fields}
    record["steps"].append(entry)
    print(json.dumps(entry), flush=True)


def save() -> None:
    (OUT / "record.json").write_text(json.dumps(record, indent=1))


def run(*cmd: str, check: bool = True) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r.stdout


def package_state() -> str:
    """The Debian package's state and version as dpkg has them ("ii  0.1.0"), or "not known to dpkg"."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Version}", "bikecomputer"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "not known to dpkg"


def sysread(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def syswrite(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def sim() -> str:
    return sysread("/run/vm-hardware/sim")


# A rider's finger is off a button for well over the app's debounce (buttons.debounce_ms, 30 ms)
# between two presses. The harness pressed START again a few ms after releasing it (end_ride: the
# pause press, a status, the long press): the release and the new press then came out as one
# glitch, so the app saw the pause press held on and the long press's release as its end, and
# the ride was not ended (twice in each latency guest on the release build, whose status answers
# in a few ms; the debug build's 100-360 ms hid it: stop 48). A press waits this long after the
# same line's last release.
RELEASE_GAP_S = 0.15
released_at: dict[int, float] = {}


def press(offset: int, hold_s: float = 0.2) -> dict:
    """Holds the line down for `hold_s`, RELEASE_GAP_S at least after its last release. Returns
    how long the kernel's two edges were at least and at most apart by the guest's clock
    (`min_s`: from the press's write returning to the release's write starting; `max_s`: from the
    one starting to the other returning). A guest stalled by a loaded host holds longer than asked
    (a press of 0.5 s has been a long press); presses held 0.5 s or more longer than asked are
    kept in record["presses_stretched"]."""
    path = f"{sim()}/sim_gpio{offset}/pull"
    wait_s = released_at.get(offset, -RELEASE_GAP_S) + RELEASE_GAP_S - time.monotonic()
    if wait_s > 0:
        time.sleep(wait_s)
    down_start = time.monotonic()
    syswrite(path, "pull-down")
    down_done = time.monotonic()
    time.sleep(hold_s)
    up_start = time.monotonic()
    syswrite(path, "pull-up")
    up_done = time.monotonic()
    released_at[offset] = up_done
    hold = {"line": offset, "asked_s": hold_s, "min_s": round(up_start - down_done, 3),
            "max_s": round(up_done - down_start, 3), "t": round(down_start - t0, 1)}
    if hold["min_s"] >= hold_s + 0.5:
        record.setdefault("presses_stretched", []).append(hold)
    return hold


class RideEndedByPress(RuntimeError):
    """A press meant to pause or resume ended the ride (START while paused acts on its release;
    held for a long press, it ends the ride). `hold` is the press's hold (`press`)."""

    def __init__(self, what: str, hold: dict) -> None:
        super().__init__(f"{what}: the press ended the ride (held {hold['min_s']}..{hold['max_s']} s by the guest's clock)")
        self.hold = hold


def press_until(offset: int, want, what: str, hold_s: float = 0.5, tries: int = 3) -> None:
    """Presses until the app's state is in `want` (a state or a tuple of them). Under a loaded
    host the app's loop can stall longer than a short press (its syncs and the end-of-ride work
    run on it: issue 17 item 6) and the debouncer then reads the line released: each press that
    was not taken is recorded in record["presses_not_taken"]. A press that ended the ride instead
    raises RideEndedByPress with its hold."""
    wanted = (want,) if isinstance(want, str) else tuple(want)
    # A press that ends the ride is not pressed again (START on the summary begins another ride).
    watched = wanted if "ended" in wanted or status()["state"] == "ended" else wanted + ("ended",)

    def reached():
        state = status()["state"]
        return state if state in watched else None

    for attempt in range(1, tries + 1):
        hold = press(offset, hold_s)
        try:
            if wait_for(reached, 10, what, poll_s=0.1) not in wanted:
                raise RideEndedByPress(what, hold)
            return
        except TimeoutError:
            record.setdefault("presses_not_taken", []).append({"what": what, "attempt": attempt,
                                                                "t": round(time.monotonic() - t0, 1)})
            state = status()["state"]
            if state in wanted:
                return
            if state in watched:
                raise RideEndedByPress(what, hold)
    raise TimeoutError(f"{what}: {tries} presses were not taken")


def gddram() -> bytes:
    with open(f"{DEBUGFS}/gddram", "rb") as f:
        return f.read()


def status() -> dict:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(CONTROL)
    s.sendall(b"status\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    line = data.decode().strip()
    if not line.startswith("ok "):
        raise RuntimeError(f"status: {line}")
    return json.loads(line[3:])


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, RuntimeError, ValueError) as e:
            last = e
        time.sleep(poll_s)
    raise TimeoutError(f"{what}: not within {timeout_s} s (last: {last})")


def unit(name: str) -> dict:
    out = run("systemctl", "show", name, "-p", "ActiveState,SubState,NRestarts,MainPID,Result,User,ExecMainStatus,LoadState,NeedDaemonReload")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def sensor_state(st: dict, role: str) -> str | None:
    for s in st["sensors"]:
        if s["role"] == role:
            return s["state"]
    return None


def configure(companion: bool = True) -> None:
    """As a rider: the wiring's chip and bus, the paired sensors, the bridge's sensors."""
    text = CONFIG.read_text()
    text = re.sub(r'^chip = .*$', f'chip = "{sysread("/run/vm-hardware/chip")}"', text, count=1, flags=re.M)
    text = re.sub(r'^bus = .*$', f'bus = {sysread("/run/vm-hardware/i2c-bus")}', text, count=1, flags=re.M)
    text = re.sub(r'^# buzzer_pin = 18.*$', f'buzzer_pin = {BUZZER}', text, count=1, flags=re.M)
    text = re.sub(r'^auto_pause = true', 'auto_pause = false', text, count=1, flags=re.M)
    if companion:
        if re.search(r'^\[companion\]', text, flags=re.M):
            text = re.sub(r'(\[companion\][^\[]*?)^enabled = false', r'\1enabled = true', text, count=1, flags=re.M | re.S)
        else:
            text += "\n[companion]\nenabled = true\n"
    text += (f'\n[[sensor]]\ntransport = "ant"\nrole = "heart_rate"\nant_device_number = {HR_ANT}\n'
             f'\n[[sensor]]\ntransport = "ble"\nrole = "power"\nble_address = "{POWER_BLE}"\n')
    CONFIG.write_text(text)
    run("bikecomputer", "config", "check", str(CONFIG))
    pathlib.Path(RECORDING).write_text((OUT / "ride.jsonl").read_text())
    os.chmod(RECORDING, 0o644)
    pathlib.Path("/etc/default/bikebridge").write_text(f'BIKEBRIDGE_SENSORS="--replay {RECORDING} --realtime --repeat"\n')


def start_units(companion: bool = False) -> dict:
    run("systemctl", "restart", "bikecomputer.service")
    run("systemctl", "restart", "bikebridge.service")
    if companion:  # docs/board.md: set [companion] enabled = true, then start it
        run("systemctl", "start", "bikecompanion.service")
    st = wait_for(status, 60, "the control socket answers")
    wait_for(lambda: sensor_state(status(), "HR") == "connected" and sensor_state(status(), "PWR") == "connected", 30,
             "heart rate and power connected through the bridge unit")
    return st


def ride_running() -> None:
    press_until(START, ("prepared", "running"), "the countdown after START")
    wait_for(lambda: status()["state"] == "running", 30, "running after the countdown")


def scenario_ride(a) -> None:
    configure(companion=True)
    start_units(companion=True)
    note("units up", bikecomputer=unit("bikecomputer"), bikebridge=unit("bikebridge"), companion=unit("bikecompanion"))
    record["units_before"] = {u: unit(u) for u in ["bikecomputer", "bikebridge", "bikecompanion"]}
    record["bridge_process_user"] = run("ps", "-o", "user=", "-p", unit("bikebridge")["MainPID"]).strip()
    record["app_process_user"] = run("ps", "-o", "user=", "-p", unit("bikecomputer")["MainPID"]).strip()
    record["sockets"] = run("ls", "-ln", "/run/bikecomputer")
    ride_running()
    note("running")
    time.sleep(4)
    # Held 1 s and left 2.5 s before the crash: under TCG on a loaded host the guest can stall
    # longer than a short press, and a lap less than a second before a crash may be the second
    # the journal's bound allows to lose (the FIT check wants this lap).
    press(LAP, hold_s=1.0)
    time.sleep(2.5)
    before = status()
    record["before_app_crash"] = {"timer_ms": before["timer_ms"], "state": before["state"]}
    page_before = gddram()
    # A crash of the app: SIGSEGV to its main process; Restart=on-failure brings it back and it
    # recovers the ride from the journal.
    pid = unit("bikecomputer")["MainPID"]
    run("kill", "-SEGV", pid)
    note("app crashed", pid=pid)
    wait_for(lambda: unit("bikecomputer")["MainPID"] not in ("0", pid) and unit("bikecomputer")["ActiveState"] == "active",
             30, "bikecomputer restarted")
    st = wait_for(status, 60, "the control socket answers after the restart")
    record["after_app_crash"] = {"state": st["state"], "timer_ms": st["timer_ms"], "recovered": st.get("recovered"),
                                 "unit": unit("bikecomputer")}
    wait_for(lambda: sensor_state(status(), "HR") == "connected" and sensor_state(status(), "PWR") == "connected", 30,
             "the bridge reconnected to the restarted app")
    note("app back", **record["after_app_crash"])
    # A crash of the bridge: SIGKILL; Restart=always brings it back, the sensors reconnect.
    bpid = unit("bikebridge")["MainPID"]
    run("kill", "-KILL", bpid)
    note("bridge killed", pid=bpid)
    wait_for(lambda: unit("bikebridge")["MainPID"] not in ("0", bpid) and unit("bikebridge")["ActiveState"] == "active",
             30, "bikebridge restarted")
    t_bridge_back = time.monotonic()
    wait_for(lambda: sensor_state(status(), "HR") == "connected" and sensor_state(status(), "PWR") == "connected", 30,
             "sensors connected again after the bridge restart")
    record["after_bridge_crash"] = {"unit": unit("bikebridge"), "sensors_back_s": round(time.monotonic() - t_bridge_back, 2)}
    record["timer_after_crashes_ms"] = status()["timer_ms"]
    # PAGE button: the display changes page.
    time.sleep(1.5)
    page_a = gddram()
    press(PAGE, hold_s=0.5)
    wait_for(lambda: gddram()[:128 * 2] != page_a[:128 * 2] or gddram() != page_a, 15, "the display shows another page")
    record["page_changed"] = True
    time.sleep(3)
    end_ride()
    fits = wait_for(lambda: sorted(DATA.rglob("*.fit")), 30, "the ride's FIT file")
    record["final_status"] = status()
    record["fit_files"] = [str(p) for p in fits]
    run("cp", str(fits[-1]), str(OUT / "ride.fit"))
    # The USB drive's image, as the gadget's refresh unit builds it.
    run("bikecomputer", "usb-image", "--data-dir", str(DATA), "--out", str(OUT / "usb.img"))
    record["units_after"] = {u: unit(u) for u in ["bikecomputer", "bikebridge", "bikecompanion"]}
    record["companion_health"] = run("systemctl", "is-active", "bikecompanion", check=False).strip()
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-6000:]
    record["journal_bridge"] = run("journalctl", "-u", "bikebridge", "--no-pager", "-o", "cat", check=False)[-3000:]
    record["journal_companion"] = run("journalctl", "-u", "bikecompanion", "--no-pager", "-o", "cat", check=False)[-3000:]
    page_before and None
    pairing_on_the_installed_board()


PAIRED_BLE = "C0:FF:EE:00:33:44"


def pairing_on_the_installed_board() -> None:
    """Issue 21 (docs/sensors.md): the bridge unit as shipped (its sensors the config's
    [[sensor]] tables: --config, no replay) and a sensor paired, then forgotten, from the shell:
    the app, as its user inside its unit's sandbox, replaces /etc/bikecomputer/config.toml (a
    new file renamed over it) and the bridge, another user, reads it again."""
    import pwd
    bridge_log = lambda: run("journalctl", "-u", "bikebridge", "--no-pager", "-o", "cat", check=False)
    reloads = lambda: [line for line in bridge_log().splitlines() if "paired sensors:" in line]
    pathlib.Path("/etc/default/bikebridge").write_text('BIKEBRIDGE_SENSORS=""\n')
    run("systemctl", "restart", "bikebridge.service")
    wait_for(lambda: len(reloads()) >= 1, 60, "the bridge unit read the config's sensors")
    before, st0 = CONFIG.read_text(), os.stat(CONFIG)
    # The restarted bridge's command line: read until it is the exec'd Python's (right after the
    # restart `ps` once showed "(python)", a process between fork and exec), at most 30 s.
    def bridge_args() -> str | None:
        args = run("ps", "-o", "args=", "-p", unit("bikebridge")["MainPID"], check=False).strip()
        return args if "bikebridge" in args else None
    r: dict = {"bridge_args": wait_for(bridge_args, 30, "the bridge unit's command line"),
               "first_reload": reloads()[-1]}
    r["pair_output"] = run("bikecomputer", "sensors", "pair", f"ble:{PAIRED_BLE}", "--role", "cadence", "--name", "VM cadence").strip()
    r["reload_after_pair"] = wait_for(lambda: [x for x in reloads() if PAIRED_BLE in x], 30, "the bridge read the new file")[-1]
    after, st1 = CONFIG.read_text(), os.stat(CONFIG)
    r["forget_output"] = run("bikecomputer", "sensors", "forget", f"ble:{PAIRED_BLE}").strip()
    r["reload_after_forget"] = wait_for(lambda: PAIRED_BLE not in reloads()[-1] and len(reloads()) >= 3 and reloads()[-1],
                                        30, "the bridge read the file without the sensor")
    r.update(before=before, after_pair=after, after_forget=CONFIG.read_text(),
             inode_changed=st1.st_ino != st0.st_ino, mode_before=oct(st0.st_mode & 0o7777), mode_after=oct(st1.st_mode & 0o7777),
             owner_after=pwd.getpwuid(st1.st_uid).pw_name,
             dir_mode=oct(os.stat(CONFIG.parent).st_mode & 0o7777), dir_group=__import__("grp").getgrgid(os.stat(CONFIG.parent).st_gid).gr_name,
             leftovers=sorted(x.name for x in CONFIG.parent.iterdir() if x.name.startswith("config.toml") and x.name != "config.toml"),
             bridge_active=unit("bikebridge")["ActiveState"],
             app_log=[x for x in run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False).splitlines() if "sensors:" in x][-4:])
    record["pairing"] = r
    note("paired and forgot from the shell", reload=r["reload_after_pair"])


def status_mark(st: dict) -> str:
    """A dm-log-writes mark (one word: the target takes exactly one argument after `mark`) of one
    `ctl status`: the state the screen shows (the status's `state_shown`, which changes only once
    the change is durable: `state` changes at the press, and a point replayed between the press
    and the sync rebuilds the state before it; stop 42's CI saw it at one point, a pause), timer,
    the laps taken for sure (the status's `lap`, the lap the
    screen shows, changes only once the lap is durable; it counts the lap in progress), the LAP
    presses of that ride by then (the app may journal them), the ride (its id's first 8
    characters) and the guest's monotonic clock."""
    ride = (st.get("ride_id") or "-")[:8]
    pressed = LAPS_PRESSED["count"] if LAPS_PRESSED["ride"] == st.get("ride_id") else 0
    return (f"s:{st['state_shown']}:t:{st['timer_ms']}:l:{max(0, st['lap'] - 1)}:p:{pressed}:r:{ride}"
            f":m:{time.monotonic_ns() // 1_000_000}")


# DM_TARGET_MSG (linux/dm-ioctl.h): _IOWR(0xfd, 14, struct dm_ioctl), 312 bytes: version[3],
# data_size, data_start, target_count, open_count, flags, event_nr, padding, dev, name[128],
# uuid[129], data[7]; a struct dm_target_msg (sector u64, message NUL-terminated) follows it.
DM_IOCTL_HEADER = struct.Struct("<3IIIIiIIIQ128s129s7s")
DM_TARGET_MSG = (3 << 30) | (DM_IOCTL_HEADER.size << 16) | (0xFD << 8) | 14


def dm_message(device: str, message: str) -> None:
    """`dmsetup message DEVICE 0 MESSAGE` without starting dmsetup: the ioctl it makes, on
    /dev/mapper/control. Starting a process costs a loaded TCG guest 1-2 s (marks came every
    1.5 s instead of every 250 ms at load ~28)."""
    import fcntl
    body = struct.pack("<Q", 0) + message.encode() + b"\0"
    size = DM_IOCTL_HEADER.size + len(body)
    # version 4.0.0, data_size, data_start, then target_count, open_count, flags, event_nr,
    # padding and dev all 0, the name; 14 fields in all (the struct's).
    header = DM_IOCTL_HEADER.pack(4, 0, 0, size, DM_IOCTL_HEADER.size, 0, 0, 0, 0, 0, 0, device.encode(), b"", b"")
    fd = os.open("/dev/mapper/control", os.O_RDWR)
    try:
        fcntl.ioctl(fd, DM_TARGET_MSG, bytearray(header + body))
    finally:
        os.close(fd)


class Marker(threading.Thread):
    """Every `interval_s`, the app's status as a dm-log-writes mark: what the app had recorded by
    then (state, timer, laps) sits in the log between the writes that were durable by then."""

    def __init__(self, device: str, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.device = device
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.count = 0
        self.errors = 0
        self.ioctl_error: str | None = None  # the ioctl refused: dmsetup instead (recorded)

    def mark(self, name: str) -> None:
        if self.ioctl_error is None:
            try:
                dm_message(self.device, f"mark {name}")
                self.count += 1
                return
            except OSError as e:
                self.ioctl_error = f"{type(e).__name__}: {e}"
        subprocess.run(["dmsetup", "message", self.device, "0", "mark", name], check=True)
        self.count += 1

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.mark(status_mark(status()))
            except Exception:  # the app restarting: no mark this time
                self.errors += 1
            self.stop.wait(self.interval_s)


def scenario_logwrites(a) -> None:
    """The data partition on dm-log-writes (data /dev/vdb, log /dev/vdc) from mkfs on, a ride
    with laps and a pause, status marks every 250 ms, a clean end."""
    configure(companion=False)
    run("systemctl", "stop", "bikebridge", "bikecomputer")
    run("umount", str(DATA), check=False)
    sectors = run("blockdev", "--getsz", "/dev/vdb").strip()
    run("dmsetup", "create", "logw", "--table", f"0 {sectors} log-writes /dev/vdb /dev/vdc")
    run("mkfs.ext4", "-q", "-L", "bikedata", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard", "/dev/mapper/logw")
    m = Marker("logw", a.mark_interval)
    m.mark("mkfs")
    run("mount", "/dev/mapper/logw", str(DATA))
    m.mark("mounted")
    start_units()
    m.start()
    ride_running()
    plan = [("ride", 5), ("lap", 4), ("pause", 3), ("resume", 4), ("lap", 5), ("pause", 2), ("resume", 5)]
    for what, hold in plan:
        if what == "lap":
            st = status()
            if LAPS_PRESSED["ride"] != st["ride_id"]:
                LAPS_PRESSED.update(ride=st["ride_id"], count=0)
            LAPS_PRESSED["count"] += 1  # pressed: the app may journal it from now on
            press(LAP, hold_s=0.5)
            # The screen's lap number (status `lap`) changes only once the lap is durable: the
            # marks take the laps taken for sure from it.
            wait_for(lambda: status()["lap"] > st["lap"], 10, "the lap on the screen", poll_s=0.05)
        elif what in ("pause", "resume"):
            want = "paused" if what == "pause" else "running"
            try:
                press_until(START, want, want)
            except RideEndedByPress as e:
                # Only a resume can end a ride (START acts on its release while paused): its hold
                # reached a long press by the kernel's clock when the guest stalled. The app did
                # what a rider holding it would get; the test checks that from the hold. The plan
                # goes on in a new ride (the marks say which ride they are of).
                record.setdefault("unplanned_ends", []).append({"what": what, "hold": e.hold, "t": round(time.monotonic() - t0, 1)})
                note("the ride ended on a press", what=what, hold=e.hold)
                wait_for(lambda: status()["state"] == "ended", 30, "the ride ended")
                ride_running()
        note(what)
        time.sleep(hold)
    m.stop.set()
    m.join()
    final = status()
    record["before_end"] = {"timer_ms": final["timer_ms"], "state": final["state"], "journal_sync": final.get("journal_sync")}
    m.mark(status_mark(final))
    press_until(START, "paused", "paused before the end")
    m.mark(status_mark(status()))
    end_ride()
    m.mark(status_mark(status()))
    wait_for(lambda: sorted(DATA.rglob("*.fit")), 30, "the ride's FIT file")
    m.mark("ended")
    run("systemctl", "stop", "bikebridge", "bikecomputer")
    run("umount", str(DATA))
    run("dmsetup", "remove", "logw")
    record["marks"] = m.count
    record["mark_errors"] = m.errors
    record["mark_ioctl_error"] = m.ioctl_error
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]


# ------------------------------------------------------------------------------ storage faults

def journal_condition() -> dict:
    return status().get("journal", {})


def log_since(cursor_file: str) -> str:
    """bikecomputer's journal lines since the last call (journalctl cursors)."""
    return run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", f"--cursor-file={cursor_file}", check=False)


def data_device(table: str, name: str = "card") -> str:
    """(Re)maps /dev/mapper/NAME to `table` (a dm table line over /dev/vdb)."""
    if os.path.exists(f"/dev/mapper/{name}"):
        run("dmsetup", "suspend", "--noflush", name)
        run("dmsetup", "reload", name, "--table", table)
        run("dmsetup", "resume", name)
    else:
        run("dmsetup", "create", name, "--table", table)
    return f"/dev/mapper/{name}"


def vdb_sectors() -> int:
    return int(run("blockdev", "--getsz", "/dev/vdb").strip())


def fresh_card(size_sectors: int | None = None) -> str:
    """A new ext4 data partition on /dev/mapper/card (linear over /dev/vdb), mounted with
    errors=remount-ro (what a card's file system does when the card returns errors)."""
    run("systemctl", "stop", "bikecomputer")
    run("umount", str(DATA), check=False)
    n = size_sectors or vdb_sectors()
    dev = data_device(f"0 {n} linear /dev/vdb 0")
    run("mkfs.ext4", "-q", "-F", "-L", "bikedata", dev)
    run("mount", "-o", "errors=remount-ro", dev, str(DATA))
    return dev


def mounted_read_only() -> bool:
    """The data partition refuses writes with EROFS (ext4 aborted its journal: the kernel logs
    "Remounting filesystem read-only"; /proc/mounts of 6.1 may still say rw)."""
    try:
        fd = os.open(f"{DATA}/.ro-probe", os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        os.unlink(f"{DATA}/.ro-probe")
        return False
    except OSError as e:
        return e.errno == 30  # EROFS


def card_errors_until_read_only() -> None:
    """The card fails every write (dm-flakey error_writes, always down) until ext4 aborts its
    journal and remounts the partition read-only (errors=remount-ro), open files and all."""
    n = vdb_sectors()
    data_device(f"0 {n} flakey /dev/vdb 0 0 5 1 error_writes")
    # A metadata change and a sync make ext4 commit its journal now, which fails and aborts it.
    subprocess.run(["touch", f"{DATA}/.card-probe"], capture_output=True)
    subprocess.run(["sync", "-f", str(DATA)], capture_output=True)
    try:
        wait_for(mounted_read_only, 30, "the data partition remounted read-only", poll_s=0.2)
    finally:
        record["readonly_diagnostics"] = {"mounts": [l for l in open("/proc/mounts") if "bikecomputer" in l],
                                          "dmesg": run("dmesg", check=False)[-3000:],
                                          "table": run("dmsetup", "table", check=False)}
    record.setdefault("readonly_after_s", []).append(round(time.monotonic() - t0, 1))


def app_pid() -> str:
    return run("systemctl", "show", "-p", "MainPID", "--value", "bikecomputer", check=False).strip()


def app_files_on_card(pid: str) -> list[str]:
    """The app's open descriptors under the data directory (`ls -l /proc/PID/fd`), each with
    its access mode (`/proc/PID/fdinfo`: r, w or rw)."""
    out = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    flags = int(next(l for l in f if l.startswith("flags:")).split()[1], 8)
            except (OSError, StopIteration):
                continue
            if target.startswith(str(DATA)):
                out.append(f"{fd} -> {target} ({['r', 'w', 'rw', '?'][flags & 3]})")
    except OSError as e:
        out.append(f"error: {e}")
    return sorted(out)


def namespace_view(pid: str) -> str:
    """What the app's own mount namespace (ProtectSystem=strict, ReadWritePaths) has at the data
    directory (its mountinfo lines there) and whether a root write there works."""
    seen = f"MainPID={pid}\n"
    for cmd in (["nsenter", "-t", pid, "-m", "cat", "/proc/self/mountinfo"],
                ["nsenter", "-t", pid, "-m", "touch", f"{DATA}/.ns-probe"]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            seen += f"$ {' '.join(cmd)}: exit {r.returncode}\n" + "".join(
                l + "\n" for l in (r.stdout + r.stderr).splitlines() if "/var/lib" in l or "touch" in l)
        except (OSError, subprocess.SubprocessError) as e:
            seen += f"$ {' '.join(cmd)}: {e}\n"
    return seen


def card_reinserted() -> dict:
    """The card healthy again, healed the way a maintainer (or a reboot) does it while the app
    runs on: the mapping linear again, the old mount unmounted (a plain umount, which fails with
    EBUSY while any process still holds a file on the card; `umount -l` only if it never
    succeeds), fsck, mounted afresh at the same place. The app must have closed everything it
    held on the card (else the old, aborted superblock lives on and the new mount gets it back
    read-only), and its mount namespace must follow the host's mounts."""
    # Whether ext4 gave up (always for `readonly`; for dm-flakey's intermittent errors almost
    # always: a failed journal commit aborts it). A file system that did not is still usable,
    # and the app may then rightly hold its segment open.
    heal: dict = {"read_only_before": mounted_read_only()}
    n = vdb_sectors()
    data_device(f"0 {n} linear /dev/vdb 0")
    pid = app_pid()
    heal["app_files_on_card"] = app_files_on_card(pid)
    # The journal retries its failed write every second: it opens the segment (ext4 with an
    # aborted journal still opens files for writing), writes, and holds the descriptor until its
    # fdatasync's completion fails and is reaped, then lets it go again. A retry in flight is
    # seen here for a moment (longer on a loaded host); a descriptor kept is seen at every look.
    if heal["app_files_on_card"]:
        heal["journal_sync_then"] = {k: status().get("journal_sync", {}).get(k) for k in ("in_flight", "descriptors_held")}
    held, looks, deadline = heal["app_files_on_card"], 1, time.monotonic() + 5
    while held and time.monotonic() < deadline:
        time.sleep(0.1)
        held, looks = app_files_on_card(pid), looks + 1
    heal["app_files_kept"] = held
    heal["app_files_looks"] = looks
    heal["namespace_before"] = namespace_view(pid)
    heal["umount"] = "lazy"
    for attempt in range(1, 11):
        r = subprocess.run(["umount", str(DATA)], capture_output=True, text=True)
        if r.returncode == 0:
            heal["umount"] = f"plain (attempt {attempt})"
            break
        heal.setdefault("umount_errors", []).append(r.stderr.strip())
        heal.setdefault("app_files_on_card_busy", []).append(app_files_on_card(pid))
        time.sleep(0.5)
    else:
        run("umount", "-l", str(DATA))
    fsck = subprocess.run(["e2fsck", "-fy", "/dev/mapper/card"], capture_output=True, text=True)
    heal["fsck_exit"] = fsck.returncode
    heal["fsck"] = (fsck.stdout + fsck.stderr)[-800:]
    run("mount", "-o", "errors=remount-ro", "/dev/mapper/card", str(DATA))
    heal["host_writable"] = not mounted_read_only()
    seen = namespace_view(pid)
    heal["namespace_after"] = seen
    record.setdefault("namespace_after_heal", []).append(seen)
    return heal


def ride_alive(seconds: float) -> dict:
    """For `seconds`: the status answers, the timer advances, the live power updates, and the
    buttons pause and resume within 2 s each. Returns what was seen."""
    seen = {"status_errors": 0, "timer_start": status()["timer_ms"], "button_s": [], "turns": []}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            loop = status().get("loop") or {}
            # When the loop's longest turn grew, and in which handler (dmesg's clock is the same).
            slowest = max(loop.get("handlers", []), key=lambda h: h["max_us"], default={})
            seen["turns"].append([round(time.monotonic(), 2), loop.get("turn_max_us"), slowest.get("name"), slowest.get("max_us")])
        except Exception:
            seen["status_errors"] += 1
        time.sleep(0.5)
    for want in ["paused", "running"]:
        taken = None
        for attempt in range(1, 4):  # a press not taken at all is recorded (seen["presses"])
            t = time.monotonic()
            seen.setdefault("holds", []).append(press(START))
            try:
                wait_for(lambda: status()["state"] == want, 5, want, poll_s=0.05)
                taken = round(time.monotonic() - t, 2)
                break
            except TimeoutError:
                if status()["state"] == want:
                    taken = round(time.monotonic() - t, 2)
                    break
        seen["button_s"].append(taken)
        seen.setdefault("presses", []).append(attempt)
    st = status()
    seen["timer_end"] = st["timer_ms"]
    # Where the loop's time went (a turn waiting for the card shows in the handler that waited).
    seen["loop"] = st.get("loop")
    seen["journal_sync"] = st.get("journal_sync")
    return seen


def long_press_end() -> int:
    """Holds START until the ride ends; returns the number of holds it took (a rider would hold
    again when the first did not take; more than one is recorded and checked by the tests). The
    end of a ride runs on the app's loop (issue 17 item 6): under a loaded TCG host the status
    may not answer for many seconds, so it waits long and never presses again once ended."""
    for attempt in range(1, 4):
        press(START, hold_s=2.2)
        try:
            wait_for(lambda: status()["state"] == "ended", 45, "ended after a long press", poll_s=0.25)
            return attempt
        except TimeoutError:
            state = wait_for(lambda: status()["state"], 30, "a status")
            note("long press did not end the ride", attempt=attempt, state=state, buttons=status().get("buttons"))
            if state == "ended":
                return attempt
            if state == "running":  # taken as a short press: pause again
                press_until(START, "paused", "paused again")
    raise TimeoutError("three long presses did not end the ride")


def end_ride() -> dict:
    if status()["state"] != "paused":
        press_until(START, "paused", "paused before the end")
    st = status()
    final_timer, skipped = st["timer_ms"], st.get("records_skipped")
    holds = long_press_end()
    record.setdefault("long_press_holds", []).append(holds)
    return {"final_timer_ms": final_timer, "records_skipped": skipped, "holds": holds}


def fit_files() -> list[str]:
    return sorted(str(p) for p in DATA.rglob("*.fit"))


def fault_case(name: str, inject, heal, setup=None) -> None:
    """One storage fault mid-ride: a fresh card (or `setup`), the units, a ride; `inject()`;
    the ride goes on; the ride ends while the fault lasts; then `heal()` and up to 20 s for the
    ride file without a restart. Everything seen goes to record[name]."""
    r: dict = {}
    record[name] = r
    cursor = f"/tmp/cursor-{name}"
    try:
        (setup or fresh_card)()
        log_since(cursor)
        start_units()
        ride_running()
        time.sleep(3)
        st = status()
        # The loop on the healthy card (its longest turn says how loaded the host is).
        r["before"] = {"timer_ms": st["timer_ms"], "journal": st.get("journal", {}), "loop": st.get("loop")}
        inject()
        r["injected_at_timer_ms"] = status()["timer_ms"]
        r["alive"] = ride_alive(6)
        r["dmesg_during"] = run("dmesg", check=False).splitlines()[-40:]
        r["app_log_during"] = run("journalctl", "-u", "bikecomputer", "-o", "short-monotonic", "--no-pager", "-n", "30",
                                  check=False).splitlines()
        r["journal_during"] = journal_condition()
        r["end"] = end_ride()
        time.sleep(2)
        r["files_before_heal"] = fit_files()
        log = log_since(cursor)
        r["log_during"] = log[-4000:]
        r["alerts_during"] = [l for l in log.splitlines() if "alert: " in l]
        r["journal_closes"] = [l for l in log.splitlines() if "closed the" in l and "held on the card" in l]
        healed = heal()
        if isinstance(healed, dict):
            r["heal"] = healed
        try:
            wait_for(lambda: fit_files(), 20, "the ride file after the card healed")
        except TimeoutError:
            pass
        r["files_after_heal"] = fit_files()
        if r["files_after_heal"]:
            run("cp", r["files_after_heal"][-1], str(OUT / f"{name}.fit"))
        r["log_after"] = log_since(cursor)[-3000:]
        r["journal_after"] = journal_condition()
    except Exception as e:
        r["error"] = f"{type(e).__name__}: {e}"
        r["log_on_error"] = log_since(cursor)[-4000:]
    finally:
        save()


def scenario_faults(a) -> None:
    configure(companion=False)
    run("systemctl", "stop", "bikebridge", "bikecomputer")
    run("umount", str(DATA), check=False)
    which = a.cases.split(",")

    if "full" in which:
        def fill():
            # The card fills mid-ride: a file takes every free block (as root, reserve included).
            subprocess.run(["dd", "if=/dev/zero", f"of={DATA}/filler", "bs=64k"], capture_output=True)
            os.sync()
        fault_case("full", fill, lambda: os.unlink(f"{DATA}/filler"), setup=lambda: fresh_card(16 * 2048))

    if "readonly" in which:
        fault_case("readonly", card_errors_until_read_only, card_reinserted)

    if "flakey" in which:
        n = vdb_sectors()
        # Writes fail (EIO) for 2 s out of every 3, then the card is healthy again.
        fault_case("flakey", lambda: data_device(f"0 {n} flakey /dev/vdb 0 1 2 1 error_writes"), card_reinserted)

    if "dropped" in which:
        n = vdb_sectors()
        # Writes are silently dropped for 2 s out of every 3 (a card that lies).
        fault_case("dropped", lambda: data_device(f"0 {n} flakey /dev/vdb 0 1 2 1 drop_writes"),
                   lambda: data_device(f"0 {n} linear /dev/vdb 0"))

    if "unusable" in which:
        # The data directory cannot be used at all when the app starts: the partition is
        # mounted read-only. The device must still start: screen, buttons, live values.
        r: dict = {}
        record["unusable"] = r
        try:
            fresh_card()
            run("mount", "-o", "remount,ro", str(DATA))
            run("systemctl", "restart", "bikecomputer", check=False)  # today it fails to start
            time.sleep(8)
            r["unit"] = unit("bikecomputer")
            try:
                st = wait_for(status, 20, "the control socket answers with an unusable data directory")
                r["status"] = {"state": st["state"], "journal": st.get("journal"), "hardware": st.get("hardware")}
                ride_running()
                r["ride"] = ride_alive(3)
            except Exception as e:
                r["error"] = f"{type(e).__name__}: {e}"
            r["display_on"] = sysread(f"{DEBUGFS}/state")
            r["log"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-3000:]
        finally:
            run("mount", "-o", "remount,rw", str(DATA), check=False)
            save()


def scenario_latency(a) -> None:
    """Item 6: button edge to a changed display page, and the loop's longest turn, on a card
    whose every write waits `--delay-ms` (dm-delay), against the same card without delay."""
    configure(companion=False)
    run("systemctl", "stop", "bikebridge", "bikecomputer")
    run("umount", str(DATA), check=False)
    n = vdb_sectors()
    for label, table in [("plain", f"0 {n} linear /dev/vdb 0"),
                         ("delay", f"0 {n} delay /dev/vdb 0 0 /dev/vdb 0 {a.delay_ms}")]:
        run("systemctl", "stop", "bikecomputer")
        run("umount", str(DATA), check=False)
        dev = data_device(f"0 {n} linear /dev/vdb 0")
        # Inode tables and the ext4 journal initialised now, not by the kernel's ext4lazyinit
        # thread in the first minutes after the mount: on the delayed card its writes (200 ms
        # each) competed with the measured ride (a first press of 416 ms with no loop turn over
        # 171 ms). A rider's card is not freshly made when a ride starts.
        run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev)
        data_device(table)
        run("mount", dev, str(DATA))
        start_units()
        ride_running()
        time.sleep(2)
        samples = []
        for i in range(a.presses):
            samples.append(page_press_ms("page change"))
            time.sleep(0.35 + (i % 5) * 0.07)  # presses land at different points of the 1 s sync cycle
        st = status()
        record[f"latency_{label}"] = {"page_ms": samples, "loop": st.get("loop"), "journal": st.get("journal"),
                                      "journal_sync": st.get("journal_sync")}
        record[f"save_{label}"] = end_and_save_measured(st)
        save()
    record["redating"] = redating_on_the_stalling_card(a, n)
    save()


REDATED_RIDES = 5
STATUS_POLL_S = 1.0


def redating_on_the_stalling_card(a, n: int) -> dict:
    """Issue 27: the clock becomes trusted with REDATED_RIDES rides waiting for their date, on
    the card that waits `--delay-ms` per write. The rides are made on the same card without the
    delay (quicker), on a stale, unsynchronised clock; then the delay is back, the clock is
    synchronised, and PAGE is pressed again and again until every ride is dated. Before issue 27
    the dating ran inside the wall clock's loop turn: seconds per ride on this card, no press
    answered meanwhile."""
    data_device(f"0 {n} linear /dev/vdb 0")
    run("systemctl", "stop", "systemd-timesyncd", check=False)
    set_clock(true_ms() - STALE_BY_MS)
    r: dict = {"unsynced": clock_unsynced(), "rides": REDATED_RIDES}
    app_restarted("a start on the stale clock")
    for i in range(REDATED_RIDES):
        written = status()["ride_files"]["written"]
        ride_running()
        time.sleep(1.5)
        end_ride()
        wait_for(lambda: status()["ride_files"]["written"] > written, 60, f"ride {i + 1} saved")
    # Every ride on this card waits (the ride the delayed-card measurement saved too).
    r["undated_before"] = len([x for x in undated() if x.endswith(".rec")])
    data_device(f"0 {n} delay /dev/vdb 0 0 /dev/vdb 0 {a.delay_ms}")
    before = status()
    sampler = LoopWaitSampler(unit("bikecomputer")["MainPID"])
    with sampler:
        synchronise(true_ms())
        t0 = time.monotonic()
        samples = []
        dated_s = None
        polled = 0.0
        while time.monotonic() - t0 < 180:
            # The dating's progress once a second, not before every press: each status is a
            # control client's turn in the loop (100-360 ms in the debug build in a TCG guest),
            # and polled before every press it was a third of the loop's time during the dating.
            if time.monotonic() - polled >= STATUS_POLL_S:
                polled = time.monotonic()
                f = status()["ride_files"]
                if f.get("rides_redated", 0) >= r["undated_before"] and f.get("redatings_waiting", 1) == 0 and f.get("pending", 1) == 0:
                    dated_s = round(time.monotonic() - t0, 2)
                    break
            samples.append(page_press_ms("page change while dating"))
            # As the plain and delayed cards' presses are spaced (and a rider's): every press is a
            # summary page drawn and sent (two buttons.debounce turns, ~30 ms each in the debug
            # build in a TCG guest); pressed every 50 ms they were the loop's largest load during
            # the dating (9 of 47 s), 20 times its own steps' (0.85 s).
            time.sleep(0.35 + (len(samples) % 5) * 0.07)
    after = status()
    r["loop_waits"] = sampler.report()
    r["journal_sync_before"], r["journal_sync_after"] = before.get("journal_sync"), after.get("journal_sync")
    r["buttons_before"], r["buttons_after"] = before.get("buttons"), after.get("buttons")
    data_device(f"0 {n} linear /dev/vdb 0")
    r.update({"dated_s": dated_s, "page_ms": samples, "loop_before": before.get("loop"), "loop_after": after.get("loop"),
              "ride_files": after.get("ride_files"), "undated_after": undated(), "library": len(rides_list())})
    return r


class LoopWaitSampler:
    """Where the app's loop thread is while the card stalls: every `period_s` its state and, when it
    is not in epoll_wait (where an idle loop sleeps), its system call and kernel stack
    (/proc/PID/task/PID/{stat,syscall,stack}, root only). Counts per distinct stack (its first
    frames), so a turn held by the card shows the kernel function it waited in."""

    EPOLL_WAIT = {"232", "281", "441"}  # x86_64 epoll_wait, epoll_pwait, epoll_pwait2
    FRAMES = 6

    def __init__(self, pid: str, period_s: float = 0.01) -> None:
        self.pid, self.period_s = pid, period_s
        self.samples = 0
        self.idle = 0
        self.running = 0
        self.waits: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "LoopWaitSampler":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(5)

    def _read(self, name: str) -> str:
        try:
            return pathlib.Path(f"/proc/{self.pid}/task/{self.pid}/{name}").read_text(errors="replace")
        except OSError:
            return ""

    def _run(self) -> None:
        while not self.stop.wait(self.period_s):
            stat = self._read("stat")
            if not stat:
                continue
            state = stat.rsplit(")", 1)[-1].split()[0]
            self.samples += 1
            call = self._read("syscall").split()
            nr = call[0] if call else "?"
            if nr in self.EPOLL_WAIT:
                self.idle += 1
                continue
            if state == "R" or nr == "running":
                self.running += 1
                continue
            frames = [ln.split("] ", 1)[-1].split("+", 1)[0] for ln in self._read("stack").splitlines()][:self.FRAMES]
            key = f"{state} syscall {nr}: " + " < ".join(frames)
            self.waits[key] = self.waits.get(key, 0) + 1

    def report(self) -> dict:
        top = sorted(self.waits.items(), key=lambda kv: -kv[1])[:12]
        return {"period_ms": self.period_s * 1000, "samples": self.samples, "in_epoll_wait": self.idle,
                "running": self.running, "waiting_elsewhere": dict(top)}


def page_press_ms(what: str) -> float | None:
    """One PAGE press: ms from its edge until the panel's GDDRAM changed (None: not within 3 s)."""
    shown = gddram()
    t = time.monotonic()
    hold = press(PAGE, hold_s=0.05)
    try:
        wait_for(lambda: gddram() != shown, 3, what, poll_s=0.002)
    except TimeoutError:
        # What the app made of it: its buttons' counters (a glitch by the kernel's timestamps, a
        # lost edge), its state and screen.
        after = status()
        record.setdefault("presses_unanswered", []).append(
            {"what": what, "hold": hold, "t": round(t - t0, 2), "status": {k: after.get(k) for k in ("state", "buttons", "screen", "display", "loop")}})
        return None
    return round((time.monotonic() - t) * 1000, 1)


def end_and_save_measured(before: dict) -> dict:
    """The end of the ride on the card as it is: from the ride's end (state `ended`) until its
    file is durable (status `ride_files.written` grows: RIDE SAVED), PAGE is pressed again and
    again on the summary screen and each press's edge-to-changed-page time recorded. The loop's
    longest turn and the ride-file step's longest call come from the status after the save."""
    written0 = before["ride_files"]["written"]
    end = end_ride()
    t_ended = time.monotonic()
    samples = []
    saved_ms = None
    while time.monotonic() - t_ended < 60:
        st = status()
        if st["ride_files"]["written"] > written0:
            saved_ms = round((time.monotonic() - t_ended) * 1000)
            break
        samples.append(page_press_ms("page change while saving"))
        time.sleep(0.05)
    after = status()
    step = next((h for h in after["loop"]["handlers"] if h["name"] == "ridefile.step"), None)
    return {"end": end, "saved_ms": saved_ms, "page_ms": samples, "loop_before": before.get("loop"),
            "loop_after": after.get("loop"), "ridefile_step": step, "ride_files": after.get("ride_files"),
            "journal_sync": after.get("journal_sync")}


# ------------------------------------------------------------------------------ clock

class Timex(__import__("ctypes").Structure):
    import ctypes as _c
    _fields_ = [("modes", _c.c_uint), ("offset", _c.c_long), ("freq", _c.c_long), ("maxerror", _c.c_long),
                ("esterror", _c.c_long), ("status", _c.c_int), ("constant", _c.c_long), ("precision", _c.c_long),
                ("tolerance", _c.c_long), ("tv_sec", _c.c_long), ("tv_usec", _c.c_long), ("tick", _c.c_long),
                ("ppsfreq", _c.c_long), ("jitter", _c.c_long), ("shift", _c.c_int), ("stabil", _c.c_long),
                ("jitcnt", _c.c_long), ("calcnt", _c.c_long), ("errcnt", _c.c_long), ("stbcnt", _c.c_long),
                ("tai", _c.c_int), ("pad", _c.c_int * 11)]


ADJ_MAXERROR, ADJ_ESTERROR, ADJ_STATUS = 0x0004, 0x0008, 0x0010
STA_UNSYNC = 0x0040


def adjtimex(modes: int = 0, status: int = 0, maxerror: int = 0) -> Timex:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    tx = Timex(modes=modes, status=status, maxerror=maxerror, esterror=maxerror)
    if libc.adjtimex(ctypes.byref(tx)) < 0:
        raise OSError(ctypes.get_errno(), "adjtimex")
    return tx


def clock_unsynced() -> bool:
    return bool(adjtimex().status & STA_UNSYNC)


def set_clock(unix_ms: int) -> None:
    """Steps the wall clock (clock_settime marks it unsynchronised, as the kernel does for any step)."""
    time.clock_settime(time.CLOCK_REALTIME, unix_ms / 1000)


def synchronise(unix_ms: int) -> None:
    """What systemd-timesyncd or an NTP client does once it has a server's time: step the clock
    and tell the kernel it is synchronised (STA_UNSYNC cleared, small maximum error)."""
    set_clock(unix_ms)
    adjtimex(ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR, status=0, maxerror=50_000)


def true_ms() -> int:
    """The host's time when QEMU started (TRUE_UNIX_MS, at the guest's monotonic TRUE_MONO_MS = 0,
    the kernel's start, within a fraction of a second) plus the guest's monotonic time since."""
    return int(os.environ["TRUE_UNIX_MS"]) + (time.monotonic_ns() // 1_000_000 - int(os.environ["TRUE_MONO_MS"]))


def scenario_clock(a) -> None:
    """A board without an RTC: the ride starts on a stale, unsynchronised clock (400 days
    behind); mid-ride the clock is synchronised (stepped forward), then stepped back 2 minutes
    by a correction; the ride ends. The host checks how the FIT file is dated. Then the rides
    after it: one dated after it ended (after_the_ride_dated), one waiting for its date when the
    plug is pulled (undated_ride_then_the_plug; scenario clock-2 is the next boot)."""
    record["boot_clock_unsynced"] = clock_unsynced()
    configure(companion=False)
    run("systemctl", "stop", "systemd-timesyncd", check=False)
    stale = true_ms() - 400 * 86_400_000
    set_clock(stale)
    record["stale_unsynced"] = clock_unsynced()
    start_units()
    ride_running()
    record["ride_start_true_ms"] = true_ms() - status()["timer_ms"]
    time.sleep(4)
    synchronise(true_ms())
    record["synced_unsynced"] = clock_unsynced()
    note("clock synchronised", wall=int(time.time() * 1000))
    time.sleep(4)
    synchronise(true_ms() - 120_000)
    note("clock stepped back 2 min")
    time.sleep(3)
    record["end"] = end_ride()
    fits = wait_for(lambda: fit_files(), 30, "the ride file")
    run("cp", fits[-1], str(OUT / "clock.fit"))
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-3000:]
    trusted_ride = rides_list()
    after_the_ride_dated()
    # The ride that was trusted mid-ride has no kept records: the later dating leaves it alone.
    record["trusted_ride_before"] = trusted_ride
    record["trusted_ride_after"] = [e for e in rides_list() if e["id"] in {t["id"] for t in trusted_ride}]
    undated_ride_then_the_plug()


STALE_BY_MS = 400 * 86_400_000


def rides_list() -> list[dict]:
    """`bikecomputer rides list --json` as a rider runs it (id, version, start_utc, files)."""
    return json.loads(run("bikecomputer", "rides", "list", "--json", "--data-dir", str(DATA)))


def undated() -> list[str]:
    """What waits for a date in <data dir>/undated/ (docs/journal.md, "The clock")."""
    d = DATA / "undated"
    return sorted(os.listdir(d)) if d.is_dir() else []


def app_restarted(what: str) -> None:
    """`systemctl restart bikecomputer`, then the control socket and the bridge's sensors back."""
    run("systemctl", "restart", "bikecomputer.service")
    wait_for(status, 60, f"the control socket answers ({what})")
    wait_for(lambda: sensor_state(status(), "HR") == "connected", 30, f"the bridge reconnected ({what})")


def ride_on_a_stale_clock(name: str) -> dict:
    """The clock stepped 400 days back (unsynchronised: what a Pi boots with), the app restarted
    so that this start of it reads that clock; a ride started and ended on it. Returns the new
    ride's list entry, its true start and end (the host's time, guest_system.true_ms) and what
    was seen; the ride's files are copied to /out/NAME-stale.*."""
    before = {e["id"] for e in rides_list()}
    set_clock(true_ms() - STALE_BY_MS)
    r: dict = {"unsynced": clock_unsynced()}
    app_restarted("a start on the stale clock")
    ride_running()
    r["start_true_ms"] = true_ms() - status()["timer_ms"]
    time.sleep(5)
    r["end"] = end_ride()
    r["end_true_ms"] = true_ms()
    new = wait_for(lambda: [e for e in rides_list() if e["id"] not in before], 30, "the new ride in the ride list")
    r["entry"] = new[0]
    rid = r["entry"]["id"]
    # Its records kept for dating once the ride file is durable (.rec).
    r["undated"] = wait_for(lambda: [n for n in undated() if n.startswith(rid)], 30, "the ride's kept records in undated/")
    r["entry"] = [e for e in rides_list() if e["id"] == rid][0]
    r["wall_ms_at_end"] = int(time.time() * 1000)
    for ext, f in r["entry"]["files"].items():
        run("cp", str(DATA / "rides" / f["name"]), str(OUT / f"{name}-stale.{ext}"))
    return r


def after_the_ride_dated() -> None:
    """Issue 17 item 4, after the ride: a ride started and ended on a stale, unsynchronised
    clock is saved at once under the stale date (its records kept in undated/); the app is
    restarted (same boot: what it kept must survive); then the clock is synchronised: the ride
    is stored again, named and listed by its true start, its files' times moved by the offset,
    and nothing is left in undated/."""
    cursor = "/tmp/cursor-after"
    log_since(cursor)
    r = ride_on_a_stale_clock("after")
    record["after"] = r
    run("bikecomputer", "usb-image", "--data-dir", str(DATA), "--out", str(OUT / "usb-stale.img"))
    app_restarted("after the ride, before the clock is set")
    r["undated_after_restart"] = undated()
    save()
    rid = r["entry"]["id"]
    synchronise(true_ms())
    t = time.monotonic()
    dated = wait_for(lambda: [e for e in rides_list() if e["id"] == rid and e["start_utc"] != r["entry"]["start_utc"]], 30,
                     "the ride listed again under its true start")
    r["dated_after_s"] = round(time.monotonic() - t, 2)
    wait_for(lambda: not undated(), 10, "undated/ emptied")
    r["dated_entry"] = dated[0]
    r["dated_list"] = rides_list()
    r["undated_after"] = undated()
    r["ride_files_status"] = status()["ride_files"]
    r["rides_files"] = sorted(os.listdir(DATA / "rides"))
    for ext, f in r["dated_entry"]["files"].items():
        run("cp", str(DATA / "rides" / f["name"]), str(OUT / f"after-dated.{ext}"))
    run("bikecomputer", "usb-image", "--data-dir", str(DATA), "--out", str(OUT / "usb-dated.img"))
    r["log"] = log_since(cursor)[-4000:]
    save()


def undated_ride_then_the_plug() -> None:
    """Issue 17 item 4 across a reboot: a ride on a stale clock ends, its records kept for
    dating, and the plug is pulled before the clock was set (the host kills QEMU as soon as
    /out/pull-the-plug appears); scenario clock-2 boots the board again."""
    r = ride_on_a_stale_clock("reboot")
    record["reboot"] = r
    save()
    os.sync()
    note("pulling the plug with a ride waiting for its date", undated=undated())
    (OUT / "pull-the-plug").write_text("")
    time.sleep(60)


def scenario_clock_2(a) -> None:
    """The board booted again on a stale clock after the plug was pulled with a ride waiting for
    its date: docs/journal.md's rule, the offset cannot be known (how long the board was off is
    unknown), so the ride keeps the date the board guessed, the start logs why, its kept records
    are removed; synchronising the clock afterwards changes nothing."""
    record["boot_clock_unsynced"] = clock_unsynced()
    wait_for(status, 60, "the app after the power cut")
    r: dict = {"undated": undated(), "list": rides_list(), "ride_files_status": status()["ride_files"]}
    record["after_reboot"] = r
    r["log"] = run("journalctl", "-u", "bikecomputer", "-b", "--no-pager", "-o", "cat", check=False)[-4000:]
    synchronise(true_ms())
    time.sleep(4)  # the app looks at the kernel's sync state every second
    r["synced_unsynced"] = clock_unsynced()
    r["list_after_sync"] = rides_list()
    r["undated_after_sync"] = undated()
    r["log_after_sync"] = run("journalctl", "-u", "bikecomputer", "-b", "--no-pager", "-o", "cat", check=False)[-4000:]


def scenario_clock_cut_1(a) -> None:
    """A ride on a synchronised clock (a lap, then riding on), then the host pulls the plug: it
    kills QEMU as soon as /out/pull-the-plug appears."""
    configure(companion=False)
    run("systemctl", "stop", "systemd-timesyncd", check=False)
    synchronise(true_ms())
    start_units()
    ride_running()
    record["ride_start_true_ms"] = true_ms() - status()["timer_ms"]
    time.sleep(3)
    press(LAP, hold_s=1.0)
    time.sleep(3)
    st = status()
    record["before_cut"] = {"state": st["state"], "timer_ms": st["timer_ms"], "true_ms": true_ms()}
    save()
    os.sync()
    (OUT / "pull-the-plug").write_text("")
    time.sleep(60)


def scenario_clock_cut_2(a) -> None:
    """After the cut the board boots on its stale saved clock (unsynchronised); the ride is
    recovered, goes on, ends."""
    record["boot_clock_unsynced"] = clock_unsynced()
    record["boot_clock_ms"] = int(time.time() * 1000)
    record["boot_true_ms"] = true_ms()
    st = wait_for(status, 60, "the app after the power cut")
    record["after_boot"] = {"state": st["state"], "timer_ms": st["timer_ms"], "recovered": st.get("recovered"),
                            "unit": unit("bikecomputer")}
    wait_for(lambda: sensor_state(status(), "HR") == "connected", 30, "the bridge feeds the recovered ride")
    time.sleep(3)
    record["going_on"] = {"state": status()["state"], "timer_ms": status()["timer_ms"]}
    record["end"] = end_ride()
    fits = wait_for(lambda: fit_files(), 30, "the ride file")
    run("cp", fits[-1], str(OUT / "clock-cut.fit"))
    # The next ride in this boot, the clock still unsynchronised: it must be dated by the
    # board's clock and kept for dating (undated/), not by the recovered ride's time line (which
    # cannot know how long the board was off) as if that were trusted.
    before = {e["id"] for e in rides_list()}
    ride_running()
    nxt: dict = {"start_true_ms": true_ms() - status()["timer_ms"], "start_board_ms": int(time.time() * 1000) - status()["timer_ms"],
                 "unsynced": clock_unsynced()}
    record["next_ride"] = nxt
    time.sleep(4)
    nxt["end"] = end_ride()
    nxt["entry"] = wait_for(lambda: [e for e in rides_list() if e["id"] not in before], 30, "the next ride in the ride list")[0]
    time.sleep(2)
    nxt["undated"] = undated()
    # Then the clock is synchronised: the ride is dated by the true time.
    synchronise(true_ms())
    rid = nxt["entry"]["id"]
    nxt["dated_entry"] = wait_for(lambda: [e for e in rides_list() if e["id"] == rid and e["version"] > nxt["entry"]["version"]],
                                  30, "the next ride dated once the clock is set")[0]
    # Its kept records go once the dated files are durable: a step or two after the new version
    # is listed (stop 35's CI read them at once, under load, and found them still there).
    try:
        wait_for(lambda: not [n for n in undated() if n.startswith(rid)], 30, "the next ride's kept records removed once dated")
    except TimeoutError:
        pass  # the host test says what is left
    nxt["undated_after_sync"] = undated()
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-3000:]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["ride", "logwrites", "faults", "latency", "clock", "clock-2", "clock-cut-1", "clock-cut-2"])
    p.add_argument("--mark-interval", type=float, default=0.25)
    p.add_argument("--cases", default="full,readonly,flakey,dropped,unusable")
    p.add_argument("--delay-ms", type=int, default=200)
    p.add_argument("--presses", type=int, default=40)
    a = p.parse_args()
    fn = {"ride": scenario_ride, "logwrites": scenario_logwrites, "faults": scenario_faults, "latency": scenario_latency, "clock": scenario_clock,
          "clock-2": scenario_clock_2, "clock-cut-1": scenario_clock_cut_1, "clock-cut-2": scenario_clock_cut_2}[a.scenario]
    try:
        fn(a)
    except Exception as e:
        record["errors"].append(f"{type(e).__name__}: {e}")
        record["journal_app_on_error"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]
        record["journal_bridge_on_error"] = run("journalctl", "-u", "bikebridge", "--no-pager", "-o", "cat", check=False)[-2000:]
        save()
        raise
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
