"""Issue 17, item 3: power cuts on a real file system, the xfstests way.

The installed guest puts its data partition on dm-log-writes (data /dev/vdb, log /dev/vdc),
makes the ext4 file system through it, and rides (laps, a pause) with the units as installed;
guest_system.py puts the app's status into the log as a mark every 250 ms. On the host,
logwrites.py (the project's own replayer) replays the log onto a blank image to every flush/FUA
and to a point between each two of them (bounded by POINTS_MAX), and at each point:
e2fsck (as the boot would), mount, `bikecomputer journal inspect` and, at a spread of points, a
restart of `bikecomputer run` on the recovered directory. At every point the ride must be found
with at most one second of timer lost against the last status mark before it, nothing corrupt
accepted, and the state (running/paused, laps) one the app had shown around that moment.
Results: .build/vm/logwrites-sweep.json (docs/journal.md quotes it)."""
from __future__ import annotations

import concurrent.futures
import json
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import logwrites
import system
import system_fixtures as sf
import vmlib
from conftest import guest_result, launcher, prepared

DATA_MB = 32
LOG_MB = 384
POINTS_MAX = 400  # replay points checked with fsck + mount + inspect
RESTARTS_MAX = 6  # of those, points where the app itself is restarted on the recovered data
LOSS_MAX_MS = 1000
SWEEP_WORKERS = 2  # points checked at once (the 2-core CI machine)
MARKS_AFTER = 3  # marks after a point whose status may still be what the app showed at it
SWEEP_REPORT = vmlib.CACHE / "logwrites-sweep.json"


def logged_ride(k):
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("logwrites")
    data = system.make_data_disk(out / "data.img", DATA_MB, fs=False)
    log_disk = system.make_data_disk(out / "log.img", LOG_MB, fs=False)
    result = vm.run(sf.guest_script("logwrites"), timeout_s=600, data_image=data, disks=[system.Disk(log_disk)], outdir=out,
                    name="logwrites")
    record = sf.record_of(result)
    assert result.ok and not record["errors"], sf.explain(result, record)
    return result, record, data, log_disk


@launcher(__name__, order=0)
def _start(request):
    k = request.getfixturevalue("amd64")
    def ride_and_sweep():
        logged = logged_ride(k)
        with vmlib.timed("dm-log-writes sweep (host)"):
            return run_sweep(logged)
    return sf.Background(ride_and_sweep)


def parse_mark(text: str) -> dict | None:
    """'s:STATE:t:TIMER_MS:l:LAPS:p:PRESSED:r:RIDE:m:MONO_MS' (guest_system.status_mark) -> dict:
    the app's state and timer, the laps taken for sure (the status's `lap`, which changes only
    once the lap is durable) and the LAP presses of that ride by then, the ride (its id's first 8
    characters, '-' for none)."""
    parts = text.split(":")
    if len(parts) != 12 or parts[0] != "s":
        return None
    return {"state": parts[1], "timer_ms": int(parts[3]), "laps": int(parts[5]), "pressed": int(parts[7]),
            "ride": parts[9], "mono_ms": int(parts[11])}


