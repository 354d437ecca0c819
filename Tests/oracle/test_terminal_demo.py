"""The interactive demo as a newcomer sees it, in real terminals of common sizes (tmux).

tmux draws what bikesim writes into a virtual terminal of a given size; `capture-pane` reads the
characters back. The test decodes the Braille (2×4 dots per cell) or half-block (1×2 per cell)
characters into panel pixels and compares them, pixel for pixel, with the image the SSD1306
emulator holds (bikesim --frame-file writes it after every redraw). It also reads the ride's
timer off the terminal: the digits are cut out of the decoded pixels and matched against the
digit glyphs of the golden picture of the paused screen (Tests/DisplayTests/Goldens/paused.pbm).
"""
import pathlib
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import REPO

GOLDENS = REPO / "Tests" / "DisplayTests" / "Goldens"
WIDTH, HEIGHT = 128, 64
# Braille dot bits by (column, row) inside the 2×4 cell: Unicode's dots 1 2 3 7 / 4 5 6 8.
BRAILLE_BITS = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]]
HALF = {" ": (0, 0), "▀": (1, 0), "▄": (0, 1), "█": (1, 1)}
# The paused screen draws the frozen timer in the huge digits on these rows.
TIMER_ROWS = range(20, 46)


def tmux_binary():
    t = shutil.which("tmux")
    if t is None:
        pytest.fail("tmux is not installed: apt-get install tmux (scripts/test.sh installs it as root)")
    return t


