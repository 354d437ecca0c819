"""Issue 27, the installed system's half, inside the booted Debian guest (Tests/vm/test_vm_hardening.py):
what each shipped unit is allowed, measured by `systemd-analyze security` (and what it says of the
path units, which run no process); the users and groups
install.sh made and what each can reach; the USB drive installed before the first ride (the
order that left rides/ root's), a ride through the units with its path-unit triggers counted and
the drive rebuilt at its end; a link named like a ride and a link in place of the image; the
companion's view of the data directory and its pairing through the sandbox.

    python3 /out/guest_hardening.py [measure-only]

Runs as root; uses guest_system.py's helpers (status, configure, units); writes /out/record.json.
`measure-only` only measures the units installed (a `before` table from another image).
"""
from __future__ import annotations

import ctypes
import json
import os
import pathlib
import re
import select
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, "/out")
import guest_system as g  # noqa: E402

UNITS = ["bikecomputer.service", "bikecompanion.service", "bikebridge.service", "bikecomputer-usb-image.service",
         "bikecomputer-usb-gadget.service", "bikecomputer-usb-refresh.service", "bikecomputer-poweroff.service"]
# Path units run no process (PID 1 watches a path and starts the service they name).
PATH_UNITS = ["bikecomputer-usb-refresh.path", "bikecomputer-poweroff.path"]
DATA = g.DATA
RIDES = DATA / "rides"
IMAGE = DATA / "usb" / "usb.img"
GADGET_LUN = "/sys/kernel/config/usb_gadget/bikecomputer/functions/mass_storage.usb0/lun.0"
# systemd's PathChanged= inotify mask (src/core/path.c): what makes the path unit trigger.
IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x4, 0x8, 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
PATH_CHANGED_MASK = IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
OLD_PATH_UNIT = """[Unit]
Description=The refresh path unit as shipped before issue 27 (TriggerLimitBurst=4 per 30 s)
[Path]
PathChanged=/var/lib/bikecomputer/rides
PathChanged=/run/bikecomputer
Unit=vm-old-refresh.service
TriggerLimitIntervalSec=30
TriggerLimitBurst=4
"""
# Its service skipped as the refresh is while a ride (or its files) is being written: at once.
OLD_PATH_SERVICE = "[Unit]\nConditionPathExists=!/run/bikecomputer/ride-active\n[Service]\nType=oneshot\nExecStart=/bin/true\n"


def run(*cmd, check=True, user=None) -> str:
    if user:
        cmd = ("runuser", "-u", user, "--", *cmd)
    return g.run(*cmd, check=check)


def rc(*cmd, user=None) -> int:
    if user:
        cmd = ("runuser", "-u", user, "--", *cmd)
    return subprocess.run(cmd, capture_output=True).returncode


def show(unit: str, props: str) -> dict:
    out = run("systemctl", "show", unit, "-p", props, check=False)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def journal(unit: str, since: str | None = None) -> str:
    args = ["journalctl", "-u", unit, "--no-pager", "-o", "cat"]
    return run(*args, check=False)


def measure() -> dict:
    """`systemd-analyze security` of each shipped unit installed here: exposure, rating and
    the checks it fails (name, exposure)."""
    out: dict = {}
    for unit in UNITS:
        if show(unit, "LoadState").get("LoadState") != "loaded":
            continue
        text = run("systemd-analyze", "security", "--no-pager", unit, check=False)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)", text)
        js = run("systemd-analyze", "security", "--no-pager", "--json=short", unit, check=False)
        try:
            checks = [c for c in json.loads(js) if c.get("exposure") not in (None, "0.0", 0, 0.0)]
        except ValueError:
            checks = []
        out[unit] = {"exposure": float(m.group(1)) if m else None, "rating": m.group(2) if m else None,
                     "failed_checks": [(c.get("name"), c.get("description"), c.get("exposure")) for c in checks],
                     "text": text[-6000:]}
    return out


def measure_path_units() -> dict:
    """What `systemd-analyze security` says of each path unit (it rates services: a path unit
    has no process to sandbox), the unit's state, and who may change what it watches (the watched
    directory, or the directory of the watched file)."""
    out: dict = {}
    for unit in PATH_UNITS:
        p = subprocess.run(["systemd-analyze", "security", "--no-pager", unit], capture_output=True, text=True)
        props = show(unit, "LoadState,ActiveState,SubState,Result,Paths,Triggers")
        raw = run("systemctl", "show", unit, "-p", "Paths", check=False)
        watched = re.findall(r"(/[^\s;(){}]+)", raw)
        out[unit] = {"analyze_rc": p.returncode, "analyze": (p.stdout + p.stderr)[-3000:], "props": props, "paths": raw,
                     "watched": {w: dict(stat_of(d), dir=d) for w in watched
                                 for d in [w if os.path.isdir(w) else os.path.dirname(w)] if os.path.lexists(d)}}
    return out