def replay_points(log: logwrites.Log) -> list[int]:
    """Every flush/FUA after the file system was mounted and before the ride ended, and one
    point halfway through the writes between each two of them; evenly thinned to POINTS_MAX."""
    start = log.find_mark("mounted").index
    end = log.find_mark("ended").index
    points: list[int] = []
    previous = start
    for e in log.entries[start + 1:end + 1]:
        if e.is_barrier:
            writes = [w.index for w in log.entries[previous + 1:e.index] if w.is_write]
            if len(writes) >= 2:
                points.append(writes[len(writes) // 2])
            points.append(e.index)
            previous = e.index
    if len(points) > POINTS_MAX:
        step = len(points) / POINTS_MAX
        points = [points[int(i * step)] for i in range(POINTS_MAX)]
    return points


def inspect(bikecomputer: pathlib.Path, journal_dir: pathlib.Path) -> dict:
    r = subprocess.run([str(bikecomputer), "journal", "inspect", "--json", str(journal_dir)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"journal inspect {journal_dir}: {r.stderr}"
    return json.loads(r.stdout)


def restart_status(bikecomputer: pathlib.Path, data_dir: pathlib.Path) -> dict:
    """Starts `bikecomputer run` on a copy of the recovered data directory and asks its status."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="restart-"))
    try:
        shutil.copytree(data_dir, work / "data", symlinks=True, ignore=shutil.ignore_patterns("lost+found"))
        sock = work / "control.sock"
        (work / "config.toml").write_text(f'[control]\nsocket = "{sock}"\n[bridge]\npath = "{work}/bridge.sock"\n'
                                          "[training]\nauto_pause = false\n")
        proc = subprocess.Popen([str(bikecomputer), "run", "--config", str(work / "config.toml"), "--data-dir",
                                 str(work / "data"), "--no-display", "--no-buttons"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(5)
                    s.connect(str(sock))
                    s.sendall(b"status\n")
                    data = b""
                    while not data.endswith(b"\n"):
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    s.close()
                    return json.loads(data.decode()[3:])
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise AssertionError(f"bikecomputer run did not answer: {proc.stderr.read().decode()[-2000:]}")
                    time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_point(scratch: pathlib.Path, mount: pathlib.Path) -> tuple[int, int, dict | None, int]:
    """On `scratch` (a copy of the replayed device, changed here): fsck (journal replay and
    repair, as the boot would), a second read-only fsck that must be clean, a read-only mount,
    `journal inspect` and the saved ride files. Returns the two fsck statuses, the inspection
    (None when the app had not made its journal directory yet) and the number of FIT files in
    rides/."""
    fix = subprocess.run(["e2fsck", "-fy", str(scratch)], capture_output=True, text=True).returncode
    clean = subprocess.run(["e2fsck", "-fn", str(scratch)], capture_output=True, text=True).returncode
    subprocess.run(["mount", "-o", "loop,ro", str(scratch), str(mount)], check=True, capture_output=True)
    try:
        journal = mount / "journal"
        found = inspect(BIKECOMPUTER[0], journal) if journal.is_dir() else None
        return fix, clean, found, len(list((mount / "rides").glob("*.fit"))) if (mount / "rides").is_dir() else 0
    finally:
        umount_when_released(mount)


BIKECOMPUTER: list[pathlib.Path] = []
UMOUNT_WAIT_S = 10  # how long a restarted app's files may stay referenced after it exited


def umount_when_released(mount: pathlib.Path) -> None:
    """umount of a point's read-only mount. The kernel tears an exited process's io_uring down
    asynchronously (the restarted app's), and a sibling worker's fork can hold a directory this
    thread had just listed until its child closes its descriptors, so the mount can stay busy
    (EBUSY, umount's status 32) for a moment after every user of it was reaped. Stop 34's CI
    hit it once after `journal inspect` (point 282; which holder it was is not known: fuser had
    not been asked). Retried until UMOUNT_WAIT_S, then the failure with what still holds it."""
    deadline = time.monotonic() + UMOUNT_WAIT_S
    while True:
        r = subprocess.run(["umount", str(mount)], capture_output=True, text=True)
        if r.returncode == 0:
            return
        if time.monotonic() > deadline:
            holders = subprocess.run(["fuser", "-vm", str(mount)], capture_output=True, text=True)
            raise AssertionError(f"umount {mount} still failed after {UMOUNT_WAIT_S} s: {r.stderr.strip()}; "
                                 f"holders: {holders.stdout.strip()} {holders.stderr.strip()}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def sweep(guests):
    return prepared("the dm-log-writes ride and sweep", lambda: guest_result(guests, __name__))


def run_sweep(logged):
    result, record, data, log_disk = logged
    bikecomputer = sf.binaries() / "bikecomputer"
    BIKECOMPUTER[:] = [bikecomputer]
    started = time.monotonic()
    log = logwrites.Log.open(str(log_disk))
    work = pathlib.Path(tempfile.mkdtemp(prefix="sweep-", dir=vmlib.CACHE / "runs"))
    base = system.make_data_disk(work / "replay.img", DATA_MB, fs=False)
    # The whole log replayed gives the device as the guest left it, byte for byte: the replayer
    # reads the kernel's format right.
    end_copy = system.make_data_disk(work / "end.img", DATA_MB, fs=False)
    with logwrites.Replayer(log, str(end_copy)) as r:
        r.replay_to(len(log.entries) - 1)
    whole_log_matches = end_copy.read_bytes() == pathlib.Path(data).read_bytes()
    end_copy.unlink()

    points = replay_points(log)
    marks = [(e.index, parse_mark(e.mark)) for e in log.marks() if parse_mark(e.mark)]
    restart_at = set(points[:: max(1, len(points) // RESTARTS_MAX)][:RESTARTS_MAX])

    def check(p: int, scratch: pathlib.Path) -> dict:
        mount = scratch.with_suffix(".mnt")
        mount.mkdir()
        try:
            fix, clean, found, fits = check_point(scratch, mount)
            before = [m for i, m in marks if i < p]
            after = [m for i, m in marks if i > p]
            # A mark is logged some time after the status it holds was read (a dmsetup process to
            # start): what the app showed at a point may first appear a mark or two later.
            later = after[:MARKS_AFTER]
            row = {"entry": p, "barrier": log.entries[p].is_barrier, "fsck_fix": fix, "fsck_clean": clean, "fit_files": fits,
                   "mark_before": before[-1] if before else None, "mark_after": after[0] if after else None,
                   "marks_after": later,
                   "rebuild": found["rebuild"] if found else None,
                   "checkpoint_mismatches": sum(x["checkpoint_mismatches"] for x in found["rides"]) if found else 0,
                   "repairs": found["repairs"] if found else [],
                   # An ended ride whose file is not durable yet: recovery writes it again.
                   "ended_awaiting_file": bool(found) and any(x["finished"] and x["saved"] and not x["file_durable"]
                                                              for x in found["rides"])}
            if p in restart_at and found and found["rebuild"]:
                subprocess.run(["mount", "-o", "loop,ro", str(scratch), str(mount)], check=True)
                try:
                    st = restart_status(bikecomputer, mount)
                finally:
                    umount_when_released(mount)
                row["restart"] = {"state": st["state"], "timer_ms": st["timer_ms"], "recovered": st.get("recovered")}
            return row
        finally:
            mount.rmdir()
            scratch.unlink(missing_ok=True)

    # The replay is sequential (forward only); each point's copy is checked on a worker
    # (SWEEP_WORKERS: fsck, mount and the app's processes), at most 2 per worker waiting.
    futures = []
    with logwrites.Replayer(log, str(base)) as replayer, \
            concurrent.futures.ThreadPoolExecutor(SWEEP_WORKERS) as pool:
        for p in points:
            replayer.replay_to(p)
            while sum(1 for f in futures if not f.done()) >= 2 * SWEEP_WORKERS:
                concurrent.futures.wait([f for f in futures if not f.done()], return_when=concurrent.futures.FIRST_COMPLETED)
            scratch = work / f"point-{p}.img"
            shutil.copyfile(base, scratch)
            futures.append(pool.submit(check, p, scratch))
    rows = [f.result() for f in futures]
    seconds = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    report = {"entries": len(log.entries), "barriers": sum(1 for e in log.entries if e.is_barrier),
              "marks": len(marks), "mark_errors": record.get("mark_errors"),
              "mark_ioctl_error": record.get("mark_ioctl_error"), "points": len(points), "restarts": len(restart_at), "seconds": round(seconds, 1),
              "vm_seconds": round(result.seconds, 1), "whole_log_matches_device": whole_log_matches,
              "unplanned_ends": record.get("unplanned_ends", []), "presses_stretched": record.get("presses_stretched", []),
              "journal_sync": record.get("before_end", {}).get("journal_sync"), "rows": rows}
    SWEEP_REPORT.write_text(json.dumps(report, indent=1))
    return report


def test_the_replayer_reproduces_the_device_from_the_kernels_log(sweep):
    assert sweep["whole_log_matches_device"], "the whole log replayed onto zeros differs from the data disk"
    assert sweep["barriers"] > 20 and sweep["points"] > 20, {k: sweep[k] for k in ("entries", "barriers", "points")}
    assert sweep["marks"] >= 40, (f"status marks in the log: {sweep['marks']} (failed in the guest: {sweep['mark_errors']}; "
                                  f"DM_TARGET_MSG refused: {sweep.get('mark_ioctl_error')})")


def test_every_replay_point_fscks_clean(sweep):
    bad = [(r["entry"], r["fsck_fix"], r["fsck_clean"]) for r in sweep["rows"] if r["fsck_fix"] > 1 or r["fsck_clean"] != 0]
    assert not bad, f"(entry, e2fsck -fy status, e2fsck -fn status) not clean: {bad[:20]}"


def riding(mark: dict | None) -> bool:
    return bool(mark) and mark["state"] in ("running", "paused")


def loss_bound_ms(sweep) -> float:
    """docs/journal.md, "Loss bound": a 1 Hz record is durable one or two sync latencies after
    its tick. With syncs that complete at once that is the second; the bound adds two of the
    longest sync this ride's app waited for (`journal_sync.sync_wait_max_ms` at the ride's end):
    under a loaded host the guest's fdatasync took long enough that a record was not durable
    until 1.58 s after its tick (stop 35's CI) — the card's (here the host's) part, not the app's."""
    sync = sweep.get("journal_sync") or {}
    return LOSS_MAX_MS + 2 * (sync.get("sync_wait_max_ms") or 0)


def test_the_ride_is_found_at_every_point_with_at_most_a_second_lost(sweep):
    bound = loss_bound_ms(sweep)
    problems = []
    for r in sweep["rows"]:
        m = r["mark_before"]
        if not riding(m):
            continue
        b = r["rebuild"]
        if b is None:
            if r["fit_files"] or r["ended_awaiting_file"]:
                continue  # the ride ended: its file is on the card, or the restart writes it
            # A ride whose start is not durable yet is lost whole: what the app had shown of it is
            # the loss, held to the same bound as a ride found short (measured the same way, from
            # the mark before the point). Stop 34's and 35's CI cut 249 ms into a ride, before
            # its first records were on the card (the ride was there 0.6 s later).
            if m["timer_ms"] > bound:
                problems.append((r["entry"], f"no ride found, {m['timer_ms']} ms of it shown", m))
            continue
        loss = m["timer_ms"] - b["timer_time_ms"]
        r["loss_ms"] = loss
        if loss > bound:
            problems.append((r["entry"], f"{loss} ms of timer lost (bound {bound:.0f} ms)", m, b))
    assert not problems, (f"{len(problems)} points", problems[:15], sweep.get("journal_sync"))


def test_nothing_corrupt_is_accepted(sweep):
    bad = [(r["entry"], r["checkpoint_mismatches"], r["repairs"]) for r in sweep["rows"] if r["checkpoint_mismatches"]]
    assert not bad, bad[:15]


def test_state_and_laps_are_kept(sweep):
    problems = []
    for r in sweep["rows"]:
        m, b = r["mark_before"], r["rebuild"]
        if not riding(m) or b is None:
            continue
        if not b["ride_id"].startswith(m["ride"]):
            problems.append((r["entry"], f"the journal rebuilt ride {b['ride_id']}, the app was riding {m['ride']}"))
            continue
        later = [x for x in r["marks_after"] if x["ride"] in (m["ride"], "-")]
        states = {m["state"]} | {x["state"] for x in later}
        if "ended" in states:
            states |= {"stopped"}
        if b["state"] not in states:
            problems.append((r["entry"], f"state {b['state']}, the app showed {sorted(states)} around this point"))
        # The rebuild counts laps with the one in progress: the rider's LAP presses + 1; a lap
        # taken for sure by the mark before must be there, one pressed by the mark after may be.
        laps_low, laps_high = m["laps"], max([m["pressed"]] + [x["pressed"] for x in later if x["ride"] == m["ride"]])
        if not laps_low + 1 <= b["laps"] <= laps_high + 1:
            problems.append((r["entry"], f"{b['laps']} laps, the rider had taken {laps_low}..{laps_high} (+1 in progress)"))
    assert not problems, problems[:15]


LONG_PRESS_S = 1.5  # [buttons] long_press_ms of the installed config


def test_a_ride_ends_only_on_a_long_press(sweep):
    """A press meant to resume that ended the ride instead (the guest goes on in a new ride, the
    marks name their ride) must have been a long press by the kernel's clock: a guest stalled by
    a loaded host held it longer than asked. Held for less (its longest possible hold, by the
    guest's clock, under long_press_ms) the app ended a ride on a tap."""
    taps = [e for e in sweep["unplanned_ends"] if e["hold"]["max_s"] < LONG_PRESS_S]
    assert not taps, f"rides ended on presses shorter than a long press: {taps}"


def test_a_restart_on_the_recovered_card_continues_the_ride(sweep):
    restarted = [r for r in sweep["rows"] if "restart" in r]
    assert restarted, "no restart was tried"
    for r in restarted:
        assert r["restart"]["recovered"] and r["restart"]["state"] == r["rebuild"]["state"], r
        assert r["restart"]["timer_ms"] >= r["rebuild"]["timer_time_ms"] - 1000, r
