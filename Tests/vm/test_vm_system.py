"""Issue 17, items 1-3: the shipped install on a booted Debian 12 with systemd.

board/install.sh ran in the guest as docs/board.md tells a rider (system.installed_image); the
guest then boots with systemd, the units start by themselves, and Tests/vm/guest_system.py rides
as the rider: the bridge unit replays a recorded ride into the app's socket as its own user, the
buttons are gpio-sim lines, the display the kernel's ssd1306-sim. Each unit is crashed once; the
ride goes on. Then a real power cut: QEMU killed mid-ride, the machine booted again."""
from __future__ import annotations

import pytest

import system
import system_fixtures as sf
from conftest import guest_result, launcher, prepared


def system_ride(k):
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("system-ride")
    data = system.make_data_disk(out / "data.img", 64)
    result = vm.run(sf.guest_script("ride"), timeout_s=600, data_image=data, outdir=out, name="system-ride")
    record = sf.record_of(result)
    assert result.ok and not record["errors"], sf.explain(result, record)
    return result, record


@launcher(__name__, order=1)
def _start(request):
    k = request.getfixturevalue("amd64")
    ride = sf.Background(lambda: system_ride(k))
    cut = sf.Background(lambda: sf.power_cut_ride(k))
    return sf.Background(lambda: {"ride": ride.wait(), "cut": cut.wait()})


@pytest.fixture(scope="module")
def ride(guests):
    return prepared("the system ride", lambda: guest_result(guests, __name__)["ride"])


def test_install_made_the_users_and_units_a_rider_needs(ride):
    _, r = ride
    before = r["units_before"]
    assert before["bikecomputer"]["ActiveState"] == "active", before
    assert before["bikebridge"]["ActiveState"] == "active", before
    assert r["app_process_user"] == "bike"
    assert r["bridge_process_user"] == "bikebridge", "the bridge runs as its own user"
    assert "bridge.sock" in r["sockets"] and "control.sock" in r["sockets"], r["sockets"]


def test_the_bridge_unit_feeds_the_ride_as_its_own_user(ride):
    result, r = ride
    fit = sf.fit_records(result.outdir / "ride.fit")
    assert fit["heart_rates"] and min(fit["heart_rates"]) >= 120, "heart rate from the replayed ANT+ strap reached the ride"
    assert fit["powers"] and 150 <= sum(fit["powers"]) / len(fit["powers"]) <= 260, "power from the replayed BLE meter"


def test_a_crash_of_either_unit_restarts_it_and_the_ride_goes_on(ride):
    _, r = ride
    app = r["after_app_crash"]
    assert app["state"] == "running" and app["recovered"], app
    assert int(app["unit"]["NRestarts"]) >= 1, app["unit"]
    assert app["timer_ms"] >= r["before_app_crash"]["timer_ms"] - 1000, "at most a second lost to the crash"
    assert int(r["after_bridge_crash"]["unit"]["NRestarts"]) >= 1
    assert r["after_bridge_crash"]["sensors_back_s"] < 15
    for u in ["bikecomputer", "bikebridge"]:
        assert r["units_after"][u]["ActiveState"] == "active", (u, r["units_after"][u])


def test_the_companion_unit_runs_as_the_user_the_control_socket_accepts(ride):
    _, r = ride
    assert r["companion_health"] == "active", \
        f"bikecompanion: {r['units_after']['bikecompanion']}\n{r.get('journal_companion', '')[-1500:]}"
    assert r["units_after"]["bikecompanion"]["User"] == "bike"


def test_buttons_and_display_through_the_kernel(ride):
    _, r = ride
    assert r["page_changed"], "PAGE changed what the kernel's SSD1306 shows"
    assert r["final_status"]["state"] == "ended"


def test_the_fit_file_passes_the_independent_decoders_and_is_on_the_usb_drive(ride):
    result, r = ride
    fit = sf.fit_records(result.outdir / "ride.fit")
    assert fit["sessions"] == 1 and fit["laps"] >= 2, fit
    assert fit["records"] >= 10 and fit["sdk_records"] == fit["records"], fit
    names = sf.usb_image_files(result.outdir / "usb.img")
    fit_name = r["fit_files"][-1].rsplit("/", 1)[-1]
    assert fit_name in names, (fit_name, names)


@pytest.fixture(scope="module")
def power_cut(guests):
    """A real power cut: QEMU killed mid-ride, the board booted again on its stale saved clock
    (no RTC: -rtc base= an old date; systemd-timesyncd's clock file moves it to the install
    time, still before the ride). test_vm_clock.py checks the dating of the same ride."""
    return prepared("the power-cut ride", lambda: guest_result(guests, __name__)["cut"])


def test_a_real_power_cut_mid_ride_is_recovered_after_boot(power_cut):
    before, after, outdir = power_cut
    b = before["before_cut"]
    a = after["after_boot"]
    assert a["recovered"] and a["state"] == "running", a
    assert a["timer_ms"] >= b["timer_ms"] - 1000, f"at most a second lost: before {b}, after {a}"
    assert after["going_on"]["timer_ms"] > a["timer_ms"], "the ride goes on"
    fit = sf.fit_records(outdir / "clock-cut.fit")
    assert fit["sessions"] == 1 and fit["laps"] >= 2, fit


def test_pairing_from_the_shell_rewrites_the_config_and_the_bridge_unit_reads_it(ride):
    """Issue 21: the bridge unit runs with --config /etc/bikecomputer/config.toml; `bikecomputer
    sensors pair` asks the app, which (as `bike`, ProtectSystem=strict) writes a new file and
    renames it over the old one in /etc/bikecomputer (root:bike 0775); the bridge (as
    `bikebridge`) reads it again without a restart; `forget` gives the file back as it was."""
    _, r = ride
    p = r["pairing"]
    assert "--config /etc/bikecomputer/config.toml" in p["bridge_args"], p["bridge_args"]
    assert p["pair_output"].startswith("paired ble:C0:FF:EE:00:33:44"), p
    added = p["after_pair"][len(p["before"]):]
    assert p["after_pair"].startswith(p["before"]) and 'ble_address = "C0:FF:EE:00:33:44"' in added, added
    assert p["inode_changed"] and p["owner_after"] == "bike", "written by the app as its user, renamed into place"
    assert p["mode_after"] == p["mode_before"] and p["leftovers"] == [], p
    assert p["dir_mode"] == "0o775" and p["dir_group"] == "bike", p
    assert "C0:FF:EE:00:33:44" in p["reload_after_pair"] and "C0:FF:EE:00:33:44" not in p["reload_after_forget"], p
    assert p["after_forget"] == p["before"], "pair then forget leaves the file as it was"
    assert p["bridge_active"] == "active", p