def stat_of(path) -> dict:
    import grp
    import pwd
    st = os.lstat(path)
    return {"owner": pwd.getpwuid(st.st_uid).pw_name, "group": grp.getgrgid(st.st_gid).gr_name,
            "mode": oct(st.st_mode & 0o7777), "link": os.path.islink(path)}


class InotifyCounter(threading.Thread):
    """Counts inotify wake-ups (reads) and events on the path unit's watched directories, with
    the mask systemd uses for PathChanged=: each read is at most one trigger of the path unit."""

    def __init__(self, paths) -> None:
        super().__init__(daemon=True)
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        for p in paths:
            libc.inotify_add_watch(self.fd, str(p).encode(), PATH_CHANGED_MASK)
        self.reads = 0
        self.events = 0
        self.names: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if not r:
                continue
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            self.reads += 1
            i = 0
            while i + 16 <= len(data):
                wd, mask, cookie, n = __import__("struct").unpack_from("iIII", data, i)
                name = data[i + 16:i + 16 + n].split(b"\0")[0].decode(errors="replace")
                self.events += 1
                if len(self.names) < 200:
                    self.names.append(f"{mask:#x}:{name}")
                i += 16 + n


def ctl(*words, user=None) -> dict:
    cmd = ["bikecomputer", "ctl", *words]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return {"rc": r.returncode, "out": r.stdout.strip(), "err": r.stderr.strip()}


def usb_host_disk() -> str | None:
    """The gadget's drive as the guest's own USB host (dummy_hcd) sees it: /dev/sdX."""
    for d in sorted(pathlib.Path("/sys/block").glob("sd*")):
        return f"/dev/{d.name}"
    return None


def drive_files(device: str) -> list[str]:
    """Activities/ on the drive as a computer plugged into the unit reads it."""
    subprocess.run(["blockdev", "--flushbufs", device], capture_output=True)
    r = subprocess.run(["mdir", "-b", "-i", device, "::/Activities"], capture_output=True, text=True,
                       env={"MTOOLS_SKIP_CHECK": "1", "PATH": "/usr/bin:/bin"})
    return sorted(line.strip().rsplit("/", 1)[-1] for line in r.stdout.splitlines() if line.strip())


def image_files(image: str) -> list[str]:
    r = subprocess.run(["mdir", "-b", "-i", image, "::/Activities"], capture_output=True, text=True,
                       env={"MTOOLS_SKIP_CHECK": "1", "PATH": "/usr/bin:/bin"})
    return sorted(line.strip().rsplit("/", 1)[-1] for line in r.stdout.splitlines() if line.strip())


def device_bytes(path: str) -> bytes:
    """The whole drive as the USB host reads it; right after a refresh (eject, insert) the host
    may not have the new medium yet ("No medium found"): tried again for up to 60 s."""
    def read():
        subprocess.run(["blockdev", "--flushbufs", path], capture_output=True)
        with open(path, "rb") as f:
            return f.read()
    return g.wait_for(read, 60, f"the medium in {path}", poll_s=1)


def users_and_groups() -> dict:
    """What install.sh made, and what the bridge's user can reach."""
    r: dict = {"bikebridge_groups": run("id", "-nG", "bikebridge").split(), "bike_groups": run("id", "-nG", "bike").split()}
    r["bridge_can_write_config_dir"] = rc("test", "-w", "/etc/bikecomputer", user="bikebridge") == 0
    r["bridge_can_read_config"] = rc("cat", "/etc/bikecomputer/config.toml", user="bikebridge") == 0
    r["bridge_can_list_data"] = rc("ls", str(DATA), user="bikebridge") == 0
    r["bridge_can_list_run"] = rc("ls", "/run/bikecomputer", user="bikebridge") == 0
    r["bridge_can_reach_socket"] = rc("test", "-w", "/run/bikecomputer/bridge.sock", user="bikebridge") == 0
    r["bridge_can_reach_control"] = rc("test", "-w", "/run/bikecomputer/control.sock", user="bikebridge") == 0
    r["dirs"] = {p: stat_of(p) for p in ["/run/bikecomputer", "/run/bikecomputer/bridge.sock", "/run/bikecomputer/control.sock",
                                         str(DATA), str(RIDES), str(DATA / "companion"), str(DATA / "usb"), "/etc/bikecomputer"]
                 if os.path.lexists(p)}
    return r


