"""A real browser against the companion: headless Chromium (Debian package `chromium`,
driven over the DevTools protocol) opens the page, pairs with the code the (fake) unit was
asked to show, sees the device's timer advance, presses Pause and sees the device's state
change, and draws the live and ride charts with Chart.js served by the companion itself from
Debian's libjs-chart.js (the phone has no internet on a ride). The screenshot is a test artefact in .build/test-artifacts/companion.png; it replaces
docs/companion.png when that is missing or UPDATE_DOCS_SCREENSHOT=1 (so a test run does not
dirty the work tree)."""
import os
import base64
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_companion import Companion, free_port  # noqa: E402
from test_companion import bikecompanion  # noqa: E402,F401  (fixture)

import websockets.sync.client as websockets_sync  # noqa: E402  (pinned in requirements.txt)

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART_JS = "/usr/share/javascript/chart.js/chart.min.js"

# How many pixels of a canvas are drawn (not transparent).
INKED = """(() => { const c = document.getElementById('%s'); if (!c || !c.width) return 0;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()"""


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class DevTools:
    def __init__(self, url):
        self.ws = websockets_sync.connect(url, max_size=64 * 1024 * 1024, open_timeout=15)
        self.next = 0

    def call(self, method, **params):
        self.next += 1
        mid = self.next
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.time() + 20
        while time.time() < deadline:
            m = json.loads(self.ws.recv(timeout=20))
            if m.get("id") == mid:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m.get("result", {})
        raise AssertionError(f"{method}: no answer")

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        return r.get("result", {}).get("value")

    def wait(self, expr, timeout=10.0, what=""):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what or expr}")


