"""The rider's side of the system VM tests (Tests/vm/test_vm_system.py, test_vm_logwrites.py),
run inside the installed Debian guest by its own python3 as root: configures the board as a rider
would (/etc/bikecomputer/config.toml, /etc/default/bikebridge), rides through gpio-sim buttons,
reads the kernel's SSD1306 and the app's status, and writes what it saw to /out.

    python3 /out/guest_system.py SCENARIO [options]

Scenarios: ride (end to end with unit crashes), logwrites (a ride on dm-log-writes with marks),
powercut-1 / powercut-2 (a ride, the plug pulled by the host, the ride recovered after boot).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import socket
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
LAPS = [0]  # laps the rider has taken (the status has no lap count)
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


def press(offset: int, hold_s: float = 0.2) -> None:
    syswrite(f"{sim()}/sim_gpio{offset}/pull", "pull-down")
    time.sleep(hold_s)
    syswrite(f"{sim()}/sim_gpio{offset}/pull", "pull-up")


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
    out = run("systemctl", "show", name, "-p", "ActiveState,SubState,NRestarts,MainPID,Result,User,ExecMainStatus")
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


def start_units() -> dict:
    run("systemctl", "restart", "bikecomputer.service")
    run("systemctl", "restart", "bikebridge.service")
    st = wait_for(status, 60, "the control socket answers")
    wait_for(lambda: sensor_state(status(), "HR") == "connected" and sensor_state(status(), "PWR") == "connected", 30,
             "heart rate and power connected through the bridge unit")
    return st


def ride_running() -> None:
    press(START)
    wait_for(lambda: status()["state"] == "running", 15, "running after the countdown")


def scenario_ride(a) -> None:
    configure(companion=True)
    start_units()
    note("units up", bikecomputer=unit("bikecomputer"), bikebridge=unit("bikebridge"), companion=unit("bikecompanion"))
    record["units_before"] = {u: unit(u) for u in ["bikecomputer", "bikebridge", "bikecompanion"]}
    record["bridge_process_user"] = run("ps", "-o", "user=", "-p", unit("bikebridge")["MainPID"]).strip()
    record["app_process_user"] = run("ps", "-o", "user=", "-p", unit("bikecomputer")["MainPID"]).strip()
    record["sockets"] = run("ls", "-ln", "/run/bikecomputer")
    ride_running()
    note("running")
    time.sleep(4)
    press(LAP)
    time.sleep(1)
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
    press(PAGE)
    wait_for(lambda: gddram()[:128 * 2] != page_a[:128 * 2] or gddram() != page_a, 5, "the display shows another page")
    record["page_changed"] = True
    time.sleep(3)
    press(START)
    wait_for(lambda: status()["state"] == "paused", 10, "paused")
    press(START, hold_s=2.2)
    wait_for(lambda: status()["state"] == "ended", 10, "ended after a long press")
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

    def mark(self, name: str) -> None:
        subprocess.run(["dmsetup", "message", self.device, "0", "mark", name], check=True)
        self.count += 1

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                st = status()
                laps = LAPS[0]
                self.mark(f"s {st['state']} t {st['timer_ms']} l {laps} m {time.monotonic_ns() // 1_000_000}")
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
            press(LAP)
            time.sleep(0.3)
            LAPS[0] += 1
        elif what in ("pause", "resume"):
            press(START)
            want = "paused" if what == "pause" else "running"
            wait_for(lambda: status()["state"] == want, 10, want)
        note(what)
        time.sleep(hold)
    m.stop.set()
    m.join()
    final = status()
    record["before_end"] = {"timer_ms": final["timer_ms"], "state": final["state"]}
    m.mark(f"s {final['state']} t {final['timer_ms']} l -1 m {time.monotonic_ns() // 1_000_000}")
    press(START)
    wait_for(lambda: status()["state"] == "paused", 10, "paused")
    press(START, hold_s=2.2)
    wait_for(lambda: status()["state"] == "ended", 10, "ended")
    wait_for(lambda: sorted(DATA.rglob("*.fit")), 30, "the ride's FIT file")
    m.mark("ended")
    run("systemctl", "stop", "bikebridge", "bikecomputer")
    run("umount", str(DATA))
    run("dmsetup", "remove", "logw")
    record["marks"] = m.count
    record["mark_errors"] = m.errors
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]


def scenario_powercut_1(a) -> None:
    """A ride, then the host pulls the plug (it kills QEMU when /out/pull-the-plug appears)."""
    configure(companion=False)
    start_units()
    ride_running()
    time.sleep(4)
    press(LAP)
    time.sleep(3)
    st = status()
    record["before_cut"] = {"state": st["state"], "timer_ms": st["timer_ms"], "wall_ms": int(time.time() * 1000)}
    save()
    os.sync()  # the record reaches the host; the app's own writes are what they are
    (OUT / "pull-the-plug").write_text("")
    time.sleep(60)


def scenario_powercut_2(a) -> None:
    """After the power cut: the boot started the units; the ride is recovered and goes on."""
    st = wait_for(status, 60, "the control socket answers after the power cut")
    record["after_boot"] = {"state": st["state"], "timer_ms": st["timer_ms"], "recovered": st.get("recovered"),
                            "unit": unit("bikecomputer")}
    wait_for(lambda: sensor_state(status(), "HR") == "connected", 30, "the bridge feeds the recovered ride")
    time.sleep(3)
    record["going_on"] = {"state": status()["state"], "timer_ms": status()["timer_ms"]}
    press(START)
    wait_for(lambda: status()["state"] == "paused", 10, "paused")
    press(START, hold_s=2.2)
    wait_for(lambda: status()["state"] == "ended", 10, "ended")
    fits = wait_for(lambda: sorted(DATA.rglob("*.fit")), 30, "the ride's FIT file")
    run("cp", str(fits[-1]), str(OUT / "ride.fit"))
    record["journal_app"] = run("journalctl", "-u", "bikecomputer", "--no-pager", "-o", "cat", check=False)[-4000:]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["ride", "logwrites", "powercut-1", "powercut-2"])
    p.add_argument("--mark-interval", type=float, default=0.25)
    a = p.parse_args()
    fn = {"ride": scenario_ride, "logwrites": scenario_logwrites, "powercut-1": scenario_powercut_1,
          "powercut-2": scenario_powercut_2}[a.scenario]
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
