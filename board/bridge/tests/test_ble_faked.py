"""The BLE glue (ble.py over bluez.py) against a BlueZ stand-in (fake_bluez.py): raw values
forwarded with their link states, reconnection, BlueZ 5.66's missing "Connected" signal, the
battery from Battery1, bad values counted, a device without the measurement, bluetoothd going
away and coming back, searches. The real BlueZ is in Tests/vm/test_vm_ble.py."""
import asyncio

import pytest

from bikebridge import ble, protocol
from bikebridge.bridge import Bridge
from fake_bluez import FakeBlueZ, FakeDevice

HR_ADDR, PM_ADDR, CSC_ADDR, BROKEN_ADDR, PHONE_ADDR = (
    "00:AA:01:01:00:01", "00:AA:01:02:00:02", "00:AA:01:03:00:03", "00:AA:01:04:00:04", "00:AA:01:05:00:05")


def devices():
    return [
        FakeDevice(HR_ADDR, "Strap", [0x180D, 0x180F], {0x2A37: (["notify"], b""), 0x2A38: (["read"], b"\x01")}, battery=81),
        FakeDevice(PM_ADDR, "Crank PM", [0x1818], {0x2A63: (["notify"], b""), 0x2A65: (["read"], bytes.fromhex("0c000000"))},
                   battery=64, rssi=-71),
        FakeDevice(CSC_ADDR, "Speed/Cad", [0x1816], {0x2A5B: (["notify"], b"")}, rssi=127),
        FakeDevice(BROKEN_ADDR, "Broken", [0x1818], {0x2A65: (["read"], b"\x08\x00\x00\x00")}),
        FakeDevice(PHONE_ADDR, "Phone", [0x1234], {}),
    ]


class Recorder:
    def __init__(self):
        self.frames = []

    def __call__(self, frame) -> bool:
        self.frames.append(protocol.parse(bytes(frame)))
        return True

    def of(self, kind, sensor=None, profile=None):
        return [f for f in self.frames if f.kind == kind and (sensor is None or f.sensor == sensor)
                and (profile is None or f.profile == profile)]

    def links(self, address):
        return [f.link for f in self.of(protocol.KIND_LINK, protocol.BleId(address))]


