"""The bridge's framing, tested without radios: golden bytes shared with the Swift tests, the
serial framing's resynchronisation, both transports, recorded notifications, lazy radio imports."""
import os
import pathlib
import random
import socket
import subprocess
import sys
import tempfile

import pytest

from bikebridge import protocol, replay
from bikebridge.bridge import Bridge
from bikebridge.transport import SerialTransport, SocketTransport

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
RECORDING = HERE / "recordings" / "ride.jsonl"
SWIFT_CORPUS = REPO / "Tests" / "SensorsTests" / "Corpus" / "python-bridge-stream.hex"

HRM = protocol.AntId(0x1234, 120, 1)
PM = protocol.BleId("C0:FF:EE:00:11:22", random=True)


def test_data_frame_golden_bytes_match_the_swift_layout():
    # Same frame and bytes as FrameTests.dataFrameByteLayout in Swift.
    b = protocol.data(0x0102030405, HRM, 120, bytes.fromhex("04ff00fe00010748"))
    assert list(b) == [1, 3, 5, 4, 3, 2, 1, 0, 0, 0, 1, 0x34, 0x12, 120, 1, 0, 0, 0, 120, 0, 8,
                       4, 0xff, 0, 0xfe, 0, 1, 7, 0x48]
    link = protocol.link(7, PM, 0x2A63, protocol.LINK_CONNECTED)
    assert list(link[10:18]) == [2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 1]


def test_round_trip_every_kind():
    frames = [protocol.hello(8, 3, 0xDEADBEEF, version_max=1), protocol.heartbeat(9, 42),
              protocol.data(10, PM, 0x2A63, bytes.fromhex("0000fa00")),
              protocol.link(11, HRM, 120, protocol.LINK_DISCONNECTED)]
    parsed = [protocol.parse(f) for f in frames]
    assert parsed[0].bridge_id == 0xDEADBEEF and parsed[0].radios == 3
    assert parsed[1].sequence == 42
    assert parsed[2].sensor == protocol.BleId("C0:FF:EE:00:11:22", True) and parsed[2].payload == bytes.fromhex("0000fa00")
    assert parsed[3].sensor == HRM and parsed[3].link == protocol.LINK_DISCONNECTED
    with pytest.raises(protocol.ProtocolError):
        protocol.parse(frames[2][:-1])
    with pytest.raises(protocol.ProtocolError):
        protocol.parse(bytes([protocol.VERSION_MAX + 1]) + frames[1][1:])  # a version this bridge does not speak


def test_crc_check_value():
    assert protocol.crc16(b"123456789") == 0x29B1


def test_long_payload_is_cut_to_the_app_limit():
    f = protocol.parse(protocol.data(0, PM, 0x2A37, bytes(range(100))))
    assert len(f.payload) == protocol.PAYLOAD_BYTES_MAX


def test_serial_resynchronises_after_garbage():
    rng = random.Random(5)
    frames = [protocol.data(i, PM, 0x2A37, bytes(rng.randrange(256) for _ in range(rng.randrange(0, 65))))
              for i in range(200)]
    stream = bytearray(b"\x13\x37\x00")
    for i, f in enumerate(frames):
        stream += protocol.serial_record(f)
        if i % 9 == 4:
            stream += bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 120))) + b"\x00"
    d = protocol.SerialDeframer()
    out = []
    i = 0
    while i < len(stream):
        n = rng.randrange(1, 50)
        out += list(d.feed(bytes(stream[i:i + n])))
        i += n
    assert [protocol.parse(f) for f in frames] == out
    assert d.errors >= 22


def test_cobs_never_emits_zero_and_round_trips():
    rng = random.Random(9)
    for _ in range(500):
        b = bytes(rng.choice([0, 0, rng.randrange(256)]) for _ in range(rng.randrange(0, 300)))
        e = protocol.cobs_encode(b)
        assert 0 not in e
        assert protocol.cobs_decode(e) == b


def test_replay_of_recorded_notifications():
    frames = [protocol.parse(f) for f in replay.frames(RECORDING.read_text().splitlines())]
    kinds = [f.kind for f in frames]
    assert kinds.count(protocol.KIND_DATA) == 8 and kinds.count(protocol.KIND_LINK) == 2
    assert frames[3].sensor == protocol.AntId(4321, 120, 1) and frames[3].profile == 120
    assert frames[3].payload == bytes.fromhex("04ff00fe00010748")
    assert frames[4].profile == 0x2A63 and frames[4].time_us == 260_000
    with pytest.raises(ValueError):
        list(replay.frames(["{not json"]))


