"""Issue 27, the installed system: least privilege measured, and the USB drive's path, on the
booted Debian 12 that board/install.sh installed (system.installed_image).

Tests/vm/guest_hardening.py in the guest: `systemd-analyze security` of every shipped unit (the
app's at most 2.5, every other at most 4.0: "OK" or better; the path units, which it does not
rate, watch only what `bike` alone can write); the users and groups install.sh
made (the bridge not in the app's group: neither the config directory nor the data directory
is its; only the bridge socket); the companion's view of the data directory (its own
companion/ and courses/, nothing else), a pairing and a course upload through its sandbox; the USB drive installed before the
first ride (the order that made rides/ root's and every ride RIDE NOT SAVED); a ride through the
units with the refresh path unit's triggers counted, the USB image rebuilt by the units at its
end and read as a computer plugged into the unit reads it (dummy_hcd: the guest is its own USB
host); beside the shipped path unit, the one it replaced (4 triggers per 30 s) fails on that one
ride; a link named like a ride to /etc/shadow, and a link in place of the image, never reach the
drive."""
from __future__ import annotations

import pathlib

import pytest

import system
import system_fixtures as sf
from conftest import guest_result, launcher, prepared

GUEST = pathlib.Path(__file__).resolve().parent / "guest_hardening.py"
APP_EXPOSURE_MAX = 2.5
UNIT_EXPOSURE_MAX = 4.0
SHIPPED = ["bikecomputer.service", "bikecompanion.service", "bikebridge.service", "bikecomputer-usb-image.service",
           "bikecomputer-usb-gadget.service", "bikecomputer-usb-refresh.service", "bikecomputer-poweroff.service"]
# Shipped path units: no process of their own (PID 1 watches a path and starts the service).
PATH_UNITS = ["bikecomputer-usb-refresh.path", "bikecomputer-poweroff.path"]


def hardening_run(k):
    vm = system.System(k, sf.installed(k))
    out = sf.prepare_outdir("hardening")
    (out / "guest_hardening.py").write_text(GUEST.read_text())
    data = system.make_data_disk(out / "data.img", 64)
    result = vm.run("python3 /out/guest_hardening.py", timeout_s=900, data_image=data, outdir=out, name="hardening")
    record = sf.record_of(result)
    assert result.ok and not record["errors"], sf.explain(result, record)
    return result, record


@launcher(__name__, order=2)
def _start(request):
    k = request.getfixturevalue("amd64")
    return sf.Background(lambda: hardening_run(k))


@pytest.fixture(scope="module")
def hardened(guests):
    return prepared("the hardening guest", lambda: guest_result(guests, __name__))


def test_every_shipped_unit_is_rated_ok_or_better(hardened):
    _, r = hardened
    sec = r["security"]
    assert sorted(sec) == sorted(SHIPPED), f"measured: {sorted(sec)}"
    table = {u: (v["exposure"], v["rating"]) for u, v in sec.items()}
    for unit, v in sec.items():
        limit = APP_EXPOSURE_MAX if unit == "bikecomputer.service" else UNIT_EXPOSURE_MAX
        assert v["exposure"] is not None and v["exposure"] <= limit, (unit, table, v["failed_checks"])
        assert v["rating"] in ("OK", "SAFE"), (unit, table)


def test_the_path_units_watch_only_what_the_app_user_alone_can_write(hardened):
    """A path unit is PID 1 watching a path: whoever can create that path starts the service
    (the power-off unit powers the board off). Each watched path's directory is the app's and
    no other user may write in it; `systemd-analyze security` rates services, so the services
    they start are measured above."""
    _, r = hardened
    pu = r["path_units"]
    assert sorted(pu) == sorted(PATH_UNITS), f"measured: {sorted(pu)}"
    for unit, v in pu.items():
        assert v["props"]["LoadState"] == "loaded" and v["props"]["ActiveState"] == "active", (unit, v["props"])
        assert v["analyze_rc"] != 0 and "not a service unit" in v["analyze"], (unit, v["analyze"])
        assert v["watched"], (unit, v["paths"])
        for path, d in v["watched"].items():
            assert d["owner"] == "bike" and not d["link"], (unit, path, d)
            assert int(d["mode"], 8) & 0o022 == 0, f"{unit}: {path}'s directory is writable by others than bike: {d}"
    assert "/run/bikecomputer/power-off" in pu["bikecomputer-poweroff.path"]["paths"], pu["bikecomputer-poweroff.path"]
    # A ride, its end and the USB drive's rebuilds asked for no power-off.
    off = r["units_after"]["bikecomputer-poweroff.service"]
    assert off["ActiveState"] == "inactive" and off["ExecMainStartTimestampMonotonic"] == "0", off