class Tmux:
    def __init__(self, columns, rows, command):
        self.tmux = tmux_binary()
        self.name = "bikesim-" + uuid.uuid4().hex[:8]
        # A private server socket: nothing of the developer's own tmux is touched.
        self.socket = "bikesim-test-" + uuid.uuid4().hex[:8]
        self.run("new-session", "-d", "-s", self.name, "-x", str(columns), "-y", str(rows), command)

    def run(self, *args):
        return subprocess.run([self.tmux, "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def capture(self):
        return self.run("capture-pane", "-p", "-t", self.name).split("\n")

    def resize(self, columns, rows):
        self.run("resize-window", "-t", self.name, "-x", str(columns), "-y", str(rows))

    def keys(self, *keys):
        self.run("send-keys", "-t", self.name, *keys)

    def close(self):
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], capture_output=True)

    def wait_for(self, text, timeout=30.0):
        deadline = time.monotonic() + timeout
        screen = []
        while time.monotonic() < deadline:
            screen = self.capture()
            if any(text in line for line in screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not on the screen within {timeout} s:\n" + "\n".join(screen))


def read_pbm(path):
    """A plain PBM written by bikesim --frame-file: (comment lines, rows of 0/1)."""
    words, comments = [], []
    for line in pathlib.Path(path).read_text().split("\n"):
        if line.startswith("#"):
            comments.append(line[1:].strip())
        else:
            words.extend(line.split())
    assert words[0] == "P1", "plain PBM"
    w, h = int(words[1]), int(words[2])
    bits = "".join(words[3:])
    assert len(bits) == w * h, f"PBM holds {len(bits)} pixels, not {w}×{h}"
    return comments, [[bits[y * w + x] == "1" for x in range(w)] for y in range(h)]


def decode(screen):
    """The panel pixels in a captured screen, and the rendering it used."""
    top = next(i for i, line in enumerate(screen) if line.startswith("┌"))
    bottom = next(i for i, line in enumerate(screen) if i > top and line.startswith("└"))
    cells = [line[1:line.index("│", 1)] for line in screen[top + 1:bottom]]
    pixels = [[False] * WIDTH for _ in range(HEIGHT)]
    braille = any("\u2800" <= ch <= "\u28ff" for row in cells for ch in row)
    if braille:
        assert len(cells) == HEIGHT // 4 and all(len(r) == WIDTH // 2 for r in cells), "64×16 Braille cells"
        for cy, row in enumerate(cells):
            for cx, ch in enumerate(row):
                bits = ord(ch) - 0x2800
                assert 0 <= bits <= 0xFF, f"not a Braille cell: {ch!r}"
                for dx in range(2):
                    for dy in range(4):
                        pixels[cy * 4 + dy][cx * 2 + dx] = bool(bits & BRAILLE_BITS[dx][dy])
        return "braille", pixels
    assert len(cells) == HEIGHT // 2 and all(len(r) == WIDTH for r in cells), "128×32 half-block cells"
    for cy, row in enumerate(cells):
        for x, ch in enumerate(row):
            t, b = HALF[ch]
            pixels[cy * 2][x], pixels[cy * 2 + 1][x] = bool(t), bool(b)
    return "halfblock", pixels


def glyphs(pixels, rows):
    """Column runs with ink on `rows`, left to right, each as a tuple of its columns."""
    out, current = [], []
    for x in range(WIDTH):
        column = tuple(pixels[y][x] for y in rows)
        if any(column):
            current.append(column)
        elif current:
            out.append(tuple(current))
            current = []
    if current:
        out.append(tuple(current))
    return out


def digit_templates():
    _, golden = read_pbm(GOLDENS / "paused.pbm")
    shapes = glyphs(golden, TIMER_ROWS)
    text = "1:02:03"  # ScreenCatalogue.riding(): timer 1:02:03
    assert len(shapes) == len(text), f"the golden's timer has {len(shapes)} glyphs"
    return {shape: ch for shape, ch in zip(shapes, text)}


def read_timer(pixels):
    templates = digit_templates()
    return "".join(templates.get(shape, "?") for shape in glyphs(pixels, TIMER_ROWS))


def matching_capture(tmux, frame_file, timeout=20.0):
    """A capture that shows exactly the frame the emulator holds (two equal captures around
    one read of the frame file, so a redraw in between does not count)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        before = tmux.capture()
        comments, frame = read_pbm(frame_file)
        after = tmux.capture()
        if before == after and any(l.startswith("┌") for l in before):
            rendering, pixels = decode(before)
            last = (rendering, pixels, frame, comments, before)
            if pixels == frame:
                return last
        time.sleep(0.2)
    assert last is not None, "no stable capture of the panel"
    rendering, pixels, frame, _, screen = last
    diff = sum(a != b for ra, rb in zip(pixels, frame) for a, b in zip(ra, rb))
    raise AssertionError(f"the terminal ({rendering}) never showed the emulator's frame: {diff} pixels differ\n" + "\n".join(screen))


SCENARIO = """\
# start at 1 s; the countdown ends at 4 s; pause when the timer shows 1:23
at 1s press start
at 87500ms press start
duration 30m
"""


@pytest.mark.parametrize("columns,rows,expected", [(80, 24, "braille"), (100, 30, "braille"), (140, 45, "halfblock")])
def test_the_panel_in_the_terminal_is_the_emulators_frame_and_shows_the_timer(bikesim, tmp_path, columns, rows, expected):
    scenario = tmp_path / "pause.scenario"
    scenario.write_text(SCENARIO)
    frame = tmp_path / "frame.pbm"
    t = Tmux(columns, rows, f"{bikesim} --speed 25 --scenario {scenario} --frame-file {frame}")
    try:
        t.wait_for("paused", timeout=60)
        rendering, pixels, _, comments, screen = matching_capture(t, frame)
        assert rendering == expected, f"{columns}×{rows} should use {expected}"
        assert f"rendering {expected}" in comments, "bikesim says which rendering it drew"
        assert read_timer(pixels) == "1:23", "the paused timer read off the terminal"
        # Nothing wraps: every line fits the width, the panel and the status line fit the height.
        assert all(len(line) <= columns for line in screen)
        assert any(line.startswith("sim ") for line in screen), "the status line is on the screen"
    finally:
        t.close()


def sim_seconds(screen):
    """The simulated time on the status line (`sim 01:05 ×1  running …`), in seconds."""
    status = next(line for line in screen if line.startswith("sim "))
    seconds = 0
    for part in status.split()[1].split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def test_the_first_screen_says_how_to_start_and_the_demo_rides_at_80x24(bikesim, tmp_path):
    # At real speed: the rider's `s` lands well before the demo's own start (its scenario presses
    # start at 5 s) and gives the rider the buttons, so that press is not made. At ×10 the demo's
    # press came first on a loaded machine (0.5 s after the launch) and the rider's `s` then paused
    # the ride at 0:00: "paused" for the 30 s this waited (twice in stop 46).
    frame = tmp_path / "frame.pbm"
    t = Tmux(80, 24, f"{bikesim} --speed 1 --frame-file {frame}")
    try:
        t.wait_for("press s to start the ride")
        t.keys("s")
        t.wait_for("running", timeout=30)
        # Past the demo's own press (5 s) and the countdown, the rider's ride still runs.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sim_seconds(t.capture()) < 9:
            time.sleep(0.2)
        status = next(line for line in t.capture() if line.startswith("sim "))
        assert sim_seconds([status]) >= 9 and " running " in status, f"the rider's ride, past the demo's press at 5 s: {status}"
        rendering, _, _, _, _ = matching_capture(t, frame)
        assert rendering == "braille"
    finally:
        t.close()


def test_resizing_rechooses_and_a_tiny_terminal_says_what_it_needs(bikesim, tmp_path):
    frame = tmp_path / "frame.pbm"
    t = Tmux(140, 45, f"{bikesim} --speed 10 --frame-file {frame}")
    try:
        t.wait_for("press s to start")
        assert matching_capture(t, frame)[0] == "halfblock"
        t.resize(80, 24)  # SIGWINCH
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "rendering braille" not in read_pbm(frame)[0]:
            time.sleep(0.1)
        assert matching_capture(t, frame)[0] == "braille"
        t.resize(50, 12)
        screen = t.wait_for("66×20")
        assert any("50×12" in line for line in screen), "it says the terminal's size"
        assert any("130×36" in line for line in screen)
        assert not any("┌" in line for line in screen), "no wrapped panel"
        t.resize(100, 30)
        t.wait_for("┌")
        assert matching_capture(t, frame)[0] == "braille"
    finally:
        t.close()


def test_render_forces_a_rendering(bikesim, tmp_path):
    frame = tmp_path / "frame.pbm"
    t = Tmux(140, 45, f"{bikesim} --render braille --frame-file {frame}")
    try:
        t.wait_for("press s to start")
        assert matching_capture(t, frame)[0] == "braille"
    finally:
        t.close()
    bad = subprocess.run([str(bikesim), "--render", "ascii"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "--render must be auto, halfblock or braille" in bad.stderr
