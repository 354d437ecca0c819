"""Sensor batteries where a rider sees them: a heart-rate strap reporting 12 % (ANT+ HRM page 7)
shows in `ctl status` (per role and per paired sensor), in `bikecomputer sensors`, and as an
alert when the ride starts."""
import json
import time
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_run import HR_SENSOR, App, FakeBridge, protocol, run_dir, sensor_state, write_config  # noqa: E402,F401


class WeakStrapBridge(FakeBridge):
    """The heart-rate strap sends HRM page 7 (battery status: 12 %) with the page-change toggle
    flipping every 4 messages, as real straps do (the decoder trusts pages after a toggle)."""

    def frames(self, t, step):
        out = super().frames(t, step)
        beats = int(t * self.hr / 60)
        beat_time = int(beats * 60 / self.hr * 1024) & 0xFFFF
        toggle = 0x80 if (step // 4) % 2 else 0x00
        page = bytes([toggle | 0x07, 12, 0x00, 0x33, beat_time & 0xFF, beat_time >> 8, beats & 0xFF, self.hr])
        out[0] = protocol.data(self.now_us(), HR_SENSOR, 120, page)
        return out


def test_a_weak_strap_shows_everywhere_and_alerts_at_the_start(bikecomputer, run_dir):  # noqa: F811
    cfg = write_config(run_dir)
    app = App(bikecomputer, run_dir, cfg)
    bridge = WeakStrapBridge(run_dir / "bridge.sock")
    try:
        bridge.start()
        st = app.wait_for(lambda s: any(x["role"] == "HR" and x["battery_percent"] == 12 for x in s["sensors"]),
                          timeout=15, what="the strap's battery in ctl status")
        assert sensor_state(st, "HR") == "connected"
        paired = {p["sensor"]: p for p in st["paired"]}
        hr = next(p for k, p in paired.items() if k.startswith("ant:1234/120"))
        assert hr["battery_percent"] == 12 and hr["state"] == "connected"

        r = subprocess.run([str(bikecomputer), "sensors", "--config", str(cfg)], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        line = next(l for l in r.stdout.splitlines() if l.startswith("ant:1234/120"))
        assert "heart_rate" in line and "connected" in line and "12 % LOW" in line
        ble = next(l for l in r.stdout.splitlines() if l.startswith("ble:C0:FF:EE:00:11:22"))
        assert "power" in ble and "--" in ble
        js = json.loads(subprocess.run([str(bikecomputer), "sensors", "--config", str(cfg), "--json"],
                                       capture_output=True, text=True, timeout=10).stdout)
        assert js["device_running"] is True
        assert {"sensor": hr_id(js), "role": "heart_rate", "state": "connected", "battery_percent": 12} in js["sensors"]

        # The ride starts: the unit says the strap is weak.
        app.ctl("start")
        seen = app.wait_for(lambda s: s["state"] == "running", timeout=8, what="running")
        assert seen["state"] == "running"
        deadline = time.monotonic() + 5
        while "alert: HR BATTERY 12%" not in app.stderr() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "alert: HR BATTERY 12%" in app.stderr(), app.stderr()
    finally:
        bridge.stop()
        app.terminate()


def hr_id(js):
    return next(s["sensor"] for s in js["sensors"] if s["sensor"].startswith("ant:1234/120"))


def test_sensors_without_a_running_device_lists_them_and_says_why(bikecomputer, run_dir):  # noqa: F811
    cfg = write_config(run_dir)
    r = subprocess.run([str(bikecomputer), "sensors", "--config", str(cfg)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert "ant:1234/120" in r.stdout and "unknown" in r.stdout
    assert "is bikecomputer running?" in r.stderr
