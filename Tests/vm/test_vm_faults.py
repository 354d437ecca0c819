"""Issue 17, items 5 and 6: a slow, full or failing card under the installed system.

One boot of the installed guest runs each storage fault mid-ride (guest_system.py `faults`):
the card fills (a 16 MB partition, then a file takes every free block), the partition is
remounted read-only (as ext4's errors=remount-ro would), dm-flakey fails writes with EIO and
then silently drops them for 2 s of every 3, and the data directory is unusable when the app
starts. In each case the ride must go on (status, timer, buttons), the rider must be told what
happened, "RIDE SAVED" must appear only once the file is durable, a failed write must be retried
without a restart once the card heals, and the ride file must hold everything recorded.

A second boot measures item 6: button edge to a changed display page, and the loop's longest
turn, on a card that waits 200 ms per write (dm-delay), against the same card without delay.

A check that fails on the code of the day is marked xfail(strict=True) with what fails, so that
it turns into an error the moment the behaviour is fixed and is then unmarked; none is left (the
last, the heal of a read-only or flakey card while the unit runs, passes since the journal closes
its files on a failed card)."""
from __future__ import annotations

import json

import pytest

import system
import system_fixtures as sf
import vmlib
from conftest import guest_result, launcher, prepared

CASES = ["full", "readonly", "flakey", "dropped"]
LATENCY_REPORT = vmlib.CACHE / "latency-dm-delay.json"
PRESSES = 25  # PAGE presses per card (plain, then 200 ms per write)


def faults_run(k):
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("faults")
    data = system.make_data_disk(out / "data.img", 64, fs=False)
    result = vm.run(sf.guest_script("faults"), timeout_s=900, data_image=data, outdir=out, name="faults")
    record = sf.record_of(result)
    assert result.status is not None and not result.timed_out, sf.explain(result, record)
    return result, record


@launcher(__name__, order=2)
def _start(request):
    k = request.getfixturevalue("amd64")
    faults = sf.Background(lambda: faults_run(k))
    latency = sf.Background(lambda: latency_run(k))
    return sf.Background(lambda: {"faults": faults.wait(), "latency": latency.wait()})


@pytest.fixture(scope="module")
def faults(guests):
    return prepared("the storage-fault guest", lambda: guest_result(guests, __name__)["faults"])


@pytest.fixture(scope="module")
def latency(guests):
    return prepared("the dm-delay latency guest", lambda: guest_result(guests, __name__)["latency"])


class HarnessError(RuntimeError):
    """The guest could not run a case: a real failure even where the check itself is xfail."""


def case(faults, name: str) -> dict:
    result, record = faults
    r = record.get(name)
    if r is None:
        raise HarnessError(f"the guest did not run the {name} case: {sf.explain(result, record)}")
    if "error" in r:
        raise HarnessError(f"{name}: {r['error']}\n{r.get('log_on_error', '')[-2500:]}")
    return r


# A press (START, held 0.2 s) is answered within 2 s: the release's turn, the debounce timer's,
# the status's. On a loaded host (the loop's longest turn on the healthy card before the fault
# >= 200 ms, as in test_no_button_waits_for_a_sync) TCG makes any turn that long, whether or not
# it touches the card: a resume took 2.74 s at load 20-30. The bound then allows the press's two
# turns of the app to be as long as the healthy card's longest; a loop that waits seconds for a
# failing card still exceeds it, and `loop`/`journal_sync` in the record say where a turn went.
BUTTON_MAX_S = 2.0
HOST_LOADED_TURN_US = 200_000


@pytest.mark.parametrize("name", CASES)
def test_the_ride_goes_on_through_the_fault(faults, name):
    r = case(faults, name)
    alive = r["alive"]
    assert alive["status_errors"] == 0, alive
    assert alive["timer_end"] - alive["timer_start"] >= 4000, f"the timer advanced during the fault: {alive}"
    healthy_turn_us = (r["before"].get("loop") or {}).get("turn_max_us", 0)
    loaded = healthy_turn_us >= HOST_LOADED_TURN_US
    bound = BUTTON_MAX_S + (2 * healthy_turn_us / 1e6 if loaded else 0)
    assert all(s is not None and s < bound for s in alive["button_s"]), (
        f"pause/resume within {bound:.2f} s ({'loaded' if loaded else 'quiet'} host: the healthy card's longest turn "
        f"{healthy_turn_us // 1000} ms): {alive['button_s']}", alive)


