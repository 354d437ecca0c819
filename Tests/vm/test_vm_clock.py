"""Issue 17, item 4: a board without an RTC.

The guest's clock is trusted only when the kernel says it is synchronised (adjtimex: STA_UNSYNC
clear, as systemd-timesyncd or an NTP client leaves it), never because it reads a plausible
date. guest_system.py `clock`: the ride starts on a clock 400 days stale and unsynchronised,
the clock is synchronised mid-ride, then stepped back 2 minutes; `clock-cut-1/2`: a ride on a
synchronised clock, the plug pulled, the board booted again on its stale saved clock. The FIT
file must be dated by the true start (the offset learnt when the clock became trusted) and its
records must never go backwards. After the ride (same `clock` boot): a ride started and ended on
a stale clock is saved at once under the board's date, its records kept in undated/; the app is
restarted; the clock is synchronised and the ride is stored again under its true date (name,
list entry, USB drive, every FIT/GPX/TCX time moved by the offset); the trusted ride of the
first part is left alone. Then a second stale-clock ride ends and the host pulls the plug before
the clock is set; `clock-2` boots again on a stale clock: docs/journal.md's rule for a reboot
(the ride keeps the board's date, logged, its kept records removed, a later sync changes nothing).
In `clock-cut-2`, after the recovered ride: the next ride on the still unsynchronised clock is
kept for dating, not dated by the recovered ride's time line. Before issue 17 a clock after 2024 counted as trusted: the ride
was dated 400 days early, and after the power cut re-anchored to the stale boot clock.""" 
from __future__ import annotations

import datetime
import pathlib

import pytest

import system
import system_fixtures as sf
from conftest import guest_result, launcher, prepared

def fit_times(path) -> dict:
    import fitdecode
    out = {"start": None, "records": []}
    with fitdecode.FitReader(str(path), check_crc=fitdecode.CrcCheck.RAISE) as fit:
        for frame in fit:
            if isinstance(frame, fitdecode.FitDataMessage):
                if frame.name == "session" and frame.has_field("start_time"):
                    out["start"] = frame.get_value("start_time")
                elif frame.name == "record" and frame.has_field("timestamp"):
                    out["records"].append(frame.get_value("timestamp"))
    return out


def ms(dt: datetime.datetime) -> int:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp() * 1000)


def clock_run(k):
    """Two boots: `clock` (the rides on stale clocks, then the plug pulled with a ride waiting
    for its date) and `clock-2` (booted again on a stale clock)."""
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("clock")
    data = system.make_data_disk(out / "data.img", 64)
    result = vm.run(sf.guest_script("clock"), timeout_s=500, data_image=data, outdir=out, name="clock", env=sf.true_env(),
                    kill_when="pull-the-plug")
    record = sf.record_of(result)
    assert getattr(result, "killed", False) and not record["errors"], sf.explain(result, record)
    (out / "record-1.json").write_text((out / "record.json").read_text())
    (out / "record.json").unlink()
    second = vm.run(sf.guest_script("clock-2"), timeout_s=300, data_image=data, outdir=out, name="clock", env=sf.true_env(),
                    rtc=sf.STALE_RTC)
    after = sf.record_of(second)
    assert second.ok and not after["errors"], sf.explain(second, after)
    record["clock_2"] = after
    record["out"] = str(out)
    return record, fit_times(out / "clock.fit")


@launcher(__name__, order=3)
def _start(request):
    k = request.getfixturevalue("amd64")
    clock = sf.Background(lambda: clock_run(k))
    cut = sf.Background(lambda: sf.power_cut_ride(k))
    return sf.Background(lambda: {"clock": clock.wait(), "cut": cut.wait()})


@pytest.fixture(scope="module")
def clock(guests):
    return prepared("the clock guest", lambda: guest_result(guests, __name__)["clock"])


def test_the_kernel_reports_an_unsynchronised_clock_at_boot(clock):
    record, _ = clock
    assert record["boot_clock_unsynced"] and record["stale_unsynced"] and not record["synced_unsynced"], record


def test_a_ride_begun_on_a_stale_clock_is_dated_once_the_clock_is_trusted(clock):
    record, fit = clock
    got = ms(fit["start"])
    assert abs(got - record["ride_start_true_ms"]) <= 3000, \
        f"FIT start {fit['start']} vs the true start {datetime.datetime.fromtimestamp(record['ride_start_true_ms'] / 1000, datetime.timezone.utc)}"