def test_serial_transport_over_a_pty():
    controller, terminal = os.openpty()
    try:
        t = SerialTransport(os.ttyname(terminal))
        bridge = Bridge(t.send, protocol.RADIO_BLE, clock=lambda: 1, bridge_id=7)
        bridge.hello()
        for f in replay.frames(RECORDING.read_text().splitlines()):
            bridge.send(f)
        got = []
        d = protocol.SerialDeframer()
        os.set_blocking(controller, False)
        while len(got) < 11:
            try:
                got += list(d.feed(os.read(controller, 4096)))
            except BlockingIOError:
                break
        assert len(got) == 11 and got[0].kind == protocol.KIND_HELLO and got[0].bridge_id == 7
        assert d.errors == 0
        t.close()
    finally:
        os.close(controller)
        os.close(terminal)


def test_socket_transport_reconnects_and_says_hello_again():
    path = tempfile.mktemp(prefix="bikebridge-", suffix=".sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen(1)
    try:
        hellos = []
        t = SocketTransport(path, on_connect=lambda tr: (hellos.append(1), tr.sock.send(protocol.hello(0, 2, 1))))
        bridge = Bridge(t.send, protocol.RADIO_BLE, clock=lambda: 5, bridge_id=1)
        bridge.notify(PM, 0x2A37, b"\x00\x48")
        conn, _ = server.accept()
        assert protocol.parse(conn.recv(256)).kind == protocol.KIND_HELLO
        assert protocol.parse(conn.recv(256)).payload == b"\x00\x48"
        conn.close()  # the app restarts
        bridge.notify(PM, 0x2A37, b"\x00\x49")  # lost: the peer is gone
        bridge.notify(PM, 0x2A37, b"\x00\x4a")
        conn, _ = server.accept()
        frames = [protocol.parse(conn.recv(256)) for _ in range(2)]
        assert frames[0].kind == protocol.KIND_HELLO and frames[1].payload == b"\x00\x4a"
        assert len(hellos) == 2 and bridge.dropped >= 1
        conn.close()
        t.close()
    finally:
        server.close()
        os.unlink(path)


def test_radio_modules_import_without_loading_dbus_or_openant():
    code = ("import sys; sys.path.insert(0, %r); import bikebridge.ble, bikebridge.ant, bikebridge.__main__; "
            "print('dbus_fast' in sys.modules, 'openant' in sys.modules)") % str(HERE.parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_ant_extended_channel_id():
    from bikebridge.ant import channel_id_from
    ext = [0x04, 0xff, 0, 0xfe, 0, 1, 7, 0x48, 0x80, 0xE1, 0x10, 120, 1]
    assert channel_id_from(ext, protocol.AntId(0, 120, 0)) == protocol.AntId(4321, 120, 1)
    assert channel_id_from(ext[:8], protocol.AntId(0, 120, 0)) == protocol.AntId(0, 120, 0)


def stream_for_swift() -> bytes:
    bridge_frames = [protocol.hello(1, 3, 0xB1DE, version_max=1)]
    bridge_frames += list(replay.frames(RECORDING.read_text().splitlines()))
    bridge_frames.append(protocol.heartbeat(2_000_000, 1))
    out = b"\x00" + b"".join(protocol.serial_record(f) for f in bridge_frames)
    return out


def test_swift_corpus_stream_is_what_the_bridge_writes():
    # Tests/SensorsTests reads this file and decodes it with the Swift deframer: the two
    # implementations agree byte for byte. Regenerate with BIKEBRIDGE_WRITE_CORPUS=1.
    text = stream_for_swift().hex() + "\n"
    if os.environ.get("BIKEBRIDGE_WRITE_CORPUS"):
        SWIFT_CORPUS.write_text(text)
    assert SWIFT_CORPUS.read_text() == text


def test_paced_replay_sends_each_record_at_its_time_stamped_now_and_repeats():
    lines = ['{"t_ms": 0, "ant": [1234, 120, 1], "hex": "04ff00fe00010748"}',
             '{"t_ms": 500, "ant": [1234, 120, 1], "hex": "04ff00fe00020748"}']
    now = [1_000_000]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += int(s * 1e6)

    out = []
    for f in replay.paced(lines, True, lambda: now[0], sleep):
        out.append(protocol.parse(f))
        if len(out) == 5:
            break
    stamps = [f.time_us for f in out]
    span = (500 + replay.REPEAT_GAP_MS) * 1000
    assert stamps == [1_000_000, 1_500_000, 1_000_000 + span, 1_500_000 + span, 1_000_000 + 2 * span]
    assert all(s > 0 for s in slept)
    once = list(replay.paced(lines, False, lambda: now[0], sleep))
    assert len(once) == 2, "without repeat: one pass"