ALERTS = {"full": "STORAGE FULL", "readonly": "STORAGE ERROR", "flakey": "STORAGE ERROR"}


@pytest.mark.parametrize("name", ["readonly", "flakey"])
def test_the_rider_is_told_what_happened(faults, name):
    r = case(faults, name)
    assert f"alert: {ALERTS[name]}" in "\n".join(r["alerts_during"]), (r["alerts_during"], r["log_during"][-2000:])


def test_the_rider_is_told_the_card_is_full(faults):
    r = case(faults, "full")
    assert "alert: STORAGE FULL" in "\n".join(r["alerts_during"]), (r["alerts_during"], r["log_during"][-2000:])


@pytest.mark.parametrize("name", ["full", "readonly"])
def test_ride_saved_only_once_the_file_is_durable(faults, name):
    r = case(faults, name)
    assert not r["files_before_heal"], "no file can be written while the card is full or read-only"
    assert not any("RIDE SAVED" in l for l in r["alerts_during"]), f"RIDE SAVED while the ride file could not be written: {r['alerts_during']}"


# A card whose ext4 went read-only (or failed under dm-flakey until ext4 aborted) is healed in
# the guest as a maintainer would, while the unit runs (card_reinserted): a plain umount, fsck, a
# fresh mount at the same place. That works only if the app closed every file it held on the
# card once writes failed (else umount says EBUSY, and a lazy one leaves the aborted superblock
# alive for the new mount to get back read-only) and its mount namespace follows the host's.
HEALS_IN_THE_UNIT = ["full", "readonly", "flakey"]


@pytest.mark.parametrize("name", ["readonly", "flakey"])
def test_the_app_lets_go_of_a_failed_card(faults, name):
    r = case(faults, name)
    heal = r.get("heal")
    if heal is None:
        raise HarnessError(f"{name}: the heal recorded nothing")
    if name == "readonly" and not heal["read_only_before"]:
        raise HarnessError(f"the card's ext4 was not read-only before the heal: {heal}")
    if not heal["read_only_before"]:
        # dm-flakey's errors did not make ext4 give up this time: nothing to heal; the ride
        # file's own tests still check that it was written.
        assert heal["host_writable"], heal
        return
    # A journal retry in flight holds its segment until its failed fdatasync is reaped, and is
    # seen at a look now and then (at load 20-30: `seg-00000001.jnl` at the first look, the umount
    # right after plain): what counts is a descriptor seen at every look for 5 s.
    assert not heal["app_files_kept"], f"files the app kept on the failed card: {heal}"
    # Told once per failure, not once per retry (each retry opens, writes and fails its sync).
    closes = r["journal_closes"]
    assert closes and (name != "readonly" or len(closes) <= 2), closes
    assert heal["umount"].startswith("plain"), f"the card could not be unmounted while the app ran: {heal}"
    assert heal["fsck_exit"] in (0, 1), heal  # 1: errors corrected
    assert heal["host_writable"], heal
    touch = [l for l in heal["namespace_after"].splitlines() if " touch " in l]
    assert touch and touch[0].endswith("exit 0"), f"the unit's namespace does not see the card mounted afresh: {heal['namespace_after']}"


@pytest.mark.parametrize("name", HEALS_IN_THE_UNIT)
def test_a_failed_write_is_retried_once_the_card_heals(faults, name):
    r = case(faults, name)
    assert r["files_after_heal"], f"no ride file 20 s after the card healed:\n{r['log_after'][-2000:]}"


def check_the_ride_file_holds_everything(faults, name):
    result, _ = faults
    r = case(faults, name)
    assert r["files_after_heal"], "no ride file"
    fit = sf.fit_records(result.outdir / f"{name}.fit")
    # One record a second while running: the file covers the whole ride, fault included. A
    # second the loop was held up past (a loaded host: stop 36's CI had 3 in a 20 s ride) is
    # skipped and counted, not made up (AppCore.takeDueRecord); the count says which.
    skipped = r["end"]["records_skipped"]
    assert skipped is not None, r["end"]
    assert (fit["records"] + skipped) * 1000 >= r["end"]["final_timer_ms"] - 2000, (fit["records"], r["end"])
    assert skipped <= 5, f"more than 5 records of a 20 s ride skipped: the loop was held up for whole seconds {r['end']}"


