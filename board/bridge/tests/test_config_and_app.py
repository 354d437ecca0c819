"""The paired sensors from the config file and the watch on it; the version-2 frames both ways;
the runner end to end (a process on a real socket): hello, heartbeats only while nothing else
goes out, the app's reload and search requests, a config file replaced while it runs."""
import asyncio
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from bikebridge import config, protocol
from bikebridge.bridge import Bridge

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = """# a comment
[bridge]
transport = "unix"

[[sensor]]
transport = "ble"
role = "heart_rate"
ble_address = "c0:ff:ee:00:11:22"

[[sensor]]
transport = "ant"
role = "power"
ant_device_number = 12345

[[sensor]]
transport = "ant"
role = "speed"
ant_device_number = 77
ant_device_type = 121

[[sensor]]
transport = "ble"
role = "power"
ble_address = "not an address"
"""


def test_paired_sensors_from_the_config_file(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text(CONFIG)
    paired = config.load(str(p))
    assert paired.ble == ["C0:FF:EE:00:11:22"]
    assert paired.ant == [(11, 12345, 0), (121, 77, 0)]
    p.write_text("[[sensor]\nbroken")
    with pytest.raises(config.ConfigError):
        config.load(str(p))
    with pytest.raises(config.ConfigError, match="No such file"):
        config.load(str(tmp_path / "missing.toml"))


def test_the_watch_sees_an_atomic_replace_and_an_edit_in_place(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text(CONFIG)
    seen = []
    w = config.Watch(str(p), lambda: seen.append(1))
    assert w.fd is not None, "inotify works here"
    (tmp_path / "other.toml").write_text("x")  # another file in the directory: nothing
    w.readable()
    assert seen == []
    tmp = tmp_path / ".config.toml.tmp"
    tmp.write_text(CONFIG + "\n# changed\n")
    os.replace(tmp, p)
    w.readable()
    assert seen == [1]
    with open(p, "a") as f:
        f.write("# edited\n")
    w.readable()
    assert seen == [1, 1]
    w.close()


def test_the_watch_falls_back_to_polling(tmp_path, monkeypatch):
    p = tmp_path / "config.toml"
    p.write_text(CONFIG)
    seen = []
    w = config.Watch(str(p), lambda: seen.append(1))
    w.close()
    w.poll()
    assert seen == []
    time.sleep(0.01)
    p.write_text(CONFIG + "\n")
    w.poll()
    assert seen == [1]


def test_version_2_golden_bytes():
    # Same bytes as the Swift side's FrameTests (found, scan state, app hello, scan request, reload).
    found = protocol.found(0x0102030405, protocol.BleId("C0:FF:EE:00:11:22"), 3, -60, "Crank PM")
    assert list(found) == [2, 5, 5, 4, 3, 2, 1, 0, 0, 0, 2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 0, 3, 0,
                           0xC4, 8, *b"Crank PM"]
    assert list(protocol.found(1, protocol.AntId(12345, 11, 5), 11, None, "")) == \
        [2, 5, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x39, 0x30, 11, 5, 0, 0, 0, 11, 0, 127, 0]
    assert list(protocol.scan_state(7, True, 3, 4)) == [2, 6, 7, 0, 0, 0, 0, 0, 0, 0, 1, 3, 4, 0]
    assert list(protocol.app_hello(7, version_max=2, flags=protocol.APP_TAKES_SOCKETS)) == [2, 7, 7, 0, 0, 0, 0, 0, 0, 0, 2, 1]
    pm = protocol.BleId("C0:FF:EE:00:11:22")
    assert list(protocol.notification_socket(7, pm, 0x2A63)) == [2, 10, 7, 0, 0, 0, 0, 0, 0, 0,
                                                                2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 0, 0x63, 0x2A]
    assert list(protocol.socket_returned(7, pm, 0x2A63))[:2] == [2, 11]
    assert list(protocol.scan_request(7, True, 2, 30)) == [2, 8, 7, 0, 0, 0, 0, 0, 0, 0, 1, 2, 30, 0]
    assert list(protocol.reload_request(7)) == [2, 9, 7, 0, 0, 0, 0, 0, 0, 0]
    unusable = protocol.link(7, protocol.BleId("C0:FF:EE:00:11:22"), 0, protocol.LINK_UNUSABLE)
    assert unusable[0] == 2 and unusable[20] == 3
    assert protocol.hello(7, 2, 9)[10] == 3, "the hello says this bridge speaks version 3 (issue 27: config state)"


def test_version_2_frames_parse_and_bad_ones_are_refused():
    long_name = "Ünïcödé power meter with a long name"
    f = protocol.parse(protocol.found(1, protocol.BleId("C0:FF:EE:00:11:22", True), 5, -90, long_name))
    assert f.name == "Ünïcödé power meter with a l"[:len(f.name)] and len(f.name.encode()) <= protocol.NAME_BYTES_MAX
    assert f.sensor.random and f.rssi == -90 and f.profile == 5
    for bad in (protocol.found(1, protocol.BleId("C0:FF:EE:00:11:22"), 1, 0, "x")[:-1],   # name cut short
                b"\x01" + protocol.reload_request(1)[1:],                                   # a v2 kind in v1
                protocol.scan_request(1, True, 2, 30)[:-1],
                b"\x01" + protocol.link(1, protocol.AntId(1, 120), 120, protocol.LINK_UNUSABLE)[1:]):
        with pytest.raises(protocol.ProtocolError):
            protocol.parse(bad)


def test_the_bridge_hears_the_app():
    sent = []
    bridge = Bridge(lambda f: sent.append(bytes(f)) or True, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    requests, reloads = [], []
    bridge.on_scan_request = lambda start, radios, seconds: requests.append((start, radios, seconds))
    bridge.on_reload = lambda: reloads.append(1)
    bridge.found(protocol.BleId("C0:FF:EE:00:11:22"), 1, None, "x")
    assert sent == [], "no version-2 frame before the app says it reads them"
    bridge.from_app(protocol.app_hello(1, version_max=2))
    assert bridge.app_version == 2
    bridge.from_app(protocol.scan_request(1, True, 3, 9999))
    bridge.from_app(protocol.reload_request(1))
    bridge.from_app(b"\x02\x09")  # garbage: counted
    bridge.from_app(protocol.heartbeat(1, 1))  # a bridge's kind from the app: counted
    assert requests == [(True, 3, protocol.SCAN_SECONDS_MAX)] and reloads == [1]
    assert bridge.bad["from_app"] == 2
    bridge.connected()  # a new connection: version 1 again until its hello
    assert bridge.app_version == 1 and protocol.parse(sent[-1]).kind == protocol.KIND_HELLO


def test_a_new_app_is_told_which_sensors_are_connected_and_their_batteries():
    """The app restarted: it hears the connected sensors' links and last battery levels again at
    once (a level is only notified when it changes), not those of a sensor that went away."""
    sent = []
    bridge = Bridge(lambda f: sent.append(bytes(f)) or True, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    strap, pm = protocol.BleId("C0:FF:EE:00:11:22"), protocol.BleId("C0:FF:EE:00:11:33")
    for s, pct in ((strap, 81), (pm, 64)):
        bridge.link(s, 0, protocol.LINK_CONNECTED)
        bridge.notify(s, 0x2A19, bytes([pct]))
    bridge.link(pm, 0, protocol.LINK_DISCONNECTED)
    sent.clear()
    bridge.connected()
    frames = [protocol.parse(f) for f in sent]
    assert [f.kind for f in frames] == [protocol.KIND_HELLO, protocol.KIND_LINK, protocol.KIND_DATA]
    assert frames[1].sensor == strap and frames[1].link == protocol.LINK_CONNECTED
    assert frames[2].sensor == strap and frames[2].profile == 0x2A19 and bytes(frames[2].payload) == bytes([81])


def test_the_heartbeat_is_pushed_back_while_frames_flow():
    rearms = []
    bridge = Bridge(lambda f: True, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.rearm = lambda: rearms.append(1)
    framer = bridge.framer(protocol.BleId("C0:FF:EE:00:11:22"), 0x2A37)
    bridge.push_after = time.monotonic() + 60
    bridge.forward(framer, framer.put(b"\x00\x50"))
    assert rearms == []
    bridge.push_after = time.monotonic() - 1
    bridge.forward(framer, framer.put(b"\x00\x51"))
    assert rearms == [1]


class App:
    """The app's end of the bridge socket."""

    def __init__(self, path):
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.server.bind(path)
        self.server.listen(1)
        self.server.settimeout(10)
        self.conn = None

    def accept(self):
        self.conn, _ = self.server.accept()
        self.conn.settimeout(10)

    def frames(self, seconds):
        out = []
        deadline = time.monotonic() + seconds
        self.conn.settimeout(0.1)
        while time.monotonic() < deadline:
            try:
                out.append(protocol.parse(self.conn.recv(256)))
            except socket.timeout:
                pass
        return out

    def close(self):
        if self.conn:
            self.conn.close()
        self.server.close()


def test_the_bridge_process_end_to_end(tmp_path):
    """python -m bikebridge --config (radios off): hello v2, one heartbeat a second while idle,
    the app's hello and search request answered (no radio: the search ends at once), the
    config file replaced and read again, SIGUSR1 writes the counters."""
    sock = str(tmp_path / "bridge.sock")
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    app = App(sock)
    stats = tmp_path / "stats.json"
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    proc = subprocess.Popen([sys.executable, "-m", "bikebridge", "--socket", sock, "--config", str(cfg), "--no-ble",
                             "--no-ant", "--stats", str(stats), "-v"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        app.accept()
        first = app.frames(2.5)
        assert first[0].kind == protocol.KIND_HELLO and first[0].protocol_version_max == protocol.VERSION_MAX
        beats = [f for f in first if f.kind == protocol.KIND_HEARTBEAT]
        assert 1 <= len(beats) <= 3, [f.kind for f in first]
        app.conn.send(protocol.app_hello(1))
        app.conn.send(protocol.scan_request(1, True, protocol.RADIO_BLE, 5))
        got = app.frames(1.0)
        scans = [f for f in got if f.kind == protocol.KIND_SCAN]
        assert scans and not scans[0].scanning, "no radio to search with: the search is over at once"
        tmp = tmp_path / ".config.tmp"
        tmp.write_text(CONFIG.replace("c0:ff:ee:00:11:22", "c0:ff:ee:00:11:33"))
        os.replace(tmp, cfg)
        time.sleep(0.5)
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while not stats.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        counters = json.loads(stats.read_text())
        assert counters["app_version"] == protocol.VERSION_MAX and counters["dropped"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        app.close()
    assert proc.returncode == 0, err
    assert "C0:FF:EE:00:11:22" in err and "C0:FF:EE:00:11:33" in err, err  # read, then read again


def test_without_a_system_bus_the_config_is_still_read_and_watched(tmp_path):
    """A board without D-Bus or Bluetooth (or before they are up): BLE waits for the bus, but the
    paired sensors are read and the config file's watch works at once (an ANT+ pairing from the
    unit must reach the bridge); the missing bus is logged once, not every 10 s. Before the fix
    the runner waited for the bus before it read the file: nothing was ever read."""
    import dbus_fast  # noqa: F401  (the bridge's own requirement: a missing one fails here, with its name)
    sock = str(tmp_path / "bridge.sock")
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    app = App(sock)
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={tmp_path}/no-bus")
    proc = subprocess.Popen([sys.executable, "-m", "bikebridge", "--socket", sock, "--config", str(cfg), "--no-ant", "-v"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        app.accept()
        app.frames(1.5)
        tmp = tmp_path / ".config.tmp"
        tmp.write_text(CONFIG.replace("c0:ff:ee:00:11:22", "c0:ff:ee:00:11:33"))
        os.replace(tmp, cfg)
        app.frames(1.0)
        # A search asked for now cannot use BLE: it ends at once instead of waiting for BlueZ.
        app.conn.send(protocol.app_hello(1))
        app.conn.send(protocol.scan_request(1, True, protocol.RADIO_BLE, 5))
        scans = [f for f in app.frames(7.0) if f.kind == protocol.KIND_SCAN]
        assert scans and not scans[-1].scanning, "no BlueZ to search with: the search ends (after 5 s)"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # (before the fix it never got past waiting for the bus, SIGTERM included)
            _, err = proc.communicate()
            err = "did not stop on SIGTERM\n" + err
        app.close()
    assert proc.returncode == 0, err
    assert "no BLE search" in err, err
    assert "paired sensors: BLE ['C0:FF:EE:00:11:22']" in err, err
    assert "paired sensors: BLE ['C0:FF:EE:00:11:33']" in err, err
    assert err.count("no D-Bus system bus") == 1, err