def test_the_bridge_user_reaches_its_socket_and_nothing_of_the_app(hardened):
    _, r = hardened
    u = r["users"]
    assert "bike" not in u["bikebridge_groups"], u["bikebridge_groups"]
    assert {"plugdev", "bluetooth"} <= set(u["bikebridge_groups"]), u["bikebridge_groups"]
    assert not u["bridge_can_write_config_dir"], "the bridge must not be able to replace the app's config"
    assert u["bridge_can_read_config"], "it reads its paired sensors from the config"
    assert not u["bridge_can_list_data"], "the rides and the journal are not the bridge's"
    assert not u["bridge_can_list_run"] and not u["bridge_can_reach_control"]
    assert u["bridge_can_reach_socket"]
    d = u["dirs"]
    assert d["/run/bikecomputer"] == {"owner": "bike", "group": "bikebridge", "mode": "0o2710", "link": False}, d
    assert d["/run/bikecomputer/bridge.sock"]["group"] == "bikebridge", d
    assert d["/run/bikecomputer/control.sock"]["mode"] == "0o600", d
    for p in ["/var/lib/bikecomputer", "/var/lib/bikecomputer/rides"]:
        assert (d[p]["owner"], d[p]["group"], d[p]["mode"]) == ("bike", "bike", "0o750"), (p, d[p])
    for p in ["/var/lib/bikecomputer/companion", "/var/lib/bikecomputer/usb"]:
        assert (d[p]["owner"], d[p]["mode"]) == ("bike", "0o700"), (p, d[p])
    # And the bridge still feeds the ride through that socket (the sensors were connected).
    assert r["units"]["bikebridge.service"]["ActiveState"] == "active"


def test_the_companion_sees_only_its_own_directory_and_courses_and_still_pairs(hardened):
    _, r = hardened
    c = r["companion"]
    assert tuple(c["sees"]) == (0, "companion\ncourses"), c["sees"]
    assert c["write_data_dir"][0] != 0 and c["write_rides"][0] != 0, c
    assert c["read_journal"][0] != 0, c
    assert c["write_own_dir"][0] == 0 and c["write_courses"][0] == 0, c
    # A course uploaded from the phone lands in courses/, the app's user's, owner-only.
    assert c.get("course_upload") == 201 and c["course_file"]["owner"] == "bike" and c["course_file"]["mode"] == "0o600", c
    assert c.get("pair") == 200 and c["tokens_has_id"], c
    assert c["tokens_file"]["owner"] == "bike" and c["tokens_file"]["mode"] == "0o600", c


def test_the_usb_drive_installed_before_the_first_ride_leaves_rides_to_the_app(hardened):
    """The reported bug: board/usb-gadget/install.sh (and the path unit's MakeDirectory=) made
    rides/ root:root 0755 before the first ride, and no ride could be saved."""
    _, r = hardened
    after = r["after_gadget_install"]
    rides = after.get("/var/lib/bikecomputer/rides")
    assert rides is None or (rides["owner"], rides["mode"]) == ("bike", "0o750"), after
    ride = r["ride"]
    end = ride["end"]
    # "saved" once the file is on the card, or (a slow card: TCG on a loaded host) "being
    # written"; never "saved" before the file is there, never RIDE NOT SAVED.
    assert end["rc"] == 0 and end["out"] in ("ended: ride ended and saved", "ended: ride ended; its file is being written "
                                                                             "(RIDE SAVED on the screen once it is on the card)"), end
    if end["out"].endswith("saved"):
        assert ride["status_at_end_reply"]["written"] >= 1, "`ctl end` said saved: the file is on the card"
    assert all(f["owner"] == "bike" for f in ride["files"].values()), ride["files"]


def test_a_rides_worth_of_triggers_keeps_the_drive_updating(hardened):
    _, r = hardened
    ride = r["ride"]
    assert ride["path_unit"]["ActiveState"] == "active", ride["path_unit"]
    assert ride["fit"] in ride["image_files"], "the units rebuilt the image with the ride"
    assert ride["fit"] in ride["drive_files"], "and the computer plugged into the unit sees it"
    # (The kernel names the file by its path in the refresh unit's own mount namespace.)
    assert ride["lun_ro"] == "1" and ride["lun_file"].endswith("/usb/usb.img"), ride
    # The unit it replaced, watching the same paths, gives up on this one ride when its writes
    # come faster than its trigger limit (200 in 2 s); on a loaded host (stop 37's CI) they came
    # slower and it was still waiting: either way it never did better than the new units.
    assert ride["inotify_reads"] > 4, ride["inotify_names"]
    old = ride["old_path_unit"]
    assert (old["ActiveState"], old["Result"]) in (("failed", "trigger-limit-hit"), ("active", "success")), old


def test_links_planted_by_the_app_user_never_reach_the_drive(hardened):
    _, r = hardened
    lk = r["link"]
    assert lk["left_off"], "the image unit says what it left off"
    assert not lk["secret_in_image"] and not lk["secret_on_drive"] and not lk["fake_in_image"], lk
    assert lk["image_link_refresh"]["rc"] != 0 and "symbolic link" in lk["image_link_refresh"]["err"], lk
    assert lk["lun_file_after"] == lk["lun_file_before"] and not lk["secret_on_drive_after"], lk


def test_every_unit_still_runs(hardened):
    _, r = hardened
    for u in ["bikecomputer.service", "bikebridge.service", "bikecompanion.service"]:
        assert r["units_after"][u]["ActiveState"] == "active", (u, r["units_after"][u])
    assert r["units_after"]["bikecomputer-usb-gadget.service"]["ActiveState"] == "active", r["units_after"]
