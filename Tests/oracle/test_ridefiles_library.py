"""The ride library through the `bikecomputer rides` and `usb-image` commands (issue 8).

Rides are placed in a temporary data directory under the documented names
(`rides/YYYY-MM-DD-HHMMSS_<uuid>_v<N>.<fit|gpx|tcx>`, UTC start time) from the simulated samples
the Swift tests write (see test_ridefiles.py).
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_ridefiles import SAMPLES, rides  # noqa: E402,F401  (the samples fixture)


def stem(exp, version=1):
    start = time.strftime("%Y-%m-%d-%H%M%S", time.gmtime(int(exp["start_unix_s"])))
    return f"{start}_{exp['ride_id']}_v{version}"


@pytest.fixture
def library(tmp_path, rides):  # noqa: F811
    data = tmp_path / "data"
    (data / "rides").mkdir(parents=True)
    chosen = [r for r in rides if r[0].startswith("ride-")][:6]
    for name, exp in chosen:
        for ext in ("fit", "gpx", "tcx"):
            shutil.copy(SAMPLES / f"{name}.{ext}", data / "rides" / f"{stem(exp)}.{ext}")
    return data, chosen


def run(bikecomputer, *args, check=True, **kw):
    r = subprocess.run([str(bikecomputer), *map(str, args)], capture_output=True, text=True, **kw)
    if check:
        assert r.returncode == 0, f"{args}: {r.stdout} {r.stderr}"
    return r


def test_list_show_export(bikecomputer, library, tmp_path):
    data, chosen = library
    listed = json.loads(run(bikecomputer, "rides", "list", "--json", "--data-dir", data).stdout)
    want = sorted(chosen, key=lambda c: stem(c[1]))
    assert [r["id"] for r in listed] == [exp["ride_id"] for _, exp in want]
    for r, (name, exp) in zip(listed, want):
        assert r["version"] == 1
        for ext in ("fit", "gpx", "tcx"):
            assert r["files"][ext]["name"] == f"{stem(exp)}.{ext}"
            assert r["files"][ext]["bytes"] == (SAMPLES / f"{name}.{ext}").stat().st_size
    table = run(bikecomputer, "rides", "list", "--data-dir", data).stdout
    assert all(exp["ride_id"] in table for _, exp in chosen)

    name, exp = chosen[0]
    shown = run(bikecomputer, "rides", "show", exp["ride_id"][:8], "--data-dir", data).stdout
    assert exp["ride_id"] in shown
    assert f"records:  {exp['records']}" in shown
    assert f"laps:     {len(exp['laps'])}" in shown

    for ext in ("fit", "gpx", "tcx"):
        out = tmp_path / f"out.{ext}"
        run(bikecomputer, "rides", "export", exp["ride_id"], "--format", ext, "-o", out, "--data-dir", data)
        assert out.read_bytes() == (SAMPLES / f"{name}.{ext}").read_bytes()

    bad = run(bikecomputer, "rides", "export", exp["ride_id"], "--format", "csv", "-o", tmp_path / "x", "--data-dir", data, check=False)
    assert bad.returncode != 0 and "fit, gpx or tcx" in bad.stderr
    missing = run(bikecomputer, "rides", "show", "ffffffff", "--data-dir", data, check=False)
    assert missing.returncode != 0 and "rides list" in missing.stderr


def test_newest_version_wins_and_delete_asks(bikecomputer, library):
    data, chosen = library
    name, exp = chosen[1]
    for ext in ("fit", "gpx", "tcx"):
        shutil.copy(SAMPLES / f"{chosen[2][0]}.{ext}", data / "rides" / f"{stem(exp, 2)}.{ext}")
    listed = json.loads(run(bikecomputer, "rides", "list", "--json", "--data-dir", data).stdout)
    mine = [r for r in listed if r["id"] == exp["ride_id"]]
    assert len(mine) == 1 and mine[0]["version"] == 2
    assert len(listed) == len(chosen)

    refused = run(bikecomputer, "rides", "delete", exp["ride_id"], "--data-dir", data, check=False, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0 and "--yes" in refused.stderr
    assert len(list((data / "rides").glob(f"*{exp['ride_id']}*"))) == 6
    run(bikecomputer, "rides", "delete", exp["ride_id"], "--yes", "--data-dir", data)
    assert list((data / "rides").glob(f"*{exp['ride_id']}*")) == []
    listed = json.loads(run(bikecomputer, "rides", "list", "--json", "--data-dir", data).stdout)
    assert len(listed) == len(chosen) - 1


def test_usb_image_is_clean_and_holds_every_ride(bikecomputer, library, tmp_path):
    for tool in ("mkfs.fat", "fsck.fat", "mcopy", "mdir"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: apt-get install dosfstools mtools")
    data, chosen = library
    image = tmp_path / "usb.img"
    out = run(bikecomputer, "usb-image", "--out", image, "--data-dir", data).stdout
    assert f"{len(chosen)} rides" in out
    fsck = subprocess.run(["fsck.fat", "-n", str(image)], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    listing = subprocess.run(["mdir", "-i", str(image), "-b", "::/Activities"], capture_output=True, text=True, check=True).stdout
    for name, exp in chosen:
        for ext in ("fit", "gpx"):
            fname = f"{stem(exp)}.{ext}"
            assert fname.lower() in listing.lower(), fname
            back = tmp_path / f"back.{ext}"
            subprocess.run(["mcopy", "-o", "-i", str(image), f"::/Activities/{fname}", str(back)], check=True)
            assert back.read_bytes() == (SAMPLES / f"{name}.{ext}").read_bytes()
    assert ".tcx" not in listing.lower()


def test_usb_image_leaves_off_a_link_named_like_a_ride(bikecomputer, library, tmp_path):
    """Issue 27: rides/ belongs to the app's service user. A symbolic link named like a ride's
    FIT and GPX (to a file only root could read: here one outside the library) must not put that
    file on the USB drive; the image is still built with every real ride, and the command says
    what it left off."""
    data, chosen = library
    secret = tmp_path / "shadow"
    marker = f"root:SECRET-{random.getrandbits(64):016x}:19000:0:99999:7:::\n"
    secret.write_text(marker)
    fake = "2026-01-01-000000_00000000-0000-4000-8000-000000000027_v1"
    for ext in ("fit", "gpx"):
        (data / "rides" / f"{fake}.{ext}").symlink_to(secret)
    image = tmp_path / "usb.img"
    r = run(bikecomputer, "usb-image", "--out", image, "--data-dir", data)
    listing = subprocess.run(["mdir", "-i", str(image), "-b", "::/Activities"], capture_output=True, text=True, check=True).stdout
    assert fake not in listing.lower(), listing
    assert marker.encode() not in image.read_bytes(), "the linked file's bytes are not on the drive"
    for _, exp in chosen:
        assert f"{stem(exp)}.fit".lower() in listing.lower()
    assert "left off the drive" in r.stderr and fake in r.stderr and "symbolic link" in r.stderr, r.stderr
    assert "2 left off" in r.stdout, r.stdout


def test_interrupted_export_leaves_previous_state(bikecomputer, tmp_path):
    """SIGKILL `rides export` at random moments: the target is always the old file or the
    complete new one, and the library itself is untouched."""
    data = tmp_path / "data"
    (data / "rides").mkdir(parents=True)
    big = os.urandom(48 << 20)  # large enough that most kills land mid-copy
    ride_id = "0f8c2c3e-58a1-4d2b-9a51-7d1f7b0e9c11"
    src = data / "rides" / f"2026-11-22-083000_{ride_id}_v1.fit"
    src.write_bytes(big)
    target = tmp_path / "export.fit"
    old = b"previous export"
    target.write_bytes(old)
    rng = random.Random(8)
    killed = 0
    for trial in range(12):
        p = subprocess.Popen([str(bikecomputer), "rides", "export", ride_id, "-o", str(target), "--data-dir", str(data)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.25))
        p.send_signal(signal.SIGKILL)
        rc = p.wait()
        if rc == -signal.SIGKILL:
            killed += 1
        now = target.read_bytes()
        assert now == old or now == big, f"trial {trial}: target holds {len(now)} bytes, neither old nor new"
        if now == big:
            target.write_bytes(old)
        assert src.read_bytes() == big
    assert killed > 0, "no export was interrupted; the test did not exercise anything"
    listed = json.loads(run(bikecomputer, "rides", "list", "--json", "--data-dir", data).stdout)
    assert [r["id"] for r in listed] == [ride_id]


def test_import_store_list_export_and_usb_image_end_to_end(bikecomputer, shared, tmp_path):
    """A recorded ride goes through the app (replay, statistics, RideLibrary.store with atomic
    writes) and comes out of every command; the stored FIT passes Garmin's decoder."""
    from garmin_fit_sdk import Decoder, Stream

    data = tmp_path / "data"  # does not exist yet: store creates it
    src = shared / "fixtures" / "rides" / "garmin-edge-820-bike.fit"
    first = run(bikecomputer, "rides", "import", src, "--data-dir", data).stdout
    ride_id = first.split(":")[0]
    assert "version 1" in first
    again = run(bikecomputer, "rides", "import", src, "--data-dir", data).stdout
    assert again.startswith(ride_id) and "version 2" in again
    names = sorted(p.name for p in (data / "rides").iterdir())
    assert len(names) == 3 and all("_v2." in n and ride_id in n for n in names), names
    assert not any(n.endswith(".tmp") for n in names)

    listed = json.loads(run(bikecomputer, "rides", "list", "--json", "--data-dir", data).stdout)
    assert [(r["id"], r["version"]) for r in listed] == [(ride_id, 2)]
    out = tmp_path / "ride.fit"
    run(bikecomputer, "rides", "export", ride_id[:6], "-o", out, "--data-dir", data)
    b = bytearray(out.read_bytes())
    assert Decoder(Stream.from_byte_array(b)).check_integrity()
    messages, errors = Decoder(Stream.from_byte_array(b)).read()
    assert errors == []
    assert len(messages["record_mesgs"]) == 15  # the Edge 820 ride's 15 records
    assert messages["session_mesgs"][0]["max_heart_rate"] == 121
    gpx = tmp_path / "ride.gpx"
    run(bikecomputer, "rides", "export", ride_id, "--format", "gpx", "-o", gpx, "--data-dir", data)
    import gpxpy
    assert len([p for t in gpxpy.parse(gpx.read_text()).tracks for s in t.segments for p in s.points]) > 0

    image = tmp_path / "usb.img"
    run(bikecomputer, "usb-image", "--out", image, "--data-dir", data)
    assert subprocess.run(["fsck.fat", "-n", str(image)], capture_output=True).returncode == 0
    back = tmp_path / "back.fit"
    fit_name = [n for n in names if n.endswith(".fit")][0]
    subprocess.run(["mcopy", "-i", str(image), f"::/Activities/{fit_name}", str(back)], check=True)
    assert back.read_bytes() == (data / "rides" / fit_name).read_bytes() == out.read_bytes()

    bad = tmp_path / "bad.fit"
    bad.write_bytes(src.read_bytes()[:-10])
    r = run(bikecomputer, "rides", "import", bad, "--data-dir", data, check=False)
    assert r.returncode != 0 and "not a valid file" in r.stderr
