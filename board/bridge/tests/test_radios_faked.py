"""The ANT+ glue (ant.py) driven by a fake openant that replays recorded pages: what reaches the
app is exactly the raw pages with the channel id the stick reported; searches report every
device heard once. (BLE: test_ble_faked.py.)"""
import sys
import time

from bikebridge import ant, protocol
from bikebridge.bridge import Bridge

import fake_openant as fake_openant_module


class Recorder:
    def __init__(self):
        self.frames = []

    def __call__(self, frame) -> bool:
        self.frames.append(protocol.parse(bytes(frame)))
        return True

    def of(self, kind):
        return [f for f in self.frames if f.kind == kind]


def fake_openant(pages_by_type):
    channels = []

    class FakeNode:
        def set_network_key(self, n, key): self.key = key

        def new_channel(self, ctype, network, ext_assign):
            c = fake_openant_module.FakeChannel()
            channels.append(c)
            return c

        def start(self):
            for c in channels:
                for page in pages_by_type[c.id[1]]:
                    c.on_broadcast_data(page)

        def stop(self): pass

    return fake_openant_module.modules(FakeNode), channels


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


def test_ant_extended_messages_with_rssi():
    page = [0x04, 0xFF, 0, 0xFE, 0, 1, 7, 0x48]
    assert ant.parse_extended(page + [0xC0, 0xE1, 0x10, 120, 1, 0x20, 0xC4, 0xA0]) == (protocol.AntId(4321, 120, 1), -60)
    assert ant.parse_extended(page + [0x80, 0xE1, 0x10, 120, 1]) == (protocol.AntId(4321, 120, 1), None)
    assert ant.parse_extended(page + [0x40, 0x20, 0xC4, 0xA0]) == (None, -60)
    assert ant.parse_extended(page + [0x80, 0xE1]) == (None, None), "cut short: nothing trusted"
    assert ant.parse_extended(page) == (None, None)


def test_ant_search_reports_each_device_once_and_frees_its_channels(monkeypatch):
    modules, channels = fake_openant({})
    for name, m in modules.items():
        monkeypatch.setitem(sys.modules, name, m)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_ANT, clock=lambda: 0, bridge_id=1)
    bridge.app_version = 2
    radio = ant.AntRadio(bridge)
    radio.node = modules["openant.easy.node"].Node()
    radio.node.max_channels = 8
    radio._apply_paired([(120, 4321, 1)])
    radio._start_search(5)
    assert len(channels) == 1 + len(ant.SEARCH_TYPES) and [c.id for c in channels[1:]] == [(0, t, 0) for t in ant.SEARCH_TYPES]
    assert 40 in ant.SEARCH_TYPES, "a search finds rear radars too"
    page = [0x10, 1, 0xFF, 90, 0, 0, 200, 0]
    by_type = {c.id[1]: c for c in channels[1:]}
    for _ in range(3):  # heard three times: reported once
        by_type[11].on_broadcast_data(page + [0xC0, 0x39, 0x30, 11, 5, 0x20, 0xB5, 0xA0])
    by_type[121].on_broadcast_data([0] * 8 + [0x80, 0x02, 0x00, 121, 1])
    by_type[120].on_broadcast_data(page)  # no channel id: counted, not reported
    radio._stop_search()
    found = rec.of(protocol.KIND_FOUND)
    assert [(f.sensor, f.profile, f.rssi) for f in found] == [
        (protocol.AntId(12345, 11, 5), 11, -75), (protocol.AntId(2, 121, 1), 121, None)]
    assert [s.scanning for s in rec.of(protocol.KIND_SCAN)] == [True, False]
    assert bridge.bad["ant_no_channel_id"] == 1
    assert len(radio.pool) == len(ant.SEARCH_TYPES) and channels[0].opened and not any(c.opened for c in channels[1:])
    radio._apply_paired([(120, 4321, 1), (11, 12345, 5)])  # pairing what the search found reuses a channel
    assert len(channels) == 1 + len(ant.SEARCH_TYPES) and channels[1].id == (12345, 11, 5) and channels[1].opened
