"""Issue 26, item 2-3: the board's Debian package (bash scripts/release-arm64.sh) on a booted
Debian 12 arm64 with systemd, under qemu-system-aarch64 on Debian's arm64 kernel
(arm64_system.image: debootstrap's bookworm, as Raspberry Pi OS Lite 64-bit is).

Tests/vm/guest_package.py does what a rider does, in one boot: `apt install ./….deb` of the
previous version (this build's package relabelled one version back: the upgrade path, not two
releases' file formats), the units as installed, the wiring and pairing in the config, a ride
through the units (the bridge unit replays a recorded ANT+ strap and BLE power meter), `apt
install` of this version with the ride in progress, the ride recovered after the restart and
ended, `apt remove` (the rides and the rider's config stay), the package again, `apt purge`."""
from __future__ import annotations

import pathlib
import re
import shutil

import pytest

import arm64_system
import builds
import system
import system_fixtures as sf
import vmlib
from conftest import launcher, prepared

GUEST_DRIVER = pathlib.Path(__file__).resolve().parent / "guest_package.py"


def previous_version(deb: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """The same package with its version one step back ("0.1.0" -> "0.1.0~previous"), so that
    installing `deb` over it is an upgrade for dpkg and apt."""
    tree = out / "previous-tree"
    shutil.rmtree(tree, ignore_errors=True)
    vmlib.sh(["dpkg-deb", "-R", str(deb), str(tree)])
    control = tree / "DEBIAN" / "control"
    text = control.read_text()
    version = re.search(r"^Version: (\S+)$", text, re.M).group(1)
    control.write_text(re.sub(r"^Version: .*$", f"Version: {version}~previous", text, flags=re.M))
    previous = out / "previous.deb"
    # xz at level 1: 5.6 CPU-s against 27.5 at dpkg-deb's default 6 (stop 47), before each package
    # guest boots; it unpacks as fast (1 s on the host) and is 13.1 MB against 11.4.
    vmlib.sh(["dpkg-deb", "--root-owner-group", "-Zxz", "-z1", "--build", str(tree), str(previous)], timeout=600)
    shutil.rmtree(tree)
    return previous


def package_run(k: vmlib.Kernel, modules: list[pathlib.Path], release: pathlib.Path) -> tuple[vmlib.Result, dict]:
    image = arm64_system.image(k, modules)
    out = sf.prepare_outdir("package-arm64")
    (out / "guest_package.py").write_text(GUEST_DRIVER.read_text())
    current = builds.arm64_deb(release)
    shutil.copy(current, out / "current.deb")
    previous_version(current, out)
    data = system.make_data_disk(out / "data.img", 64)
    vm = system.System(k, image, memory_mb=1024)
    result = vm.run("python3 /out/guest_package.py --previous /out/previous.deb --current /out/current.deb",
                    timeout_s=1500, data_image=data, outdir=out, name="package-arm64")
    return result, sf.record_of(result)


def arm64_inputs(request) -> tuple:
    """What a package guest needs: Debian's arm64 kernel, its modules and the aarch64 release."""
    return (request.getfixturevalue("arm64"), request.getfixturevalue("arm64_modules"),
            request.getfixturevalue("arm64_release"))


@launcher(__name__, order=1)
def _start(request):
    k, modules, release = arm64_inputs(request)
    return sf.Background(lambda: package_run(k, modules, release), "the package test's arm64 guest")


@pytest.fixture(scope="module")
def pkg(guests):
    started = guests.get(__name__)
    if started is None or isinstance(started, BaseException):
        raise started or AssertionError(f"no guest was started for {__name__}")
    result, record = prepared("the package test's arm64 guest", started.wait)
    assert result.ok and not record["errors"], sf.explain(result, record)
    return result, record


def test_apt_install_of_the_deb_makes_what_the_board_needs(pkg):
    _, r = pkg
    assert r["before"]["package"] == "not known to dpkg" and r["before"]["users"] == "", "a fresh system"
    i = r["installed"]
    assert i["package"].startswith("ii ") and i["package"].endswith("~previous"), i["package"]
    assert i["version"].startswith("bikecomputer ") and "commit not recorded" not in i["version"], i["version"]
    for u in ("bikecomputer", "bikebridge", "bikecompanion"):
        assert i["units"][u]["enabled"] == "enabled", (u, i["units"][u])
        assert i["units"][u]["fragment"] == f"/lib/systemd/system/{u}.service", i["units"][u]
    assert i["units"]["bikecomputer"]["ActiveState"] == "active" and i["units"]["bikebridge"]["ActiveState"] == "active", i["units"]
    assert i["units"]["bikecompanion"]["ActiveState"] == "inactive", "off until [companion] enabled = true"
    assert {"gpio", "i2c", "dialout"} <= set(i["groups"]["bike"]), i["groups"]
    # The bridge reaches the app's bridge socket through its own group (the sockets' directory is
    # bike:bikebridge 2710), not bike's: that group would give it the config directory and the rides.
    assert {"bikebridge", "plugdev", "bluetooth"} <= set(i["groups"]["bikebridge"]), i["groups"]
    assert "bike" not in i["groups"]["bikebridge"], i["groups"]
    assert i["run_dir"] == {"exists": True, "mode": "0o2710", "user": "bike", "group": "bikebridge"}, i["run_dir"]
    assert i["rides_dir"] == {"exists": True, "mode": "0o750", "user": "bike", "group": "bike"}, i["rides_dir"]
    assert i["poweroff_path"] == {"enabled": "enabled", "active": "active"}, "the app's clean power-off request is watched"
    assert i["etc"] == {"exists": True, "mode": "0o775", "user": "root", "group": "bike"}, i["etc"]
    assert i["data"]["user"] == "bike" and i["data"]["mode"] == "0o750", i["data"]
    assert "/etc/bikecomputer/config.toml" in i["conffiles"] and "/etc/default/bikebridge" in i["conffiles"], i["conffiles"]
    assert i["devices"] and all(d["group"] == ("gpio" if "gpiochip" in n else "i2c") and d["mode"] == "0o660"
                                for n, d in i["devices"].items()), i["devices"]
    assert "/usr/bin/python3 -m bikebridge" in i["bridge_python"], i["bridge_python"]


def test_the_install_needed_no_network(pkg):
    _, r = pkg
    for step in ("install", "upgrade", "reinstall"):
        out = r[step]["output"]
        # apt names the local file it installs ("Get:1 /out/current.deb ..."); nothing from a mirror.
        fetched = [l for l in out.splitlines() if re.match(r"\s*(Get|Err|Ign):\d+ (?!/out/)", l)]
        assert "Need to get 0 B" in out and not fetched and "Err:" not in out, fetched or out


def test_a_ride_through_the_installed_units_and_the_kernels_hardware(pkg):
    result, r = pkg
    assert r["units_after_upgrade"]["bikebridge"]["User"] == "bikebridge"
    fit = sf.fit_records(result.outdir / "package-ride.fit")
    assert fit["sessions"] == 1 and fit["laps"] >= 2, fit
    assert fit["heart_rates"] and min(fit["heart_rates"]) >= 120, "the bridge unit's heart rate reached the ride"
    assert fit["powers"], "the bridge unit's power reached the ride"
    assert len(r["rides_listed"]) == 1, r["rides_listed"]


def test_an_upgrade_with_a_ride_in_progress_recovers_it_after_the_restart(pkg):
    _, r = pkg
    b, a = r["before_upgrade"], r["after_upgrade"]
    assert b["state"] == "running"
    assert a["package"].startswith("ii ") and not a["package"].endswith("~previous"), a
    assert a["pid"] != b["pid"], "the new bikecomputer runs"
    assert a["recovered"] and a["state"] == "running", a
    assert a["timer_ms"] >= b["timer_ms"] - 1000, f"at most a second lost: {b} -> {a}"
    assert r["going_on"]["timer_ms"] > a["timer_ms"], "the ride goes on"
    assert r["config_kept"], "the rider's config (a conffile they changed) is kept"


def test_an_upgrade_leaves_each_unit_enabled_or_disabled_as_the_rider_left_it(pkg):
    _, r = pkg
    assert r["rider_disabled"] == "disabled", r["rider_disabled"]
    states = {u: s["enabled"] for u, s in r["units_after_upgrade"].items()}
    assert states == {"bikecomputer": "enabled", "bikebridge": "enabled", "bikecompanion": "disabled"}, states


def test_apt_remove_keeps_the_rides_and_the_config(pkg):
    _, r = pkg
    gone = r["removed"]
    assert gone["package"].startswith("rc "), gone["package"]
    assert gone["rides"] == r["rides_before_remove"], gone
    assert gone["config_kept"]
    assert not gone["binaries"]["bikecomputer"]["exists"] and not gone["bridge_dir"]["exists"], gone
    assert gone["units"]["bikecomputer"]["ActiveState"] == "inactive", gone["units"]
    # The maintainer scripts leave systemd in step with the files on disk after each step (the
    # postrm reloads on a removal only; deb-systemd-helper's mask and unmask reload for it too).
    for u, s in gone["units"].items():
        assert s["enabled"] == "masked" and s["LoadState"] == "masked" and s["NeedDaemonReload"] == "no", (u, s)
    for u, s in r["units_after_upgrade"].items():
        assert s["LoadState"] == "loaded" and s["NeedDaemonReload"] == "no", (u, s)
    assert r["rides_listed_after_reinstall"] == r["rides_listed"], "installed again, it has the rides"
    assert r["config_kept_over_reinstall"]
    purged = r["purged"]
    assert purged["package"] == "not known to dpkg" and not purged["etc"]["exists"] and not purged["default"]["exists"], purged
    assert purged["rides"] == r["rides_before_remove"], "a purge leaves the rides"
    for u, s in purged["units"].items():
        assert s["LoadState"] == "not-found" and s["NeedDaemonReload"] == "no" and not s["fragment"], (u, s)
