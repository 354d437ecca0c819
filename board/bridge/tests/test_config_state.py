"""The config file's state (protocol version 3, issue 27): a config the bridge cannot read keeps
the sensors it had, is logged with its line, and the app hears it (and hears it again after a
restart); an app of version 2 never sees the new kind. The bridge's reader is tomllib with the
byte-order mark skipped, the same grammar as the app's (Tests/oracle/test_toml_differential.py)."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from bikebridge import config, protocol
from bikebridge.bridge import Bridge

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_config_and_app import App  # noqa: E402

GOOD = """[[sensor]]
transport = "ble"
role = "heart_rate"
ble_address = "C0:FF:EE:00:11:22"
"""
# What a bike computer before issue 27 wrote when it paired a strap whose BLE name held a DEL.
BAD = GOOD + """
[[sensor]]
transport = "ble"
role = "power"
ble_address = "C0:FF:EE:00:11:33"
name = "PM\x7f"
"""


def test_config_state_golden_bytes_match_the_swift_layout():
    # Same bytes as ConfigStateFrameTests.configStateFrameByteLayout in Swift.
    b = protocol.config_state(12, False, 7, "DEL!")
    assert list(b) == [3, 12, 12, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 4] + list(b"DEL!")
    f = protocol.parse(b)
    assert f.kind == protocol.KIND_CONFIG_STATE and not f.readable and f.line == 7 and f.note == "DEL!"
    assert len(protocol.config_state(0, False, 1, "é" * 40)) == 14 + 64
    with pytest.raises(protocol.ProtocolError):
        protocol.parse(bytes([2]) + b[1:])  # kind 12 needs version 3


def test_the_reason_and_line_of_an_unreadable_file(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text(BAD)
    with pytest.raises(config.ConfigError) as e:
        config.load(str(p))
    assert e.value.line == 10 and "x7f" in e.value.why and str(p) in str(e.value)
    p.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert config.load(str(p)).ble == ["C0:FF:EE:00:11:22"], "a byte-order mark is skipped, as the app does"
    p.write_bytes(GOOD.encode() + b"# caf\xe9\n")
    with pytest.raises(config.ConfigError) as e:
        config.load(str(p))
    assert e.value.line == 5 and "UTF-8" in e.value.why


def test_only_an_app_of_version_3_hears_it_and_again_after_its_hello():
    sent = []
    bridge = Bridge(lambda f: sent.append(bytes(f)) or True, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.from_app(protocol.app_hello(1, version_max=2))
    bridge.config_state(False, 10, "Illegal character")
    assert sent == [], "a version-2 app never gets kind 12"
    bridge.connected()
    sent.clear()
    bridge.from_app(protocol.app_hello(1, version_max=3))
    frames = [protocol.parse(f) for f in sent]
    assert [(f.kind, f.readable, f.line, f.note) for f in frames] == [(protocol.KIND_CONFIG_STATE, False, 10, "Illegal character")]
    sent.clear()
    bridge.config_state(False, 10, "Illegal character")
    assert sent == [], "said when it changes, not on every failed read"
    bridge.config_state(True)
    assert [protocol.parse(f).readable for f in sent] == [True]


def test_the_bridge_process_keeps_its_sensors_and_tells_the_app(tmp_path):
    sock = str(tmp_path / "bridge.sock")
    cfg = tmp_path / "config.toml"
    cfg.write_text(GOOD)
    app = App(sock)
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    proc = subprocess.Popen([sys.executable, "-m", "bikebridge", "--socket", sock, "--config", str(cfg), "--no-ble",
                             "--no-ant", "-v"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        app.accept()
        hello = app.frames(1.0)[0]
        assert hello.kind == protocol.KIND_HELLO and hello.protocol_version_max == 3
        app.conn.send(protocol.app_hello(1, version_max=3))
        app.frames(0.5)

        def replace(text):
            tmp = tmp_path / ".config.tmp"
            tmp.write_text(text)
            os.replace(tmp, cfg)

        replace(BAD)
        states = [f for f in app.frames(1.5) if f.kind == protocol.KIND_CONFIG_STATE]
        assert [(s.readable, s.line) for s in states] == [(False, 10)], states
        assert "x7f" in states[0].note
        # A restarted app hears it at once after its hello.
        app.conn.close()
        app.accept()
        app.frames(0.3)
        app.conn.send(protocol.app_hello(1, version_max=3))
        again = [f for f in app.frames(1.5) if f.kind == protocol.KIND_CONFIG_STATE]
        assert [(s.readable, s.line) for s in again] == [(False, 10)], again
        replace(GOOD.replace("11:22", "11:44"))
        fixed = [f for f in app.frames(1.5) if f.kind == protocol.KIND_CONFIG_STATE]
        assert [s.readable for s in fixed] == [True]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        app.close()
    assert proc.returncode == 0, err
    assert "keeping the ones before" in err and "line 10" in err, err
    # Read at start, kept through the bad file (never the half of it tomllib could not read), then
    # the fixed file's.
    assert "paired sensors: BLE ['C0:FF:EE:00:11:22']" in err and "paired sensors: BLE ['C0:FF:EE:00:11:44']" in err, err
    assert "11:33" not in err.split("keeping the ones before")[1].split("can be read again")[0], err