def test_record_times_never_go_backwards(clock):
    _, fit = clock
    times = [ms(t) for t in fit["records"]]
    assert times and all(b >= a for a, b in zip(times, times[1:])), "a step of the clock moved records backwards"


@pytest.fixture(scope="module")
def clock_cut(guests):
    before, after, out = prepared("the power-cut ride", lambda: guest_result(guests, __name__)["cut"])
    return before, after, fit_times(out / "clock-cut.fit")


def test_after_a_power_cut_the_board_boots_unsynchronised_and_behind(clock_cut):
    before, after, _ = clock_cut
    assert after["boot_clock_unsynced"]
    assert after["boot_clock_ms"] < before["before_cut"]["true_ms"], "the stale clock is behind the ride"
    assert after["after_boot"]["recovered"]


def test_a_ride_is_never_re_anchored_backwards_across_a_reboot(clock_cut):
    before, _, fit = clock_cut
    assert abs(ms(fit["start"]) - before["ride_start_true_ms"]) <= 3000, (fit["start"], before)
    times = [ms(t) for t in fit["records"]]
    assert all(b >= a for a, b in zip(times, times[1:])), "records went backwards across the reboot"
    assert times[-1] >= before["before_cut"]["true_ms"] - 2000, "records after the cut dated before it"


# ------------------------------------------------------------------ after the ride (item 4)
DAY_MS = 86_400_000
STALE_BY_MS = 400 * DAY_MS


def name_ms(start_text: str) -> int:
    """A library name's start ("2026-11-22-083000", UTC) in Unix ms."""
    return ms(datetime.datetime.strptime(start_text, "%Y-%m-%d-%H%M%S"))


def xml_times(path) -> list[int]:
    """Every <time> (GPX) or <Time> (TCX) of a file, in Unix ms."""
    import re
    text = pathlib.Path(path).read_text()
    return [ms(datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))) for t in re.findall(r"<[Tt]ime>([^<]+)</[Tt]ime>", text)]


@pytest.fixture(scope="module")
def after(clock):
    record, _ = clock
    out = pathlib.Path(record["out"])
    return record["after"], out


def test_a_ride_ended_on_an_unset_clock_is_saved_at_once_under_the_boards_date(after):
    r, out = after
    assert r["unsynced"], "the stale clock was not unsynchronised"
    e = r["entry"]
    rid = e["id"]
    assert abs(name_ms(e["start_utc"]) - (r["start_true_ms"] - STALE_BY_MS)) <= 3000, (e, r["start_true_ms"])
    assert all(f["name"].startswith(e["start_utc"] + "_" + rid) for f in e["files"].values()) and set(e["files"]) == {"fit", "gpx", "tcx"}, e
    assert f"{rid}.rec" in r["undated"], r["undated"]
    assert f"{rid}.rec" in r["undated_after_restart"], "the kept records did not survive a restart of the app"
    names = sf.usb_image_files(out / "usb-stale.img")
    assert e["files"]["fit"]["name"] in names, names
    stale = fit_times(out / "after-stale.fit")
    assert abs(ms(stale["start"]) - (r["start_true_ms"] - STALE_BY_MS)) <= 3000, stale["start"]