def companion_view() -> dict:
    """The companion's mount namespace: what of the data directory it sees and may write, and a
    pairing through its sandbox (its token file written in companion/)."""
    pid = show("bikecompanion.service", "MainPID")["MainPID"]
    r: dict = {"pid": pid}

    def inside(*cmd):
        p = subprocess.run(["nsenter", "-t", pid, "-m", "--", *cmd], capture_output=True, text=True)
        return p.returncode, (p.stdout + p.stderr).strip()

    r["sees"] = inside("ls", "-A", str(DATA))
    r["write_data_dir"] = inside("touch", str(DATA / "companion-probe"))
    r["write_rides"] = inside("touch", str(RIDES / "companion-probe"))
    r["read_journal"] = inside("ls", str(DATA / "journal"))
    r["write_own_dir"] = inside("touch", str(DATA / "companion" / "probe"))
    inside("rm", "-f", str(DATA / "companion" / "probe"))
    r["write_courses"] = inside("touch", str(DATA / "courses" / "probe"))
    inside("rm", "-f", str(DATA / "courses" / "probe"))
    # Pairing: the code is in the companion's log (and on the unit's screen).
    base = "http://127.0.0.1:8080"
    cursor = len(journal("bikecompanion.service"))
    req = urllib.request.Request(base + "/api/pair/request", data=b"", method="POST", headers={"Origin": base})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            r["pair_request"] = resp.status
        code = g.wait_for(lambda: re.findall(r"pairing code (\d{6})", journal("bikecompanion.service")[cursor:]), 20,
                          "the pairing code in the companion's log")[-1]
        body = json.dumps({"code": code, "name": "vm phone"}).encode()
        req = urllib.request.Request(base + "/api/pair", data=body, method="POST",
                                     headers={"Origin": base, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            r["pair"] = resp.status
            paired = json.loads(resp.read())
            r["token_id"] = paired.get("token_id")
        # A course uploaded from the phone is stored in courses/ through the sandbox.
        gpx = ('<gpx version="1.1"><trk><name>VM course</name><trkseg>'
               + "".join(f'<trkpt lat="{46.0 + i * 0.0005:.7f}" lon="7.0"/>' for i in range(20)) + "</trkseg></trk></gpx>")
        req = urllib.request.Request(base + "/api/courses?name=vm-course.gpx", data=gpx.encode(), method="POST",
                                     headers={"Origin": base, "Authorization": "Bearer " + paired.get("token", ""),
                                              "Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            r["course_upload"] = resp.status
    except Exception as e:  # noqa: BLE001 - recorded for the host's assertion
        r["pair_error"] = f"{type(e).__name__}: {e}"
    tokens = DATA / "companion" / "companion-tokens"
    r["tokens_file"] = stat_of(tokens) if tokens.exists() else None
    r["tokens_has_id"] = bool(r.get("token_id")) and tokens.exists() and r["token_id"] in tokens.read_text()
    course = DATA / "courses" / "vm-course.course"
    r["course_file"] = stat_of(course) if course.exists() else None
    r["journal"] = journal("bikecompanion.service")[-2000:]
    return r


USB_UNITS = ("bikecomputer-usb-image.service", "bikecomputer-usb-refresh.service")


def usb_units_idle() -> bool:
    """Neither USB unit running nor a job of theirs queued, and the drive on the image that is there.

    A refresh unit whose job waits for the image unit (Requires + After) is still "inactive", and
    while the image unit has renamed a new image over the old one the LUN names the old file
    "(deleted)" until the refresh re-inserts it: neither alone says the units are done."""
    if any(show(u, "ActiveState")["ActiveState"] not in ("inactive", "failed") for u in USB_UNITS):
        return False
    jobs = run("systemctl", "list-jobs", "--no-legend", "--plain", check=False)
    if any(u in jobs for u in USB_UNITS):
        return False
    lun = pathlib.Path(f"{GADGET_LUN}/file")
    return not lun.exists() or not lun.read_text().strip().endswith("(deleted)")


def wait_usb_settled(what: str, timeout_s: float = 120, quiet_s: float = 2.0) -> None:
    """Until the USB units have been idle for `quiet_s` (a path trigger lands within it)."""
    since = [None]

    def settled():
        now = time.monotonic()
        if not usb_units_idle():
            since[0] = None
            return False
        since[0] = since[0] or now
        return now - since[0] >= quiet_s
    g.wait_for(settled, timeout_s, what, poll_s=0.25)


def wait_refreshed(want: str, what: str, timeout_s: float = 120) -> list[str]:
    """Until the image has `want` in it and the USB units are idle again."""
    def done():
        files = image_files(str(IMAGE)) if IMAGE.exists() else []
        return files if any(want in f for f in files) else None
    g.wait_for(done, timeout_s, what, poll_s=0.5)
    wait_usb_settled(what, timeout_s)
    return image_files(str(IMAGE))


def scenario(measure_only: bool) -> None:
    rec = g.record
    if measure_only:
        # The USB units too, as their installer puts them (the `before` image has them only there).
        if show("bikecomputer-usb-gadget.service", "LoadState").get("LoadState") != "loaded":
            rec["gadget_install"] = run("sh", "/root/board/usb-gadget/install.sh", check=False)
        rec["security"] = measure()
        return
    g.configure(companion=True)
    # The order that left rides/ root's: the data partition fresh (the host's new disk), the app
    # stopped and rides/ gone (no ride saved yet), then the USB drive installed.
    run("systemctl", "stop", "bikebridge", "bikecompanion", "bikecomputer")
    run("rm", "-rf", str(RIDES), str(DATA / "usb"))
    run("modprobe", "dummy_hcd")  # a UDC (and the USB host a laptop would be), as dwc2 on a Pi
    rec["udc"] = os.listdir("/sys/class/udc") if os.path.isdir("/sys/class/udc") else []
    rec["gadget_install"] = run("sh", "/root/board/usb-gadget/install.sh", check=False)
    rec["after_gadget_install"] = {p: stat_of(p) for p in [str(DATA), str(RIDES), str(DATA / "usb")] if os.path.lexists(p)}
    rec["usb_units_after_install"] = {u: show(u, "ActiveState,SubState,Result,ExecMainStatus") for u in
                                      ["bikecomputer-usb-image.service", "bikecomputer-usb-gadget.service", "bikecomputer-usb-refresh.path"]}
    rec["image_journal_after_install"] = journal("bikecomputer-usb-image.service")[-2000:]
    rec["gadget_journal_after_install"] = journal("bikecomputer-usb-gadget.service")[-2000:]
    g.save()
    # The refresh path unit as it was (4 triggers per 30 s) beside the shipped one, on the same paths.
    pathlib.Path("/etc/systemd/system/vm-old-refresh.path").write_text(OLD_PATH_UNIT)
    pathlib.Path("/etc/systemd/system/vm-old-refresh.service").write_text(OLD_PATH_SERVICE)
    run("systemctl", "daemon-reload")
    g.start_units(companion=True)
    run("systemctl", "start", "vm-old-refresh.path")
    rec["security"] = measure()
    rec["path_units"] = measure_path_units()
    rec["users"] = users_and_groups()
    rec["units"] = {u: show(u, "ActiveState,SubState,User,Result") for u in UNITS + PATH_UNITS}
    rec["companion"] = companion_view()
    g.save()

    # A ride through the control socket (as the app's user), its path-unit triggers counted.
    counter = InotifyCounter([RIDES, "/run/bikecomputer"])
    counter.start()
    t0 = time.monotonic()
    rec["ride"] = r = {"start": ctl("start", user="bike")}
    g.wait_for(lambda: g.status()["state"] == "running", 30, "running")
    time.sleep(4)
    r["lap"] = ctl("lap", user="bike")
    time.sleep(3)
    r["pause"] = ctl("pause", user="bike")
    r["end"] = ctl("end", user="bike")
    r["status_at_end_reply"] = g.status()["ride_files"]
    fits = g.wait_for(lambda: sorted(RIDES.glob("*.fit")), 30, "the ride's FIT file")
    r["fit"] = fits[-1].name
    r["files"] = {p.name: stat_of(p) for p in RIDES.iterdir()}
    r["image_files"] = wait_refreshed(fits[-1].name, "the USB image rebuilt by the units with the ride")
    r["seconds"] = round(time.monotonic() - t0, 1)
    time.sleep(2)
    counter.stop.set()
    counter.join()
    r["inotify_reads"], r["inotify_events"], r["inotify_names"] = counter.reads, counter.events, counter.names
    r["path_unit"] = show("bikecomputer-usb-refresh.path", "ActiveState,SubState,Result")
    r["old_path_unit"] = show("vm-old-refresh.path", "ActiveState,SubState,Result")
    # The refresh unit's runs and skips (a trigger while it runs merges into its job).
    r["refresh_runs"] = len(re.findall(r"^Finished ", journal("bikecomputer-usb-refresh.service"), flags=re.M))
    r["refresh_skips"] = len(re.findall(r"skipped", journal("bikecomputer-usb-refresh.service")))
    r["image_runs"] = len(re.findall(r"^Finished ", journal("bikecomputer-usb-image.service"), flags=re.M))
    r["image_journal"] = journal("bikecomputer-usb-image.service")[-2000:]
    r["refresh_journal"] = journal("bikecomputer-usb-refresh.service")[-2000:]
    r["lun_file"] = pathlib.Path(f"{GADGET_LUN}/file").read_text().strip() if os.path.exists(f"{GADGET_LUN}/file") else None
    r["lun_ro"] = pathlib.Path(f"{GADGET_LUN}/ro").read_text().strip() if os.path.exists(f"{GADGET_LUN}/ro") else None
    disk = g.wait_for(usb_host_disk, 30, "the gadget's drive on the guest's USB host")
    r["usb_disk"] = disk
    r["drive_files"] = g.wait_for(lambda: [f for f in drive_files(disk) if f == fits[-1].name] and drive_files(disk), 30,
                                  "the ride on the drive as a computer reads it")
    g.save()

    # A link named like a ride, to a root-only file, planted by the app's user.
    marker = f"vmshadow:SECRET-{os.getpid()}-{int(time.time())}:19000:0:99999:7:::"
    with open("/etc/shadow", "a") as f:
        f.write(marker + "\n")
    fake = "2026-01-01-000000_00000000-0000-4000-8000-000000000027_v1"
    for ext in ("fit", "gpx"):
        run("ln", "-s", "/etc/shadow", str(RIDES / f"{fake}.{ext}"), user="bike")
    rec["link"] = lk = {}
    lk["image_files"] = wait_refreshed(fits[-1].name, "the image rebuilt after the link appeared")
    # The refresh ran after the link (its journal says what it left off).
    lk["left_off"] = g.wait_for(lambda: [l for l in journal("bikecomputer-usb-image.service").splitlines() if "left off the drive" in l],
                                60, "the image unit's word on the link")
    lk["secret_in_image"] = marker.encode() in IMAGE.read_bytes()
    lk["secret_on_drive"] = marker.encode() in device_bytes(disk)
    lk["fake_in_image"] = any(fake in f for f in image_files(str(IMAGE)))
    # A link in place of the image itself: the root step refuses it, the drive keeps its image.
    # (Each planted link triggered a rebuild: the drive is read once the last one is done.)
    wait_usb_settled("the USB units idle after the links' rebuilds")
    before = pathlib.Path(f"{GADGET_LUN}/file").read_text().strip()
    run("ln", "-sf", "/etc/shadow", str(DATA / "usb" / "planted.img"), user="bike")
    p = subprocess.run(["/usr/local/lib/bikecomputer/usb-gadget.sh", "refresh", str(DATA / "usb" / "planted.img")],
                       capture_output=True, text=True, env={"IMAGE_OWNER": "bike", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    lk["image_link_refresh"] = {"rc": p.returncode, "err": p.stderr.strip()}
    lk["lun_file_after"] = pathlib.Path(f"{GADGET_LUN}/file").read_text().strip()
    lk["lun_file_before"] = before
    lk["secret_on_drive_after"] = marker.encode() in device_bytes(disk)
    run("rm", "-f", str(DATA / "usb" / "planted.img"), *[str(RIDES / f"{fake}.{ext}") for ext in ("fit", "gpx")])
    lines = pathlib.Path("/etc/shadow").read_text().splitlines()
    pathlib.Path("/etc/shadow").write_text("".join(l + "\n" for l in lines if l != marker))
    rec["units_after"] = {u: show(u, "ActiveState,SubState,Result,NRestarts,ExecMainStartTimestampMonotonic") for u in UNITS + PATH_UNITS}
    rec["journal_app"] = journal("bikecomputer.service")[-3000:]
    rec["journal_bridge"] = journal("bikebridge.service")[-2000:]


def main() -> int:
    measure_only = len(sys.argv) > 1 and sys.argv[1] == "measure-only"
    try:
        scenario(measure_only)
    except Exception as e:
        g.record["errors"].append(f"{type(e).__name__}: {e}")
        g.record["journal_app_on_error"] = journal("bikecomputer.service")[-4000:]
        g.record["journal_bridge_on_error"] = journal("bikebridge.service")[-2000:]
        g.record["journal_all_on_error"] = run("journalctl", "-b", "--no-pager", "-p", "warning", check=False)[-6000:]
        g.save()
        raise
    g.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