async def until(predicate, timeout=3.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def setup(monkeypatch, app_version=2):
    monkeypatch.setattr(ble, "RETRY_S", 0.02)
    monkeypatch.setattr(ble, "RETRY_MAX_S", 0.05)
    monkeypatch.setattr(ble, "UNUSABLE_RETRY_S", 0.2)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.app_version = app_version
    fake = FakeBlueZ(devices())
    radio = ble.BleRadio(bridge, "hci0", bluez=fake)
    return rec, bridge, fake, radio


def test_notifications_are_forwarded_raw_with_links_and_battery(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)

    async def ride():
        await radio.start()
        radio.set_paired([HR_ADDR.lower(), PM_ADDR])
        await until(lambda: HR_ADDR in fake.devices_model and 0x2A37 in fake.devices_model[HR_ADDR].sockets
                    and 0x2A63 in fake.devices_model[PM_ADDR].sockets)
        values = [bytes.fromhex("16880004"), bytes.fromhex("1689ff03fe03"), bytes.fromhex("068a")]
        for v in values:
            fake.notify(HR_ADDR, 0x2A37, v)
        fake.notify(PM_ADDR, 0x2A63, bytes.fromhex("3000c800"))  # flags announce wheel+crank: truncated
        fake.set_battery(HR_ADDR, 42)
        await until(lambda: len(rec.of(protocol.KIND_DATA, protocol.BleId(HR_ADDR), 0x2A37)) == 3
                    and rec.of(protocol.KIND_DATA, protocol.BleId(PM_ADDR), 0x2A63))
        await until(lambda: len(rec.of(protocol.KIND_DATA, protocol.BleId(HR_ADDR), 0x2A19)) == 2)
        return values

    values = asyncio.run(ride())
    hr = protocol.BleId(HR_ADDR)
    assert [f.payload for f in rec.of(protocol.KIND_DATA, hr, 0x2A37)] == values
    assert [f.payload for f in rec.of(protocol.KIND_DATA, hr, 0x2A19)] == [b"\x51", b"\x2a"]  # 81, then 42
    assert rec.links(HR_ADDR) == [protocol.LINK_SEARCHING, protocol.LINK_CONNECTED]
    assert [f.payload for f in rec.of(protocol.KIND_DATA, protocol.BleId(PM_ADDR), 0x2A65)] == [bytes.fromhex("0c000000")]
    assert bridge.bad == {"malformed": 1}, "the truncated power value is counted, and still forwarded"
    assert HR_ADDR in fake.trusted and PM_ADDR in fake.trusted
    stats = bridge.stats()["notifications"]
    assert stats[f"{HR_ADDR}/2a37"] == 3 and stats[f"{PM_ADDR}/2a63"] == 1


def test_a_sensor_that_drops_out_is_reported_and_reconnected_without_discovery(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)

    async def ride():
        await radio.start()
        radio.set_paired([HR_ADDR])
        d = fake.devices_model[HR_ADDR]
        await until(lambda: 0x2A37 in d.sockets)
        discoveries = [c for c in fake.calls if c[1] == "Connect"]
        d.advertising = False
        fake.drop_connection(d)
        await until(lambda: protocol.LINK_DISCONNECTED in rec.links(HR_ADDR))
        await asyncio.sleep(0.2)  # out of range: Connect keeps failing
        assert not d.connected and d.connects >= 2
        d.advertising = True
        await until(lambda: 0x2A37 in d.sockets)
        fake.notify(HR_ADDR, 0x2A37, b"\x06\x50")
        await until(lambda: rec.of(protocol.KIND_DATA, protocol.BleId(HR_ADDR), 0x2A37))
        return discoveries

    asyncio.run(ride())
    links = rec.links(HR_ADDR)
    assert links[:3] == [protocol.LINK_SEARCHING, protocol.LINK_CONNECTED, protocol.LINK_DISCONNECTED]
    assert links[-1] == protocol.LINK_CONNECTED
    assert radio.sensors[HR_ADDR].sessions == 2


def test_a_device_without_the_measurement_is_unusable_counted_and_retried(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)

    async def ride():
        await radio.start()
        radio.set_paired([BROKEN_ADDR])
        await until(lambda: bridge.bad.get("no_measurement", 0) >= 2, timeout=3)

    asyncio.run(ride())
    assert protocol.LINK_UNUSABLE in rec.links(BROKEN_ADDR)
    assert not fake.devices_model[BROKEN_ADDR].connected, "disconnected again"


def test_an_app_of_version_1_hears_disconnected_for_an_unusable_device(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch, app_version=1)

    async def ride():
        await radio.start()
        radio.set_paired([BROKEN_ADDR])
        await until(lambda: bridge.bad.get("no_measurement", 0) >= 1)

    asyncio.run(ride())
    assert protocol.LINK_UNUSABLE not in rec.links(BROKEN_ADDR)
    assert protocol.LINK_DISCONNECTED in rec.links(BROKEN_ADDR)
    assert all(f.version == 1 for f in rec.frames), "nothing an app of version 1 cannot read"


def test_bluetoothd_going_away_and_coming_back(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)

    async def ride():
        await radio.start()
        radio.set_paired([HR_ADDR, PM_ADDR])
        await until(lambda: all(0x2A37 in fake.devices_model[HR_ADDR].sockets for _ in [0])
                    and 0x2A63 in fake.devices_model[PM_ADDR].sockets)
        fake.bluetoothd_stops()
        await until(lambda: rec.links(HR_ADDR)[-1] == protocol.LINK_DISCONNECTED
                    and rec.links(PM_ADDR)[-1] == protocol.LINK_DISCONNECTED)
        await asyncio.sleep(0.1)
        await fake.bluetoothd_starts()
        await until(lambda: 0x2A37 in fake.devices_model[HR_ADDR].sockets and 0x2A63 in fake.devices_model[PM_ADDR].sockets)
        fake.notify(PM_ADDR, 0x2A63, bytes.fromhex("0000fa00"))
        await until(lambda: rec.of(protocol.KIND_DATA, protocol.BleId(PM_ADDR), 0x2A63))

    asyncio.run(ride())
    assert rec.links(HR_ADDR)[-1] == protocol.LINK_CONNECTED
    assert radio.sensors[PM_ADDR].sessions == 2


def test_forgetting_a_sensor_disconnects_and_removes_it(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)

    async def ride():
        await radio.start()
        radio.set_paired([HR_ADDR, PM_ADDR])
        await until(lambda: 0x2A63 in fake.devices_model[PM_ADDR].sockets and 0x2A37 in fake.devices_model[HR_ADDR].sockets)
        radio.set_paired([HR_ADDR])
        await until(lambda: rec.links(PM_ADDR)[-1] == protocol.LINK_DISCONNECTED)
        await until(lambda: ("/org/bluez/hci0", "RemoveDevice") in fake.calls)

    asyncio.run(ride())
    assert set(radio.sensors) == {HR_ADDR}


def test_a_search_reports_the_sensors_around_once_each(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch)
    monkeypatch.setattr(ble, "FOUND_REPORT_S", 60.0)

    async def ride():
        await radio.start()
        radio.search(1)
        await until(lambda: rec.of(protocol.KIND_SCAN) and not rec.of(protocol.KIND_SCAN)[-1].scanning, timeout=3)

    asyncio.run(ride())
    found = {f.sensor.address: f for f in rec.of(protocol.KIND_FOUND)}
    assert set(found) == {HR_ADDR, PM_ADDR, CSC_ADDR, BROKEN_ADDR}, "the phone advertises no cycling service"
    assert found[HR_ADDR].profile == protocol.SERVICE_HEART_RATE and found[HR_ADDR].name == "Strap"
    assert found[PM_ADDR].profile == protocol.SERVICE_CYCLING_POWER and found[PM_ADDR].rssi == -71
    assert found[CSC_ADDR].profile == protocol.SERVICE_SPEED_CADENCE and found[CSC_ADDR].rssi is None  # 127: unknown
    assert len(rec.of(protocol.KIND_FOUND)) == 4
    scans = rec.of(protocol.KIND_SCAN)
    assert [s.scanning for s in scans] == [True, False] and scans[-1].found == 4
    assert fake.discovering == 0, "discovery stopped after the search"


def test_an_app_of_version_1_gets_no_search_frames(monkeypatch):
    rec, bridge, fake, radio = setup(monkeypatch, app_version=1)

    async def ride():
        await radio.start()
        radio.search(1)
        await asyncio.sleep(1.2)

    asyncio.run(ride())
    assert not rec.of(protocol.KIND_FOUND) and not rec.of(protocol.KIND_SCAN)


@pytest.mark.parametrize("value, why", [
    (b"", "empty"), (b"\x17\x90", "truncated"), (bytes.fromhex("16880004ff"), "whole u16"),
])
def test_malformed_heart_rate_values_are_named(value, why):
    from bikebridge.bridge import check_value
    assert why in check_value(0x2A37, value)


def test_well_formed_values_pass_the_check():
    from bikebridge.bridge import check_value
    assert check_value(0x2A37, bytes.fromhex("1688000400050006")) is None
    assert check_value(0x2A5B, bytes.fromhex("0301000000000401000200")) is None
    assert check_value(0x2A63, bytes.fromhex("3000c80001000000000004000800")) is None
    assert check_value(0x2A63, bytes.fromhex("0000c800")) is None
    assert check_value(0x2A19, b"\x50") is None
    assert "bytes where" in check_value(0x2A5B, bytes.fromhex("0201000200ff"))


def test_an_oversize_value_is_cut_to_the_protocol_limit_and_counted():
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    framer = bridge.framer(protocol.BleId(HR_ADDR), 0x2A37)
    n = framer.put(bytes(range(100)))
    bridge.forward(framer, 100)  # the socket said 100 bytes (MSG_TRUNC); 64 fit the buffer
    assert n == 64 and rec.frames[-1].payload == bytes(range(64)) and bridge.bad["oversize"] == 1


class AppEnd:
    """The app's end of a SOCK_SEQPACKET pair: frames, and the sockets handed over."""

    def __init__(self):
        import socket as sk
        self.sk = sk
        self.ours, self.theirs = sk.socketpair(sk.AF_UNIX, sk.SOCK_SEQPACKET)
        self.ours.setblocking(False)
        self.theirs.setblocking(False)
        self.frames, self.sockets = [], {}

    def send(self, frame) -> bool:
        self.ours.send(bytes(frame))
        return True

    def send_fd(self, frame, fd) -> bool:
        import array
        self.ours.sendmsg([bytes(frame)], [(self.sk.SOL_SOCKET, self.sk.SCM_RIGHTS, array.array("i", [fd]))])
        return True

    def drain(self):
        import array
        while True:
            fds = array.array("i")
            try:
                data, anc, _, _ = self.theirs.recvmsg(256, self.sk.CMSG_SPACE(4))
            except BlockingIOError:
                return
            for level, kind, payload in anc:
                fds.frombytes(payload[:4])
            f = protocol.parse(data)
            self.frames.append(f)
            if f.kind == protocol.KIND_SOCKET:
                s = self.sk.socket(fileno=fds[0])
                s.setblocking(False)
                self.sockets[(f.sensor, f.profile)] = s


def test_an_app_that_reads_the_sockets_itself_gets_them_and_the_bridge_steps_aside(monkeypatch):
    monkeypatch.setattr(ble, "RETRY_S", 0.02)
    app = AppEnd()
    bridge = Bridge(app.send, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.send_fd = app.send_fd
    fake = FakeBlueZ(devices())
    radio = ble.BleRadio(bridge, "hci0", bluez=fake)
    hr = protocol.BleId(HR_ADDR)

    async def ride():
        await radio.start()
        radio.set_paired([HR_ADDR])
        await until(lambda: 0x2A37 in fake.devices_model[HR_ADDR].sockets)
        fake.notify(HR_ADDR, 0x2A37, b"\x06\x50")  # before the app takes it: forwarded as a frame
        await until(lambda: (app.drain(), [f for f in app.frames if f.kind == protocol.KIND_DATA and f.profile == 0x2A37])[1])
        bridge.from_app(protocol.app_hello(1, flags=protocol.APP_TAKES_SOCKETS))
        app.drain()
        assert (hr, 0x2A37) in app.sockets
        fake.notify(HR_ADDR, 0x2A37, b"\x06\x51")
        await asyncio.sleep(0.05)
        assert app.sockets[(hr, 0x2A37)].recv(64) == b"\x06\x51", "the app reads the value itself"
        app.drain()
        assert len([f for f in app.frames if f.kind == protocol.KIND_DATA and f.profile == 0x2A37]) == 1
        bridge.from_app(protocol.socket_returned(1, hr, 0x2A37))  # the app gives it back
        fake.notify(HR_ADDR, 0x2A37, b"\x06\x52")
        await until(lambda: (app.drain(), len([f for f in app.frames if f.kind == protocol.KIND_DATA
                                                and f.profile == 0x2A37]))[1] == 2)
        bridge.from_app(protocol.app_hello(1, flags=protocol.APP_TAKES_SOCKETS))
        app.drain()
        bridge.app_gone()  # the app's connection ends: the bridge reads again
        fake.notify(HR_ADDR, 0x2A37, b"\x06\x53")
        await until(lambda: (app.drain(), len([f for f in app.frames if f.kind == protocol.KIND_DATA
                                                and f.profile == 0x2A37]))[1] == 3)

    asyncio.run(ride())
    assert bridge.handed == 2 and bridge.bad["socket_returned"] == 1
    assert [f.payload for f in app.frames if f.kind == protocol.KIND_DATA and f.profile == 0x2A37] == \
        [b"\x06\x50", b"\x06\x52", b"\x06\x53"]