def test_it_is_dated_by_the_offset_once_the_clock_is_synchronised(after):
    r, out = after
    e, d = r["entry"], r["dated_entry"]
    rid = e["id"]
    assert d["id"] == rid and d["version"] == e["version"] + 1, (e, d)
    assert abs(name_ms(d["start_utc"]) - r["start_true_ms"]) <= 3000, (d, r["start_true_ms"])
    assert all(f["name"].startswith(d["start_utc"] + "_" + rid + f"_v{d['version']}") for f in d["files"].values()), d
    assert [x for x in r["dated_list"] if x["id"] == rid] == [d], "the ride is listed more than once"
    # The stale version is gone from the card and from the USB drive; nothing waits any more.
    assert not [n for n in r["rides_files"] if n.startswith(e["start_utc"])], r["rides_files"]
    assert r["undated_after"] == [], r["undated_after"]
    # Counted where a maintainer looks (ctl status).
    assert r["ride_files_status"]["rides_redated"] >= 1 and r["ride_files_status"]["dating_failures"] == 0, r["ride_files_status"]
    names = sf.usb_image_files(out / "usb-dated.img")
    assert d["files"]["fit"]["name"] in names and e["files"]["fit"]["name"] not in names, names
    import re
    logged = re.search(rf"ride {rid} dated now that the clock is set \(\+(\d+) d (\d+) h (\d+) min (\d+) s\): "
                       + re.escape(d["files"]["fit"]["name"]), r["log"])
    assert logged, r["log"][-2000:]
    days, hours, minutes, seconds = map(int, logged.groups())
    assert abs((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 - STALE_BY_MS) <= 3000, logged.group(0)


def test_every_time_of_the_dated_files_moves_by_the_offset(after):
    """fitdecode reads both versions: the same records, each moved by one offset (400 days, within
    the steps' latency), the session start and every record within the ride's true span."""
    r, out = after
    stale, dated = fit_times(out / "after-stale.fit"), fit_times(out / "after-dated.fit")
    lo, hi = r["start_true_ms"] - 3000, r["end_true_ms"] + 3000
    assert abs(ms(dated["start"]) - r["start_true_ms"]) <= 3000, (dated["start"], r["start_true_ms"])
    assert dated["records"] and len(dated["records"]) == len(stale["records"]), (len(dated["records"]), len(stale["records"]))
    offsets = {ms(b) - ms(a) for a, b in zip(stale["records"], dated["records"])}
    assert len(offsets) == 1 and abs(offsets.pop() - STALE_BY_MS) <= 3000, offsets
    assert all(lo <= ms(t) <= hi for t in dated["records"]), (dated["records"][0], dated["records"][-1], lo, hi)
    for ext in ("gpx", "tcx"):
        times = xml_times(out / f"after-dated.{ext}")
        assert times and all(lo <= t <= hi for t in times), (ext, times[:2], times[-1:], lo, hi)
        stale_times = xml_times(out / f"after-stale.{ext}")
        assert all(abs(b - a - STALE_BY_MS) <= 3000 for a, b in zip(stale_times, times)), ext


def test_a_ride_with_a_trusted_clock_is_not_re_dated_later(clock):
    record, _ = clock
    before = record["trusted_ride_before"]
    assert before and record["trusted_ride_after"] == before, (before, record["trusted_ride_after"])


def test_a_ride_waiting_for_its_date_across_a_reboot_keeps_the_boards_date(clock):
    """docs/journal.md, "The clock": a reboot before the clock was set loses the offset (how long
    the board was off is unknown): the ride keeps the date the board guessed, the next start logs
    why and removes its kept records, and a clock synchronised afterwards changes nothing."""
    record, _ = clock
    r, after = record["reboot"], record["clock_2"]["after_reboot"]
    e = r["entry"]
    rid = e["id"]
    assert f"{rid}.rec" in r["undated"], r["undated"]
    assert record["clock_2"]["boot_clock_unsynced"]
    assert abs(name_ms(e["start_utc"]) - (r["start_true_ms"] - STALE_BY_MS)) <= 3000, e
    assert [x for x in after["list"] if x["id"] == rid] == [e], (after["list"], e)
    assert after["undated"] == [], after["undated"]
    assert f"ride {rid} cannot be dated: the board restarted before its clock was set" in after["log"], after["log"][-2000:]
    assert after["ride_files_status"]["rides_undatable"] >= 1, after["ride_files_status"]
    assert not after["synced_unsynced"]
    assert [x for x in after["list_after_sync"] if x["id"] == rid] == [e], "re-dated after the reboot by a meaningless offset"
    assert after["undated_after_sync"] == [] and f"ride {rid} dated" not in after["log_after_sync"]


def test_the_next_ride_after_a_recovery_is_dated_by_the_boards_unset_clock(clock_cut):
    """After the power cut the recovered ride goes on on its trusted time line (gap 0: how long
    the board was off is unknown). A new ride started in that boot, the clock still
    unsynchronised, must be treated as recorded on an unset clock: named by the board's clock
    and kept in undated/ to be dated once the clock is set; not dated by the recovered ride's
    time line as if it were trusted (that is off by the time the board was off, and would never
    be corrected). Once the clock is synchronised it is dated by the true time."""
    _, after, _ = clock_cut
    nxt = after["next_ride"]
    assert nxt["unsynced"]
    e = nxt["entry"]
    assert abs(name_ms(e["start_utc"]) - nxt["start_board_ms"]) <= 3000, (e["start_utc"], nxt)
    assert f"{e['id']}.rec" in nxt["undated"], nxt["undated"]
    d = nxt["dated_entry"]
    assert abs(name_ms(d["start_utc"]) - nxt["start_true_ms"]) <= 3000, ("once the clock is set", d["start_utc"], nxt["start_true_ms"])
    assert nxt["undated_after_sync"] == []
