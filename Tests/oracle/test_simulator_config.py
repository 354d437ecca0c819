"""`bikesim --config FILE` and `--panel NAME`: a run or a replay with the rider's own settings
from the board's config file (read and checked by the board's code), on the rider's panel."""
import json
import shutil
import struct
import subprocess
import time

import pytest

from conftest import REPO
from test_terminal_demo import Tmux, read_pbm

RIDER = """\
[rider]
max_hr = 200
ftp = 250

[training]
average_cadence_zeros = true
auto_pause = false

[display]
type = "sharp-ls027"
spi_bus = 0
"""


def run(bikesim, out, *args):
    r = subprocess.run([str(bikesim), "--headless", "--out", str(out), *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text()), r.stdout


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_riders_config_drives_the_run_and_its_panel(bikesim, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(RIDER)
    default, _ = run(bikesim, tmp_path / "default", "--frames")
    rider, out = run(bikesim, tmp_path / "rider", "--frames", "--config", str(config))
    assert f"settings: {config}" in out and "panel 400x240" in out
    # Same synthetic ride (same seed), the rider's settings: zones from max_hr and FTP, cadence
    # averaged with zeros.
    assert rider["distance_m"] == default["distance_m"]
    assert default["time_in_power_zone_s"] is None and rider["time_in_power_zone_s"] is not None, "power zones from ftp"
    assert len(rider["time_in_power_zone_s"]) == 7
    assert rider["time_in_hr_zone_s"] != default["time_in_hr_zone_s"], "heart-rate zones from max_hr = 200"
    assert default["averaging"]["cadence"] == "without_zeros" and rider["averaging"]["cadence"] == "with_zeros"
    # Every frame on the 400x240 panel.
    frames = sorted((tmp_path / "rider" / "frames").glob("*.png"))
    assert frames and all(png_size(f) == (400, 240) for f in frames)
    assert all(png_size(f) == (256, 128) for f in (tmp_path / "default" / "frames").glob("*.png")), "the OLED at 2x"


def test_panel_overrides_and_bad_input_says_what_to_do(bikesim, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(RIDER)
    _, out = run(bikesim, tmp_path / "small", "--frames", "--config", str(config), "--panel", "ssd1306-32")
    assert "panel 128x32" in out
    assert all(png_size(f) == (256, 64) for f in (tmp_path / "small" / "frames").glob("*.png"))
    bad = subprocess.run([str(bikesim), "--headless", "--out", str(tmp_path / "x"), "--panel", "vga"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "sharp-ls027" in bad.stderr and "ssd1306" in bad.stderr
    config.write_text("[rider]\nftp_w = 250\n")
    bad = subprocess.run([str(bikesim), "--headless", "--out", str(tmp_path / "x"), "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and f"{config}:2: unknown key 'ftp_w'" in bad.stderr and "allowed keys" in bad.stderr


def test_a_replay_takes_the_riders_zones(bikesim, shared, tmp_path):
    ride = shared / "fixtures" / "rides" / "garmin-edge-500-activity.fit"
    config = tmp_path / "config.toml"
    config.write_text("[rider]\nmax_hr = 190\nftp = 220\n[zones]\npower_boundaries = [100, 150, 200, 250, 300, 350]\n")
    default = subprocess.run([str(bikesim), "--replay", str(ride), "--headless", "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=600)
    assert default.returncode == 0, default.stderr
    rider = subprocess.run([str(bikesim), "--replay", str(ride), "--headless", "--out", str(tmp_path / "b"), "--config", str(config)],
                           capture_output=True, text=True, timeout=600)
    assert rider.returncode == 0, rider.stderr
    assert f"with the settings of {config}" in rider.stdout
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["timer_time_s"] == b["timer_time_s"] and a["distance_m"] == b["distance_m"], "the same ride"
    assert a["time_in_hr_zone_s"] != b["time_in_hr_zone_s"], "heart-rate zones from max_hr = 190"


def test_the_large_panel_in_a_terminal_is_scaled_and_says_so(bikesim, tmp_path):
    """At 140x45 the 400x240 panel does not fit every pixel (202x64 in Braille): it is drawn at
    1:2, a dot for each 2x2 block with ink, and the screen says so and what window would show
    every pixel."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: apt-get install tmux (scripts/test.sh installs it as root)")
    frame = tmp_path / "frame.pbm"
    t = Tmux(140, 45, f"{bikesim} --panel sharp-ls027 --speed 10 --frame-file {frame}")
    try:
        screen = t.wait_for("scaled 1:2")
        assert any("every pixel in a 202×64 window" in line for line in screen), screen
        deadline_ok = False
        for _ in range(100):
            before = t.capture()
            if not frame.exists():
                time.sleep(0.2)
                continue
            comments, pixels = read_pbm(frame)
            after = t.capture()
            if before != after or "rendering braille-half" not in comments:
                time.sleep(0.2)
                continue
            top = next(i for i, line in enumerate(before) if line.startswith("┌"))
            cells = [line[1:line.index("│", 1)] for line in before[top + 1:top + 31]]
            assert len(cells) == 30 and all(len(r) == 100 for r in cells), "100x30 cells"
            expected = []
            for cy in range(30):
                row = ""
                for cx in range(100):
                    bits = 0
                    for dx in range(2):
                        for dy in range(4):
                            if any(pixels[cy * 8 + dy * 2 + j][cx * 4 + dx * 2 + i] for i in range(2) for j in range(2)):
                                bits |= [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]][dx][dy]
                    row += chr(0x2800 + bits)
                expected.append(row)
            if cells == expected:
                deadline_ok = True
                break
            time.sleep(0.2)
        assert deadline_ok, "the terminal showed the emulator's 400x240 frame at 1:2"
    finally:
        t.close()