@pytest.mark.parametrize("name", HEALS_IN_THE_UNIT)
def test_the_ride_file_holds_everything_recorded(faults, name):
    check_the_ride_file_holds_everything(faults, name)


def test_dropped_writes_still_give_the_whole_ride_file(faults):
    """A card that drops writes silently: the app cannot tell; its file (written from what the
    page cache still holds) must still cover the whole ride."""
    check_the_ride_file_holds_everything(faults, "dropped")


def test_the_device_starts_with_an_unusable_data_directory(faults):
    result, record = faults
    r = record.get("unusable")
    if r is None:
        raise HarnessError(f"the guest did not run the unusable case: {sf.explain(result, record)}")
    assert r["unit"]["ActiveState"] == "active", (r["unit"], r.get("log", "")[-2000:])
    assert "error" not in r, (r["error"], r.get("log", "")[-2000:])
    assert r["ride"]["timer_end"] > r["ride"]["timer_start"]


def percentile(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def latency_run(k):
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("latency")
    data = system.make_data_disk(out / "data.img", 64, fs=False)
    result = vm.run(sf.guest_script("latency", "--delay-ms", "200", "--presses", str(PRESSES)), timeout_s=900, data_image=data, env=sf.true_env(),
                    outdir=out, name="latency")
    record = sf.record_of(result)
    assert result.ok and not record["errors"], sf.explain(result, record)
    report = {}
    for label in ["plain", "delay"]:
        x = record[f"latency_{label}"]
        ms = [m for m in x["page_ms"] if m is not None]
        report[label] = {"presses": len(x["page_ms"]), "missed": x["page_ms"].count(None),
                         "page_p50_ms": percentile(ms, 50), "page_p99_ms": percentile(ms, 99), "page_max_ms": max(ms),
                         "loop_turn_max_us": x["loop"]["turn_max_us"], "turns_at_least_ms": x["loop"]["turns_at_least_ms"],
                         "handlers_max_us": {h["name"]: h["max_us"] for h in x["loop"]["handlers"]},
                         "journal_sync": x.get("journal_sync")}
        y = record[f"save_{label}"]
        save_ms = [m for m in y["page_ms"] if m is not None]
        report[label]["save"] = {
            "saved_ms": y["saved_ms"], "presses": len(y["page_ms"]), "missed": y["page_ms"].count(None),
            "page_p99_ms": percentile(save_ms, 99) if save_ms else None, "page_max_ms": max(save_ms, default=None),
            "ridefile_step_max_us": (y["ridefile_step"] or {}).get("max_us"),
            "loop_turn_max_before_us": y["loop_before"]["turn_max_us"], "loop_turn_max_after_us": y["loop_after"]["turn_max_us"],
            "handlers_max_us": {h["name"]: h["max_us"] for h in y["loop_after"]["handlers"]},
            "ride_files": y["ride_files"], "slowest_create_us": (y["journal_sync"] or {}).get("slowest_create_us")}
    z = record["redating"]
    dated_ms = [m for m in z["page_ms"] if m is not None]
    report["redating"] = {
        "rides": z["undated_before"], "library": z["library"], "undated_before": z["undated_before"], "dated_s": z["dated_s"], "undated_after": z["undated_after"],
        "presses": len(z["page_ms"]), "missed": z["page_ms"].count(None), "page_max_ms": max(dated_ms, default=None),
        "page_p99_ms": percentile(dated_ms, 99) if dated_ms else None,
        "page_p50_ms": percentile(dated_ms, 50) if dated_ms else None,
        "page_p95_ms": percentile(dated_ms, 95) if dated_ms else None,
        # The loop's figures are the process's since it started: a handler's maximum belongs to
        # the dating only where it grew during it (the app's bridge.packet once took 1.09 s before
        # the dating began, at load ~5, and was blamed on it).
        "handlers_max_us": {h["name"]: h["max_us"] for h in z["loop_after"]["handlers"]
                            if h["max_us"] > next((b["max_us"] for b in z["loop_before"]["handlers"] if b["name"] == h["name"]), 0)},
        "handlers_max_us_since_start": {h["name"]: h["max_us"] for h in z["loop_after"]["handlers"]},
        "loop_turn_max_us": z["loop_after"]["turn_max_us"], "ride_files": z["ride_files"],
        # The loop's turns of at least 50/100/200/500/1000 ms during the dating, and where its
        # thread waited in the kernel meanwhile (guest_system.LoopWaitSampler).
        "turns_at_least_ms": {t: n - z["loop_before"]["turns_at_least_ms"].get(t, 0)
                              for t, n in z["loop_after"]["turns_at_least_ms"].items()},
        "loop_waits": z.get("loop_waits"),
        # Edges the app read that repeated the line's level (`ctl status` buttons.edges_repeated):
        # an edge the kernel never delivered. gpio-sim's both-edge events read the line's level in
        # the IRQ thread; a thread run late (a loaded TCG guest) after a 50 ms press's release
        # delivers one event, "released", for the press and its release: the press is lost before
        # the app (stop 39: 1 of 67 presses, 143 edges read, 1 repeated, no turn over 500 ms).
        "edges_lost": ((z.get("buttons_after") or {}).get("edges_repeated", 0) or 0)
                      - ((z.get("buttons_before") or {}).get("edges_repeated", 0) or 0),
        # Where the loop's time went during the dating: ms per handler (those of 100 ms or more).
        "handlers_total_ms": {h["name"]: round((h.get("total_us", 0) - next((b.get("total_us", 0) for b in z["loop_before"]["handlers"] if b["name"] == h["name"]), 0)) / 1000)
                              for h in z["loop_after"]["handlers"]
                              if h.get("total_us", 0) - next((b.get("total_us", 0) for b in z["loop_before"]["handlers"] if b["name"] == h["name"]), 0) >= 100_000},
        "journal_slowest_write_us": (z.get("journal_sync_after") or {}).get("slowest_write_us"),
        "journal_slowest_write_us_before": (z.get("journal_sync_before") or {}).get("slowest_write_us")}
    report["vm_seconds"] = round(result.seconds, 1)
    LATENCY_REPORT.write_text(json.dumps(report, indent=1))
    return report


def test_latency_on_a_stalling_card_is_measured(latency):
    assert latency["plain"]["presses"] == PRESSES and latency["delay"]["presses"] == PRESSES
    assert latency["plain"]["missed"] == 0, latency["plain"]


# The most the journal's segment creation, sync submission and compaction may cost the loop on
# the 200 ms/write card: a quarter of one stalled write on a quiet host. On a loaded host (the
# plain card's own longest turn >= 200 ms, or a delayed-card handler that touches no card >= 50 ms;
# such handlers have taken 0.2-1.6 s in a TCG guest) it is one stalled write, which a cost that
# waited for the card meets or exceeds:
# there the plain card's own sync submission (a card that never stalls) has taken 62 ms and the
# delayed card's 137 ms (stop 35's CI, whose half-a-write bound failed on load alone). The
# journal's writes go through the ring, linked before their syncs; a write the loop still makes
# itself (a staged write flushed before another segment's, none in a ride's steady state) keeps
# the bound of one stalled write. When the pwrite was the loop's it waited for the card 73, 140
# and once 204 ms (stop 42's CI: the tail page under the kernel's writeback, stable pages).
JOURNAL_LOOP_COST_MAX_US = 50_000
JOURNAL_LOOP_COST_LOADED_MAX_US = 200_000
JOURNAL_WRITE_MAX_US = 200_000
# The loop's handlers that write nothing to the card: one of them taking a stalled write's length
# (200 ms) on the delayed card is the host's load, not the card, for the presses; for the journal's
# own cost on the loop, one taking the quiet bound's length (50 ms) is.
NO_CARD_HANDLERS = {"gpio.buttons", "buttons.debounce", "display.flush", "control.accept", "bridge.accept", "control.sweep"}


def test_no_button_waits_for_a_sync(latency):
    plain, delay = latency["plain"], latency["delay"]
    assert delay["missed"] == 0
    # The syncs went through io_uring (not the blocking fallback) and the card did stall them.
    sync = delay["journal_sync"] or {}
    assert sync.get("mode") == "ok (io_uring)", sync
    assert sync.get("sync_wait_max_ms", 0) >= 150, sync
    assert sync.get("removal_failures", 0) == 0, sync
    # What the journal itself costs a loop turn on the stalling card: a sync's submission, a
    # segment's creation (submitting its openat, then its linked fallocate/fsync/fsync chain:
    # the open and preallocation run in the kernel's io_uring worker), a compaction's unlink;
    # each well under one stalled write (200 ms). Before the creation left the loop, its
    # open + posix_fallocate took up to 285 ms on this card. And the write into the page cache.
    # The load is judged at the bound's own scale: a handler that never touches the card taking
    # 50 ms says the host can stretch any span of the loop by that much. Stop 43's CI: a 64 ms
    # submission (io_uring_enter, the write and its sync punted to the kernel's workers) on the
    # delayed card whose buttons.debounce (a few comparisons) took 54 ms and bridge.packet 104 ms;
    # a submission that waited for the card would take a stalled write (200 ms), which the loaded
    # bound still refuses.
    no_card = {n: v for n, v in delay["handlers_max_us"].items() if n in NO_CARD_HANDLERS}
    host_loaded = plain["loop_turn_max_us"] >= 200_000 or max(no_card.values(), default=0) >= 200_000
    loaded_at_cost_scale = host_loaded or max(no_card.values(), default=0) >= JOURNAL_LOOP_COST_MAX_US
    cost_max = JOURNAL_LOOP_COST_LOADED_MAX_US if loaded_at_cost_scale else JOURNAL_LOOP_COST_MAX_US
    for cost in ["slowest_submit_us", "slowest_create_us", "slowest_remove_us"]:
        assert cost in sync, (cost, sync)
        assert sync[cost] < cost_max, (cost, cost_max, "loaded host" if loaded_at_cost_scale else "quiet host", no_card, sync)
    # The journal's writes went through the ring, linked before their syncs (a pwrite in the
    # loop waited for the card when the kernel's writeback had the tail page: 204 ms once in
    # stop 42's CI); what the loop still writes itself (none in a ride's steady state) is bounded.
    assert sync.get("writes_through_ring") is True and sync.get("ring_writes", 0) >= sync["syncs_begun"] // 2, sync
    assert sync.get("failed_writes", 1) == 0, sync
    assert sync.get("slowest_write_us", 10**9) < JOURNAL_WRITE_MAX_US, sync
    # A 200 ms stall per write must not reach the loop. A sync (or any write) waited for in the
    # loop makes a turn of at least one stalled write at each sync the card stalls, about one a
    # second (18 in this ride); the host's own noise (a TCG guest's CPU descheduled while sibling
    # guests run) makes a few on either card, and one worst turn says nothing of which: the
    # longest turn was the bound until stop 37, and failed both ways on noise alone (a 289 ms
    # turn in core.deadline on the delayed card against the plain card's 115 ms at load 1; the
    # plain card's 677 ms against the delayed card's 151 ms). So the count: the delayed card's
    # turns of >= 200 ms exceed the plain card's by fewer than half its syncs.
    slow_plain = plain["turns_at_least_ms"]["200"]
    slow_delay = delay["turns_at_least_ms"]["200"]
    assert slow_delay - slow_plain < sync["syncs_begun"] / 2, (
        f"{slow_delay} turns of >= 200 ms on the delayed card against {slow_plain} on the plain one "
        f"over {sync['syncs_begun']} syncs: {latency}")
    # The presses: on a quiet host the delayed card's slowest (p99 of 25) within 100 ms of the
    # plain card's slowest or its longest turn. On a loaded host (the plain card's longest turn, or
    # a delayed-card handler that never touches the card, >= 200 ms) the slowest of 25 presses is
    # the load's — stop 37's CI: 1,201 ms on the delayed card, whose bridge.packet took 827 ms,
    # against the plain card's 585 ms slowest press plus longest turn — and the median is the
    # figure: within 100 ms of the plain card's. A sync in the loop would delay one press in five
    # by up to 200 ms; the slow-turn count above is what catches it under load.
    # A slowest press beyond that bound while the delayed card's loop had no turn of a stalled
    # write's length, and beyond anything its longest turn explains, waited outside the app (the
    # guest's vCPU or the gpio-sim IRQ thread descheduled on the host): the median is the figure
    # then too. Stop 41's CI: one press of 25 took 518 ms on the delayed card whose longest turn
    # was 117 ms (none >= 200 ms), the plain card's slowest 77 ms and longest turn 185 ms.
    plain_turn_ms = plain["loop_turn_max_us"] / 1000
    delay_turn_ms = delay["loop_turn_max_us"] / 1000
    p99_bound = max(plain["page_p99_ms"], plain_turn_ms) + 100
    outside_app = (delay["turns_at_least_ms"]["200"] == 0
                   and delay["page_p99_ms"] > max(p99_bound, plain["page_p99_ms"] + delay_turn_ms + 100))
    if host_loaded or outside_app:
        assert delay["page_p50_ms"] <= plain["page_p50_ms"] + 100, (
            "loaded host" if host_loaded else "a press delayed outside the app", no_card, latency)
    else:
        assert delay["page_p99_ms"] <= p99_bound, (p99_bound, latency)


def test_the_end_of_a_ride_does_not_wait_for_the_card(latency):
    """The end of a ride on the 200 ms/write card (journal scan, encoders, each file's fsync,
    rename and the directory's fsync, the FIT's read-back): RIDE SAVED only once durable, and
    meanwhile the summary screen pages at every press and no loop turn is as long as one stalled
    write. Before the ride files' fsyncs went to their io_uring, each file's write step held the
    loop for its fsync and the directory's (two stalled writes and more: 0.4-1.3 s a turn)."""
    plain, delay = latency["plain"]["save"], latency["delay"]["save"]
    for s in (plain, delay):
        assert s["saved_ms"] is not None, f"the ride file was not written within 60 s: {s}"
        assert s["ride_files"]["sync_mode"] == "io_uring", s["ride_files"]
        assert s["missed"] == 0, f"a press during the save changed no page: {s}"
    # The card did stall the save (a file's fsync and its directory's are two delayed writes each).
    assert delay["saved_ms"] >= 400, delay
    assert delay["presses"] >= 1, f"no press landed during the save: {delay}"
    # No step of the save and no loop turn as long as one stalled write (200 ms). As in
    # test_no_button_waits_for_a_sync, TCG on a loaded host has shown the plain card's own loop
    # (which never waits for it) take 0.45-0.82 s a turn: the bound then stands on what the plain
    # card showed in the same guest, plus 100 ms.
    # What a ride file's background write still costs a turn on the stalling card (the temporary
    # file's creation and write, a completion's reap, the rename, the directory's open): each
    # well under one stalled write, as the journal's own costs in test_no_button_waits_for_a_sync.
    for cost in ["slowest_begin_us", "slowest_poll_us"]:
        assert delay["ride_files"].get(cost, 10**9) < 200_000, (cost, delay["ride_files"])
    # A step (the journal scan, an encoder, the FIT's read-back) is CPU work: under a loaded host
    # it is as slow as the plain card's own slowest turns, which wait for no card.
    step_bound = max(200_000, (plain["ridefile_step_max_us"] or 0) + 100_000, plain["loop_turn_max_after_us"])
    assert (delay["ridefile_step_max_us"] or 0) < step_bound, latency
    # A wait for the card shows in one handler (a write, a sync's submission, a step): each
    # handler's longest call is bounded. The longest turn is not: under TCG on a loaded host one
    # turn runs several handlers and adds up their CPU (a CI-like run saw a 417 ms turn on the
    # delayed card whose longest handler was 170 ms, control.client, with every press during the
    # save answered within 137 ms); the presses below are what the rider feels.
    turn_bound = max(200_000, plain["loop_turn_max_after_us"] + 100_000)
    # On a loaded host (the plain card's own loop took a turn of 200 ms or more) the bound holds
    # for the save's own handlers (its steps, the syncs' completions, the buttons'); the others
    # are reported: handlers that write the journal's records after their input have taken up
    # to 2 s there during the save on this card (bridge.packet 1.98 s in stop 35's check, with
    # every press answered within the plain card's own slowest): an open finding, docs/testing.md.
    host_loaded = latency["plain"]["loop_turn_max_us"] >= 200_000 or plain["loop_turn_max_after_us"] >= 200_000
    save_handlers = {"ridefile.step", "ridefile.sync", "journal.sync", "gpio.buttons", "wallclock"}
    checked = {n: v for n, v in delay["handlers_max_us"].items() if not host_loaded or n in save_handlers}
    slowest = max(checked.items(), key=lambda kv: kv[1])
    assert slowest[1] < turn_bound, (slowest, turn_bound, "loaded host" if host_loaded else "quiet host", latency)
    # The presses: within the slowest the same guest showed without the stall (the plain card's
    # 25 presses, its save's, its longest turn) plus 200 ms, plus that turn on a loaded host (the
    # same rule as the re-dating's below; stop 35: the plain card's presses up to 1,170 ms, the
    # stalling card's save 1,254 ms).
    plain_turn_ms = max(latency["plain"]["loop_turn_max_us"], plain["loop_turn_max_after_us"]) / 1000
    slowest_plain_ms = max(latency["plain"]["page_max_ms"], plain["page_max_ms"] or 0, plain_turn_ms)
    assert delay["page_max_ms"] <= slowest_plain_ms + (plain_turn_ms if host_loaded else 200), (slowest_plain_ms, latency)


# Less than one ride's dating takes on the 200 ms/write card: its offset, three files and the
# removals, two stalled writes or more each (test below), 2 s or more.
DATING_IN_ONE_HANDLER_US = 1_000_000


def test_setting_the_clock_with_rides_waiting_does_not_stall_the_buttons(latency):
    """Issue 27: the clock becomes trusted with five rides waiting for their date on the 200 ms
    per write card. Each is dated as ordinary ride-file steps (every fsync on the ride files'
    io_uring, its eventfd in the loop's epoll set), so every PAGE press meanwhile changes the page
    as fast as during a save, and no handler holds the loop for a stalled write. Before, the whole
    dating ran inside the wall clock's handler: seconds per ride, no press answered meanwhile."""
    plain, r = latency["plain"], latency["redating"]
    assert r["undated_before"] >= 5 and r["library"] >= r["undated_before"], r
    assert r["dated_s"] is not None, f"the rides were not dated within 180 s: {r}"
    assert r["ride_files"]["rides_redated"] == r["rides"] and r["ride_files"]["redatings_waiting"] == 0, r
    assert not [n for n in r["undated_after"] if n.endswith(".rec")], r
    assert r["presses"] >= 3, f"no press landed during the dating: {r}"
    # The card did stall the dating (each ride: its offset, three files and the removals, two
    # stalled writes or more each).
    assert r["dated_s"] >= 2.0, r
    # The same bounds as the end of a ride's (test_the_end_of_a_ride_does_not_wait_for_the_card).
    save = plain["save"]
    turn_bound = max(200_000, save["loop_turn_max_after_us"] + 100_000)
    # The dating's own handlers (the wall clock's, the ride files' steps and syncs, the journal's)
    # and the buttons' lines: none may hold the loop for a stalled write. The presses' latency
    # (below) is the end-to-end bound. Other handlers' growth during the dating is in the report
    # (a control client's turn once took 781 ms here, at load ~5: an open finding, docs/testing.md).
    dating = {"wallclock", "ridefile.step", "ridefile.sync", "journal.sync", "gpio.buttons"}
    slowest = max(((n, v) for n, v in r["handlers_max_us"].items() if n in dating), key=lambda kv: kv[1], default=("none grew", 0))
    # On a loaded host (the plain card's own loop took a turn of 200 ms or more) a handler's
    # longest call is the host's as much as its own: stop 38's CI, during a 62 s dating, saw
    # bridge.packet 1.22 s, a control client 1.10 s and buttons.debounce 0.37 s (handlers the
    # dating does not run) beside ridefile.step's 0.54 s. There no dating handler may be slower
    # than the slowest other handler that grew during the same dating: a dating inside one
    # handler (issue 27: seconds a ride) still stands out. The presses below are the end-to-end
    # bound either way.
    # Stop 45's CI: ridefile.step 420 ms against the slowest other handler's 394 ms, at load (the
    # plain card's turns to 208 ms) with the loop's thread never seen waiting in the kernel (0 of
    # 2,953 samples, below): a dating step does more CPU work a call than a sensor's packet, and the
    # host stretches both. So on a loaded host the bound is also no lower than DATING_IN_ONE_HANDLER_US,
    # which one ride dated inside one handler exceeds (ten stalled writes of 200 ms or more); the
    # sampler below is the evidence of waits on the card.
    plain_turn_ms = max(plain["loop_turn_max_us"], save["loop_turn_max_after_us"]) / 1000
    host_loaded = plain_turn_ms >= 200
    others = max((v for n, v in r["handlers_max_us"].items() if n not in dating), default=0)
    handler_bound = max(turn_bound, others, DATING_IN_ONE_HANDLER_US) if host_loaded else turn_bound
    assert slowest[1] < handler_bound, (slowest, handler_bound, "loaded host" if host_loaded else "quiet host", r)
    assert r["handlers_max_us"].get("wallclock", 0) < handler_bound, r
    # What the loop's thread was doing during the dating, sampled every 10 ms from /proc
    # (guest_system.LoopWaitSampler): asleep in epoll_wait, running (or runnable: a loaded host
    # shows here), or waiting in the kernel elsewhere — an fsync, a write held by the journal's
    # commit: the card reaching the loop. A dating inside one handler waits there for seconds a
    # ride; here (stop 39) 5 of 3,465 samples (a directory listing's atime update waiting in jbd2), 0 of 3,781 and,
    # beside the storage-fault and dm-log-writes guests, 0 of 2,552. Load makes the thread
    # runnable, not waiting, so the bound holds on a loaded host too.
    w = r["loop_waits"]
    waiting = sum(w["waiting_elsewhere"].values())
    assert w["samples"] >= 100 and waiting <= w["samples"] // 50, ("the loop waited on the card", w)
    # The presses the rider feels. The typical press during the dating is as quick as on the plain
    # card (the median: a dating inside one handler, as before issue 27, leaves most presses
    # waiting seconds, many unanswered). On a quiet host every press is answered and the slowest
    # is within 200 ms of the slowest the same guest showed without any dating (the plain card's
    # 25 presses, its save's, its longest turn).
    assert r["page_p50_ms"] <= plain["page_p50_ms"] + 200, (plain["page_p50_ms"], r)
    slowest_plain_ms = max(plain["page_max_ms"], save["page_max_ms"] or 0, plain_turn_ms)
    # A press whose edge the kernel never delivered is lost before the app (edges_lost); the
    # bounds below are for the presses the app read.
    missed = max(0, r["missed"] - r.get("edges_lost", 0))
    if not host_loaded:
        assert missed == 0, f"presses during the dating changed no page: {r}"
        assert r["page_max_ms"] <= slowest_plain_ms + 200, (slowest_plain_ms, plain, r)
        return
    # A loaded host (the plain card's own loop, which never waits for the card, took a turn of
    # 200 ms or more: the guest's vCPUs wait for the host). Stop 38's CI: 5 of 113 presses
    # unanswered in turns up to 3.2 s (bridge.packet 2.9 s, a control client 1.1 s), with two
    # other system guests beside this one and the guest pressing every 50 ms and asking its status
    # before every press. Where the loop's time went, measured here with the presses still every
    # 50 ms (stop 39, `handlers_total_ms`): the presses' page draws 9 s, the status requests
    # 7.6 s, the sensors' packets 7 s (each drew the summary page again, since fixed), the
    # dating's own steps 0.85 s of a 47 s dating. Now the presses are spaced as
    # a rider's, the status is read once a second and the latency guest shares the host with one
    # other system guest at most (system.MEASURING_GUEST_SLOTS). Stop 35's CI at load 4-5: the plain
    # card's turns up to 675 ms; over the 63 s dating of six rides 138 presses, median 75 ms (the
    # plain card's: 63 ms), 1 over 1.9 s and 1 unanswered within 3 s, in a 3.7 s turn whose
    # handler was a control client's (2.5 s; its handler writes the journal's records: an open
    # finding, docs/testing.md), every dating handler under its bound. Then at most one press in
    # 50 may go unanswered and at most one in 20 be slower than the plain card's slowest plus its
    # longest turn; a dating that held the loop would fail both.
    assert missed <= r["presses"] // 50, f"presses during the dating changed no page: {r}"
    page_bound = slowest_plain_ms + plain_turn_ms
    assert r["page_p95_ms"] <= page_bound, (page_bound, "loaded host", plain, r)
