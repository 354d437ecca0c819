"""`bikecomputer run` with a Sharp memory LCD, end to end inside the test VM (run by
Tests/vm/test_vm_memlcd.py through `inhost`): the panel is the project's memlcd-sim module (an
SPI controller whose device is bound to spidev, /dev/spidevB.0), loaded with the device absent.

It boots without the panel (the display is retried), the device appears, the idle screen is
drawn; nothing changes for 3 s (VCOM must keep alternating); a ride starts; the panel loses its
supply mid-ride (nothing on SPI says so); the process is stopped for 3 s (a stalled loop) and
continued; the device goes away for 2 s and comes back having lost its supply; SIGTERM stops the
process (the panel is cleared). Then a second run with EXTMODE high: VCOM on a gpio-sim line
(EXTCOMIN) instead of the commands. It records timings, the status replies, the kernel's memory,
state and VCOM log in OUT (memlcd.json, <step>.memory, <step>.state); the host test checks them
and compares the memory with what SharpMemoryEmulator holds for the same screen value
(screen-oracle)."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import subprocess
import time

import guest_util  # beside this script
from guest_util import stable, sysread, syswrite, wait_for

p = argparse.ArgumentParser()
for name in ["bin", "debugfs", "bus", "chip", "sim", "out"]:
    p.add_argument(f"--{name}", required=True)
a = p.parse_args()
OUT = pathlib.Path(a.out)
WORK = pathlib.Path("/tmp/memlcd")
WORK.mkdir(parents=True, exist_ok=True)
EXTCOMIN = 5
record: dict = {"steps": [], "errors": []}
t0 = time.monotonic()


def now() -> float:
    return time.monotonic() - t0


def note(what: str, **fields) -> None:
    entry = {"t": round(now(), 3), "what": what, **fields}
    record["steps"].append(entry)
    print(json.dumps(entry), flush=True)


def kstate() -> dict:
    out = {}
    for line in sysread(f"{a.debugfs}/state").splitlines():
        k, _, v = line.partition(" ")
        out[k] = int(v)
    return out


def memory() -> bytes:
    with open(f"{a.debugfs}/memory", "rb") as f:
        return f.read()


def vcom_log() -> list[list[int]]:
    return [[int(x) for x in line.split()] for line in sysread(f"{a.debugfs}/vcom_log").splitlines()]


def boot_ns() -> int:
    return time.monotonic_ns()  # the module stamps with ktime_get_ns: the same clock


def control(line: str) -> str:
    return guest_util.control(str(WORK / "control.sock"), line)


def status() -> dict:
    return guest_util.status(str(WORK / "control.sock"))


def stable_memory() -> bytes:
    return stable(memory, interval_s=0.1)


def snapshot(name: str) -> dict:
    mem = stable_memory()
    st = status()
    (OUT / f"{name}.memory").write_bytes(mem)
    (OUT / f"{name}.state").write_text(json.dumps(kstate()))
    (OUT / f"{name}.status.json").write_text(json.dumps(st))
    note(f"snapshot {name}", state=st["state"], display=st["hardware"]["display"])
    return st


def checkerboard_lines(mem: bytes, bpl: int) -> int:
    """Lines still holding what a panel that lost its supply drifts to (memlcd-sim's pattern)."""
    return sum(1 for y in range(len(mem) // bpl)
               if mem[y * bpl:(y + 1) * bpl] == bytes([0xAA if y % 2 == 0 else 0x55]) * bpl)


def write_config(path: pathlib.Path, extcomin: bool) -> None:
    path.write_text(f"""
[buttons]
chip = "{a.chip}"
pins = [17, 27]

[display]
type = "sharp-ls027"
spi_bus = {a.bus}
chip_select = 0
spi_speed_hz = 1000000
{f"extcomin_pin = {EXTCOMIN}" if extcomin else ""}

[bridge]
transport = "unix"
path = "{WORK}/bridge.sock"

[control]
socket = "{WORK}/control.sock"

[training]
auto_pause = false
""")


def start(config: pathlib.Path, logname: str) -> tuple[subprocess.Popen, object]:
    log = open(OUT / logname, "wb")
    proc = subprocess.Popen([a.bin, "run", "--config", str(config), "--data-dir", str(WORK / "data"), "--no-buttons",
                             "--ride-active-file", str(WORK / "ride-active")], stdout=log, stderr=subprocess.STDOUT)
    return proc, log


def stop(proc: subprocess.Popen, log) -> object:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            status_ = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            status_ = "killed after SIGTERM did not stop it within 15 s"
    else:
        status_ = f"exited early with {proc.returncode}"
    log.close()
    return status_


config = WORK / "config.toml"
write_config(config, extcomin=False)
proc, log = start(config, "bikecomputer.log")
note("started bikecomputer", pid=proc.pid)
try:
    bpl = kstate()["width"] // 8
    # Absent at boot: running, the display failed and retried.
    st = wait_for(lambda: status(), 30, "the control socket answers", poll_s=0.1)
    record["absent"] = {"display": st["hardware"]["display"], "bus_errors": st["display"]["bus_errors"]}
    note("absent at boot", **record["absent"])

    # The device appears: the panel is cleared and the idle screen drawn within the retry period.
    syswrite(f"{a.debugfs}/present", "1")
    appeared = now()
    wait_for(lambda: status()["hardware"]["display"].startswith("ok ("), 12, "the display in use once the device exists", poll_s=0.1)
    wait_for(lambda: kstate()["lines_written"] >= 240, 10, "the first frame written")
    record["appeared_after_s"] = round(now() - appeared, 3)
    record["idle"] = snapshot("idle")

    # Idle: nothing changes for 3 s; VCOM keeps alternating.
    since = boot_ns()
    time.sleep(3.2)
    record["vcom_idle"] = [e for e in vcom_log() if e[0] > since]
    record["vcom_idle_window_ns"] = [since, boot_ns()]
    note("idle VCOM", changes=len(record["vcom_idle"]))

    # A ride.
    record["start_reply"] = control("start")
    wait_for(lambda: status()["state"] == "running", 20, "running after the countdown", poll_s=0.1)
    time.sleep(1.0)
    note("running")

    # The panel loses its supply mid-ride: no line may stay garbage past the rewrite period.
    syswrite(f"{a.debugfs}/power_loss", "1")
    lost = now()
    wait_for(lambda: checkerboard_lines(memory(), bpl) == 0, 12, "every line rewritten after the power loss", poll_s=0.1)
    record["power_loss_repaired_after_s"] = round(now() - lost, 3)
    note("power loss repaired", after_s=record["power_loss_repaired_after_s"])

    # A stalled loop: the process stopped for 3 s; VCOM resumes at once and at its rate.
    os.kill(proc.pid, signal.SIGSTOP)
    stopped = boot_ns()
    time.sleep(3.0)
    os.kill(proc.pid, signal.SIGCONT)
    continued = boot_ns()
    time.sleep(2.5)
    record["vcom_stall"] = {"stopped_ns": stopped, "continued_ns": continued, "log": [e for e in vcom_log() if e[0] > stopped - 1_500_000_000]}
    note("stalled and continued", changes_after=len([e for e in record["vcom_stall"]["log"] if e[0] > continued]))

    # The device goes away for 2 s and comes back with a panel that lost its supply.
    before = status()["display"]["bus_errors"]
    syswrite(f"{a.debugfs}/present", "0")
    time.sleep(2.0)
    syswrite(f"{a.debugfs}/power_loss", "1")
    syswrite(f"{a.debugfs}/present", "1")
    back = now()
    wait_for(lambda: status()["hardware"]["display"].startswith("ok (") and checkerboard_lines(memory(), bpl) == 0, 15,
             "the display back and whole after the device came back", poll_s=0.1)
    st = status()
    record["gone"] = {"back_after_s": round(now() - back, 3), "bus_errors_before": before, "bus_errors_after": st["display"]["bus_errors"],
                      "clears": kstate()["clears"]}
    note("device back", **record["gone"])
    record["running"] = snapshot("running")
except Exception as e:
    record["errors"].append(f"{type(e).__name__}: {e}")
finally:
    record["exit_status"] = stop(proc, log)
    record["after_exit"] = kstate()
    record["after_exit_white"] = memory() == b"\xff" * len(memory())
    note("stopped", exit_status=record["exit_status"], white=record["after_exit_white"])

# EXTMODE high: VCOM on the EXTCOMIN line, no VCOM-only commands.
if not record["errors"]:
    write_config(config, extcomin=True)
    proc, log = start(config, "bikecomputer-extcomin.log")
    try:
        wait_for(lambda: status()["hardware"]["display"].startswith("ok ("), 20, "the display with EXTCOMIN", poll_s=0.1)
        record["extcomin_display"] = status()["hardware"]["display"]
        vcom_only = kstate()["vcom_only"]
        samples = []
        end = time.monotonic() + 3.2
        while time.monotonic() < end:
            samples.append([time.monotonic_ns(), int(sysread(f"{a.sim}/sim_gpio{EXTCOMIN}/value"))])
            time.sleep(0.02)
        record["extcomin_samples"] = samples
        record["extcomin_vcom_only_commands"] = kstate()["vcom_only"] - vcom_only
        note("EXTCOMIN sampled", samples=len(samples))
    except Exception as e:
        record["errors"].append(f"EXTCOMIN: {type(e).__name__}: {e}")
    finally:
        record["extcomin_exit_status"] = stop(proc, log)
(OUT / "memlcd.json").write_text(json.dumps(record, indent=1))
