"""Issue 17, item 4: a board without an RTC.

The guest's clock is trusted only when the kernel says it is synchronised (adjtimex: STA_UNSYNC
clear, as systemd-timesyncd or an NTP client leaves it), never because it reads a plausible
date. guest_system.py `clock`: the ride starts on a clock 400 days stale and unsynchronised,
the clock is synchronised mid-ride, then stepped back 2 minutes; `clock-cut-1/2`: a ride on a
synchronised clock, the plug pulled, the board booted again on its stale saved clock. The FIT
file must be dated by the true start (the offset learnt when the clock became trusted) and its
records must never go backwards. Before issue 17 a clock after 2024 counted as trusted: the ride
was dated 400 days early, and after the power cut re-anchored to the stale boot clock.""" 
from __future__ import annotations

import datetime
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
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("clock")
    data = system.make_data_disk(out / "data.img", 64)
    result = vm.run(sf.guest_script("clock"), timeout_s=400, data_image=data, outdir=out, name="clock", env=sf.true_env())
    record = sf.record_of(result)
    assert result.ok and not record["errors"], sf.explain(result, record)
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
