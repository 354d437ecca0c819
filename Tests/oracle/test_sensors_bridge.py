"""The Python bridge (board/bridge) against the app: real processes talking over the Unix socket
and a pseudo-terminal to `bikecomputer decode --socket/--serial`. The bridge's own tests
(board/bridge/tests: framing, replay, faked radios) are a stage of scripts/test.sh of their own
(they ran here too, a second time: 29 s of one oracle worker's time)."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import tty

REPO = pathlib.Path(__file__).resolve().parents[2]
BRIDGE = REPO / "board" / "bridge"
RECORDING = BRIDGE / "tests" / "recordings" / "ride.jsonl"
sys.path.insert(0, str(BRIDGE))

from bikebridge import protocol, replay  # noqa: E402


def check_recording_decoded(lines):
    data = [l for l in lines if l.get("kind") == "data"]
    assert len(data) == 8
    assert not [l for l in lines if "error" in l]
    hr = [l["heart_rate_bpm"] for l in data if l["profile"] == "ant_heart_rate_120"]
    assert hr == [72, 72, 73]
    power = [l["power_w"] for l in data if l["profile"] == "ble_cycling_power_2a63"]
    assert power == [200, 210, 220]
    cadence = [l.get("cadence_rpm") for l in data if l["profile"] == "ble_cycling_power_2a63"]
    assert cadence == [None, 120, 120]
    rr = [l.get("rr_intervals_s") for l in data if l["profile"] == "ant_heart_rate_120"]
    assert rr[2] == [round(515 / 1024, 6)]
    links = [l["state"] for l in lines if l.get("kind") == "link"]
    assert links == ["connected", "disconnected"]


def test_python_bridge_process_to_app_socket(bikecomputer):
    path = tempfile.mktemp(prefix="bikesensors-", suffix=".sock")
    app = subprocess.Popen([str(bikecomputer), "decode", "--socket", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if os.path.exists(path):
                break
            time.sleep(0.02)
        assert os.path.exists(path), "bikecomputer decode --socket did not create its socket"
        bridge = subprocess.run([sys.executable, "-m", "bikebridge", "--socket", path, "--replay", str(RECORDING)],
                                cwd=BRIDGE, capture_output=True, text=True, timeout=60)
        assert bridge.returncode == 0, bridge.stderr
        out, err = app.communicate(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
    assert app.returncode == 0, err
    lines = [json.loads(l) for l in out.splitlines()]
    assert lines[0]["kind"] == "hello"
    check_recording_decoded(lines)


def test_python_framing_over_a_pty_to_app_serial(bikecomputer):
    controller, terminal = os.openpty()
    tty.setraw(terminal)  # raw before any byte is written, however late the app opens the tty
    path = os.ttyname(terminal)
    frames = [protocol.hello(1, 3, 9)] + list(replay.frames(RECORDING.read_text().splitlines()))
    app = subprocess.Popen([str(bikecomputer), "decode", "--serial", path, "--count", str(len(frames))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        stream = b"\x13\x37\x00"  # line noise first: the app must resynchronise
        for i, f in enumerate(frames):
            stream += protocol.serial_record(f)
            if i == 4:
                stream += b"\x55\x55\x55\x00"
        os.write(controller, stream)
        out, err = app.communicate(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
        os.close(controller)
        os.close(terminal)
    assert app.returncode == 0, err
    lines = [json.loads(l) for l in out.splitlines()]
    errors = [l for l in lines if set(l) == {"error"}]
    assert errors and all("serial framing errors" in e["error"] for e in errors)
    check_recording_decoded([l for l in lines if set(l) != {"error"}])


def test_bridge_kinds_are_the_apps_sensor_vocabulary(bikecomputer):
    """The bridge's table of sensor kinds (bikebridge/kinds.py) is the app's SensorKind: the same
    kinds in the same order, ANT+ types and periods, BLE services, found bits and characteristics.
    A kind added to one and not the other fails here."""
    from bikebridge import kinds
    r = subprocess.run([str(bikecomputer), "sensors", "kinds"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    app = json.loads(r.stdout)
    assert [k["kind"] for k in app] == [k.name for k in kinds.KINDS]
    assert app == kinds.as_json()
