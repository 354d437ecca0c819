"""The radio glue (ble.py, ant.py) driven by fake bleak and openant modules that replay recorded
notifications: what reaches the app is exactly the raw values, with link frames around them."""
import asyncio
import sys
import types

import pytest

from bikebridge import ant, ble, protocol
from bikebridge.bridge import Bridge


class Recorder:
    def __init__(self):
        self.frames = []

    def __call__(self, frame: bytes) -> bool:
        self.frames.append(protocol.parse(frame))
        return True


class FakeChar:
    def __init__(self, u):
        self.uuid = ble.uuid16(u).upper()


class FakeService:
    def __init__(self, uuids):
        self.characteristics = [FakeChar(u) for u in uuids]


def fake_bleak(notifications, reads, connects):
    class FakeClient:
        def __init__(self, address, disconnected_callback=None):
            self.address = address
            self.on_disconnect = disconnected_callback
            self.services = [FakeService([0x2A63, 0x2A65, 0x2A19, 0x1234])]

        async def __aenter__(self):
            connects.append(self.address)
            if len(connects) > 2:
                raise asyncio.CancelledError  # end the test after one reconnect attempt
            return self

        async def __aexit__(self, *a):
            return False

        async def read_gatt_char(self, uuid):
            return bytearray(reads[uuid])

        async def start_notify(self, uuid, callback):
            async def play():
                for u, value in notifications:
                    if ble.uuid16(u) == uuid:
                        callback(None, bytearray(value))
                        await asyncio.sleep(0)
                await asyncio.sleep(0.01)
                self.on_disconnect(self)
            asyncio.get_running_loop().create_task(play())

    return types.SimpleNamespace(BleakClient=FakeClient)


def test_ble_glue_forwards_raw_values_and_links(monkeypatch):
    notifications = [(0x2A63, bytes.fromhex("2000c8000a000000")), (0x2A63, bytes.fromhex("2000d2000b000002"))]
    reads = {ble.uuid16(0x2A65): bytes.fromhex("0c000000"), ble.uuid16(0x2A19): b"\x5a"}
    connects = []
    monkeypatch.setitem(sys.modules, "bleak", fake_bleak(notifications, reads, connects))
    monkeypatch.setattr(ble, "RECONNECT_S", 0.0)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(ble.run_sensor(bridge, "c0:ff:ee:00:11:22"))
    sensor = protocol.BleId("C0:FF:EE:00:11:22")
    kinds = [(f.kind, f.link if f.kind == protocol.KIND_LINK else f.profile) for f in rec.frames]
    assert kinds[:6] == [(protocol.KIND_LINK, protocol.LINK_SEARCHING), (protocol.KIND_LINK, protocol.LINK_CONNECTED),
                         (protocol.KIND_DATA, 0x2A65), (protocol.KIND_DATA, 0x2A19),
                         (protocol.KIND_DATA, 0x2A63), (protocol.KIND_DATA, 0x2A63)]
    assert all(f.sensor == sensor for f in rec.frames)
    data = [f.payload for f in rec.frames if f.kind == protocol.KIND_DATA and f.profile == 0x2A63]
    assert data[:2] == [v for _, v in notifications]
    assert (protocol.KIND_LINK, protocol.LINK_DISCONNECTED) in kinds
    assert len(connects) == 3  # reconnected after the disconnect


def fake_openant(pages_by_type):
    channels = []

    class FakeChannel:
        class Type:
            BIDIRECTIONAL_RECEIVE = 0

        def __init__(self):
            self.on_broadcast_data = None
            self.id = None

        def set_id(self, number, device_type, trans):
            self.id = (number, device_type, trans)

        def enable_extended_messages(self, on): self.extended = on
        def set_search_timeout(self, t): pass
        def set_period(self, p): self.period = p
        def set_rf_freq(self, f): self.rf = f
        def open(self): self.opened = True

    class FakeNode:
        def set_network_key(self, n, key): self.key = key

        def new_channel(self, ctype, network, ext_assign):
            c = FakeChannel()
            channels.append(c)
            return c

        def start(self):
            for c in channels:
                for page in pages_by_type[c.id[1]]:
                    c.on_broadcast_data(page)

        def stop(self): pass

    modules = {
        "openant": types.ModuleType("openant"),
        "openant.devices": types.SimpleNamespace(ANTPLUS_NETWORK_KEY=[0] * 8),
        "openant.easy": types.ModuleType("openant.easy"),
        "openant.easy.channel": types.SimpleNamespace(Channel=FakeChannel),
        "openant.easy.node": types.SimpleNamespace(Node=FakeNode),
    }
    return modules, channels


def test_ant_glue_forwards_pages_with_the_extended_channel_id(monkeypatch):
    hr_ext = [0x04, 0xFF, 0, 0xFE, 0, 1, 7, 0x48, 0x80, 0xE1, 0x10, 120, 1]
    pm_plain = [0x10, 1, 0xFF, 90, 0, 0, 200, 0]
    modules, channels = fake_openant({120: [hr_ext], 11: [pm_plain]})
    for name, m in modules.items():
        monkeypatch.setitem(sys.modules, name, m)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_ANT, clock=lambda: 0, bridge_id=1)
    ant.run(bridge, [(120, 0, 0), (11, 555, 5)])
    assert [c.period for c in channels] == [8070, 8182] and all(c.rf == 57 and c.extended for c in channels)
    data = [f for f in rec.frames if f.kind == protocol.KIND_DATA]
    assert data[0].sensor == protocol.AntId(4321, 120, 1) and data[0].payload == bytes(hr_ext[:8])
    assert data[1].sensor == protocol.AntId(555, 11, 5) and data[1].payload == bytes(pm_plain)
    assert data[1].profile == 11
