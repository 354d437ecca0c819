"""A rear radar through the bridge (issue 29): its pages and notifications reach the app raw, as
every other sensor's, because the radar is a row of the sensor vocabulary (kinds.py): the ANT+
Bike Radar (device type 40) on a channel at its 8 Hz period, Garmin Varia's 6a4e3203 targets
characteristic over BlueZ with its battery, found in searches by the Varia radar service. The
payloads are the captures in Tests/SensorsTests/Corpus/radar (where they come from is written
there); the app's decoders read them (Tests/SensorsTests/RadarDecoderTests.swift)."""
import asyncio
import sys

from bikebridge import ant, ble, kinds, protocol
from bikebridge.bridge import Bridge
from fake_bluez import FakeBlueZ, FakeDevice
from test_ble_faked import Recorder as BleRecorder, until
from test_radios_faked import Recorder, fake_openant

VARIA_ADDR = "00:AA:01:06:00:06"
# A real ANT+ radar's page 48 (three vehicles) and a page 49, as the corpus keeps them.
ANT_PAGES = [bytes.fromhex("301500c382894004"), bytes.fromhex("31561242c1504f64")]
# A RearVue 820's notifications: a heartbeat, a vehicle closing in, the road clear again.
VARIA_VALUES = [bytes.fromhex("12"), bytes.fromhex("62e38200"), bytes.fromhex("82e38000"), bytes.fromhex("32")]


def test_the_radar_is_a_kind_with_its_ant_type_period_and_varia_uuids():
    k = kinds.BY_NAME["radar"]
    assert (k.ant_device_type, k.ant_channel_period) == (40, 4084)  # 32768 / 4084: 8.02 Hz
    assert k.ble_service == "6a4e3200-667b-11e3-949a-0800200c9a66"
    assert kinds.profile_code("6A4E3203-667B-11E3-949A-0800200C9A66") == 0x3203
    assert kinds.characteristic_uuid(0x3203) == "6a4e3203-667b-11e3-949a-0800200c9a66"
    assert kinds.ant_device_type("radar") == 40 and 40 in ant.SEARCH_TYPES


def test_ant_radar_pages_are_forwarded_raw_at_8_hz(monkeypatch):
    ext = [0x80, 0xC8, 0x0F, 40, 5]  # channel id: device 4040, type 40, transmission 5
    modules, channels = fake_openant({40: [list(p) + ext for p in ANT_PAGES], 120: []})
    for name, m in modules.items():
        monkeypatch.setitem(sys.modules, name, m)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_ANT, clock=lambda: 0, bridge_id=1)
    ant.run(bridge, [(120, 0, 0), (40, 0, 0)])
    assert [c.id for c in channels] == [(0, 120, 0), (0, 40, 0)]
    assert channels[1].period == 4084 and channels[1].extended and channels[1].rf == 57
    data = [f for f in rec.of(protocol.KIND_DATA) if f.profile == 40]
    assert [f.payload for f in data] == ANT_PAGES
    assert all(f.sensor == protocol.AntId(4040, 40, 5) for f in data)
    assert bridge.bad == {}


def varia():
    return FakeDevice(VARIA_ADDR, "RearVue8", [kinds.varia_uuid(0x3200)], {0x3203: (["notify"], b"")}, battery=77)


def test_varia_notifications_are_forwarded_raw_with_link_and_battery(monkeypatch):
    monkeypatch.setattr(ble, "RETRY_S", 0.02)
    monkeypatch.setattr(ble, "RETRY_MAX_S", 0.05)
    rec = BleRecorder()
    bridge = Bridge(rec, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.app_version = 2
    fake = FakeBlueZ([varia()])
    radio = ble.BleRadio(bridge, "hci0", bluez=fake)

    async def ride():
        await radio.start()
        radio.set_paired([VARIA_ADDR])
        await until(lambda: VARIA_ADDR in fake.devices_model and 0x3203 in fake.devices_model[VARIA_ADDR].sockets)
        for v in VARIA_VALUES:
            fake.notify(VARIA_ADDR, 0x3203, v)
        await until(lambda: len(rec.of(protocol.KIND_DATA, protocol.BleId(VARIA_ADDR), 0x3203)) == len(VARIA_VALUES))
        await until(lambda: rec.of(protocol.KIND_DATA, protocol.BleId(VARIA_ADDR), 0x2A19))

    asyncio.run(ride())
    radar = protocol.BleId(VARIA_ADDR)
    assert [f.payload for f in rec.of(protocol.KIND_DATA, radar, 0x3203)] == VARIA_VALUES
    assert [f.payload for f in rec.of(protocol.KIND_DATA, radar, 0x2A19)] == [bytes([77])]
    assert rec.links(VARIA_ADDR) == [protocol.LINK_SEARCHING, protocol.LINK_CONNECTED]
    assert bridge.bad == {}, "a one-byte heartbeat is a radar's normal notification, not a malformed one"


def test_a_search_finds_a_varia_by_its_radar_service(monkeypatch):
    monkeypatch.setattr(ble, "FOUND_REPORT_S", 60.0)
    rec = BleRecorder()
    bridge = Bridge(rec, protocol.RADIO_BLE, clock=lambda: 0, bridge_id=1)
    bridge.app_version = 2
    fake = FakeBlueZ([varia(), FakeDevice("00:AA:01:05:00:05", "Phone", [0x1234], {})])
    radio = ble.BleRadio(bridge, "hci0", bluez=fake)

    async def ride():
        await radio.start()
        radio.search(1)
        await until(lambda: rec.of(protocol.KIND_SCAN) and not rec.of(protocol.KIND_SCAN)[-1].scanning, timeout=3)

    asyncio.run(ride())
    found = rec.of(protocol.KIND_FOUND)
    assert [(f.sensor, f.name) for f in found] == [(protocol.BleId(VARIA_ADDR), "RearVue8")]
    assert found[0].profile == kinds.BY_NAME["radar"].found_service_bit == 8  # the found frame's radar bit