@pytest.fixture()
def browser():
    binary = chromium_binary()
    if not binary:
        pytest.fail("headless browser test cannot run: no chromium on PATH (Debian: apt-get install chromium; scripts/test.sh installs it as root)")
    port = free_port()
    profile = tempfile.mkdtemp(prefix="companion-chromium-")
    proc = subprocess.Popen([binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-dev-shm-usage", f"--remote-debugging-port={port}", f"--user-data-dir={profile}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        target = None
        deadline = time.time() + 30
        while time.time() < deadline and target is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                    target = pages[0]["webSocketDebuggerUrl"] if pages else None
            except OSError:
                time.sleep(0.2)
        if target is None:
            pytest.fail("chromium started but offered no DevTools page within 30 s")
        yield DevTools(target)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


def test_page_follows_and_pauses_the_ride(bikecompanion, browser, tmp_path):  # noqa: F811
    assert os.path.exists(CHART_JS), f"no {CHART_JS}: apt-get install libjs-chart.js (scripts/test.sh installs it as root)"
    c = Companion(bikecompanion, tmp_path)
    try:
        # The ride is running on the device before the phone arrives.
        assert c.device.answer("start", None).startswith("ok running")
        b = browser
        b.call("Emulation.setDeviceMetricsOverride", width=390, height=780, deviceScaleFactor=1, mobile=True)
        b.call("Page.enable")
        b.call("Page.navigate", url=f"http://127.0.0.1:{c.port}/")
        # Not paired: the pairing form. Ask for a code, read it off the (fake) unit, enter it.
        b.wait("!document.getElementById('pair').classList.contains('hidden')", what="the pairing form")
        b.eval("document.getElementById('showcode').click()")
        deadline = time.time() + 10
        codes = []
        while time.time() < deadline and not codes:
            codes = [l.split()[1] for l in c.device.received if l.startswith("pairing-code ") and l != "pairing-code clear"]
            time.sleep(0.1)
        assert codes, "the companion never asked the unit to show a code"
        b.eval(f"document.getElementById('code').value = '{codes[-1]}'; document.getElementById('sendcode').click()")
        b.wait("!document.getElementById('ride').classList.contains('hidden')", what="the ride view after pairing")

        # The timer shown is the device's, and it advances.
        b.wait("document.getElementById('state').textContent.startsWith('running')", what="state running")
        first = b.wait("(() => { const t = document.getElementById('timer').textContent; return t !== '0:00:00' && t; })()", what="a timer")
        b.wait(f"document.getElementById('timer').textContent !== '{first}'", what="the timer to advance")

        # Charts: Chart.js came from the companion itself, and both charts draw what the device said.
        assert b.eval("typeof Chart") == "function", "Chart.js loaded"
        assert b.eval("performance.getEntriesByType('resource').filter(e => e.name.endsWith('/static/chart.js')).length") == 1
        assert b.eval("performance.getEntriesByType('resource').every(e => e.name.startsWith(location.origin))"), \
            "no asset from outside the unit"
        # The fake device alternates 20 s of 180 W and 280 W of timer time (4 s of its seconds per real second).
        b.wait("(() => { const d = window.charts.live.data.datasets[0].data.map(p => p.y);"
               " return d.length >= 30 && d.includes(180) && d.includes(280); })()", timeout=20, what="both intervals in the live chart")
        live = b.eval("window.charts.live.data.datasets.map(d => d.data.map(p => [p.x, p.y]))")
        power, heart, speed = live
        assert {y for _, y in power} <= {180, 280}, "the live chart shows the device's power"
        xs = [x for x, _ in power]
        assert xs == sorted(xs) and xs[-1] - xs[0] <= 600, "timer seconds, the last ten minutes"
        assert all(abs(y - 3.6 * (7.5 + (1.5 if p == 280 else 0))) < 1e-6 for (_, y), (_, p) in zip(speed, power)), "speed in km/h"
        b.eval("loadHistory()")
        b.wait("window.lastHistory && window.lastHistory.timer_ms.length >= 20", timeout=10, what="the ride so far from /api/history")
        history = b.eval("window.lastHistory")
        assert set(history["power"]) <= {180, 280} and history["timer_ms"] == sorted(history["timer_ms"])
        ride_points = b.eval("window.charts.ride.data.datasets[0].data.length")
        assert ride_points == len(history["timer_ms"])
        assert b.eval(INKED % "c-live") > 500 and b.eval(INKED % "c-ride") > 500, "both charts drawn"

        # Pause from the page: the device's state changes, and the page shows the device's.
        b.eval("document.getElementById('b-pause').click()")
        deadline = time.time() + 10
        while time.time() < deadline and c.device.state != "paused":
            time.sleep(0.1)
        assert c.device.state == "paused" and "pause" in c.device.received
        b.wait("document.getElementById('state').textContent.startsWith('paused')", what="the page to show paused")
        b.wait("document.getElementById('msg').textContent.includes('ride paused')", what="the device's reply")
        frozen = b.eval("document.getElementById('timer').textContent")
        time.sleep(0.8)
        assert b.eval("document.getElementById('timer').textContent") == frozen, "the timer must stop while paused"

        # Log water from the page: the device records the marker.
        b.eval("document.getElementById('water').click()")
        deadline = time.time() + 10
        while time.time() < deadline and "marker water 250" not in c.device.received:
            time.sleep(0.1)
        assert "marker water 250" in c.device.received
        b.wait("document.getElementById('log').textContent.includes('water 250 ml')", what="the marker in the page's log")

        # A course from the page: a file chosen in the Courses panel is uploaded and listed (its
        # name, markup and all, as text), and tapping it asks the unit to load it.
        trk = "".join(f'<trkpt lat="{46.0 + i * 0.0005:.7f}" lon="7.0"/>' for i in range(20))
        gpx = f'<gpx version="1.1"><trk><name>&lt;b&gt;Col&lt;/b&gt;</name><trkseg>{trk}</trkseg></trk></gpx>'
        b.eval("document.getElementById('courses').open = true")
        b.eval("(() => { const t = new DataTransfer(); t.items.add(new File([" + json.dumps(gpx) + "], 'my col.gpx'));"
               " const i = document.getElementById('coursefile'); i.files = t.files;"
               " document.getElementById('courseup').click(); })()")
        b.wait("document.getElementById('coursemsg').textContent.includes('imported')", what="the upload's answer")
        b.wait("document.querySelector('#courselist button') !== null", what="the course listed")
        assert b.eval("document.querySelector('#courselist button').textContent") == "<b>Col</b> (1.1 km)"  # 19 steps of 0.0005° of latitude
        assert b.eval("document.querySelector('#courselist b')") is None, "a course's name is never markup"
        b.eval("document.querySelector('#courselist button').click()")
        deadline = time.time() + 10
        while time.time() < deadline and "course load my-col" not in c.device.received:
            time.sleep(0.1)
        assert "course load my-col" in c.device.received, c.device.received[-5:]
        b.eval("document.getElementById('courses').open = false")

        # The whole page, charts included, for docs/companion.md.
        b.call("Emulation.setDeviceMetricsOverride", width=390, height=1300, deviceScaleFactor=1, mobile=True)
        time.sleep(0.5)
        png = base64.b64decode(b.call("Page.captureScreenshot", format="png")["data"])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        artifacts = REPO / ".build" / "test-artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "companion.png").write_bytes(png)
        docs_png = REPO / "docs" / "companion.png"
        if not docs_png.exists() or os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
            docs_png.write_bytes(png)
    finally:
        c.close()
