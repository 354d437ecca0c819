"""Differential tests: `bikecomputer decode --ant` against openant.

openant is right for page 0x10 (average power with rollover) and for speed/cadence without a wrap
(it has no rollover handling, and its distance is the circumference times the raw counter), so the
sequences below never wrap the speed/cadence counters (wire-formats.md §4). Rollover is covered
by hand-computed cases in Tests/SensorsTests/RolloverTests.swift.
"""
import json
import random
import subprocess

from openant.devices.bike_speed_cadence import BikeCadence, BikeCadenceData, BikeSpeed, BikeSpeedData
from openant.devices.power_meter import PowerMeter

SEED = 424242


def decode(bikecomputer, device_type, pages, extra=()):
    r = subprocess.run([str(bikecomputer), "decode", "--ant", str(device_type), *extra, *[bytes(p).hex() for p in pages]],
                       capture_output=True, text=True, timeout=60)
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    assert len(lines) == len(pages), r.stderr
    return lines


def openant_power_meter():
    pm = PowerMeter.__new__(PowerMeter)
    pm._power_update_event_count = [0, 0]
    pm._accumulated_power = [0, 0]
    from openant.devices.power_meter import PowerData
    pm.data = {"power": PowerData()}
    pm.on_device_data = lambda *a: None
    pm.name, pm.device_id = "power_meter", 1
    return pm


def test_power_only_page_average_matches_openant(bikecomputer):
    rng = random.Random(SEED)
    for run in range(8):
        event, acc = rng.randrange(256), rng.randrange(65536)
        pages = []
        for _ in range(120):
            d_e = rng.choice([0, 1, 1, 1, 2, 3])
            watts = rng.randrange(0, 1500)
            event = (event + d_e) % 256
            acc = (acc + d_e * watts + rng.randrange(0, max(1, d_e))) % 65536
            pedal = rng.choice([0xFF, 0x80 | rng.randrange(0, 101), rng.randrange(0, 101)])
            cadence = rng.choice([0xFF, rng.randrange(0, 200)])
            inst = rng.randrange(0, 1500)
            pages.append([0x10, event, pedal, cadence, acc & 0xFF, acc >> 8, inst & 0xFF, inst >> 8])
        ours = decode(bikecomputer, 11, pages)
        pm = openant_power_meter()
        for i, (p, o) in enumerate(zip(pages, ours)):
            before = pm.data["power"].average_power
            pm.on_data(p)
            assert o["instantaneous_power_w"] == pm.data["power"].instantaneous_power
            assert o["accumulated_power_w"] == pm._accumulated_power[1]
            if i == 0:
                continue
            new_event = (pm._power_update_event_count[1] - pm._power_update_event_count[0]) % 256 != 0
            if new_event:
                # openant truncates to an int.
                assert int(o["avg_power_w"]) == pm.data["power"].average_power, (run, i, bytes(p).hex())
            else:
                assert pm.data["power"].average_power == before


def speed_pages(rng, device_type, count):
    """Non-wrapping event times and counts, plausible rates."""
    t, revs = rng.randrange(0, 500), rng.randrange(0, 2000)
    pages = []
    for _ in range(count):
        if rng.random() < 0.8:
            d_rev = rng.randrange(1, 4) if device_type == 123 else 1
            rate = rng.uniform(1.0, 15.0) if device_type == 123 else rng.uniform(1.5, 4.0)  # rev/s
            d_t = max(1, round(d_rev / rate * 1024))
            t, revs = t + d_t, revs + d_rev
        page = rng.choice([0, 1, 2, 3, 4]) | (0x80 if rng.random() < 0.5 else 0)
        pages.append([page, 0xFF, 0xFF, 0xFF, t & 0xFF, (t >> 8) & 0xFF, revs & 0xFF, (revs >> 8) & 0xFF])
        if t > 60000 or revs > 60000:
            break
    return pages


def test_speed_only_matches_openant_without_wrap(bikecomputer):
    rng = random.Random(SEED + 1)
    wheel_m = 2.105
    pages = speed_pages(rng, 123, 200)
    ours = decode(bikecomputer, 123, pages, ["--wheel-mm", "2105", "--interval-ms", "100"])
    data = BikeSpeedData()
    first_revs = pages[0][6] | pages[0][7] << 8
    compared = 0
    for i, (p, o) in enumerate(zip(pages, ours)):
        prev = (data.bike_speed_event_time[1], data.cumulative_speed_revolution[1])
        BikeSpeed.update_speed_data(data, p[4:8], wheel_m)
        assert abs(o["distance_m"] - (data.calculated_distance - wheel_m * first_revs)) < 1e-6
        if i > 0 and (data.bike_speed_event_time[1], data.cumulative_speed_revolution[1]) != prev:
            assert abs(o["speed_mps"] * 3.6 - data.calculated_speed) < 1e-4, (i, bytes(p).hex())
            compared += 1
    assert compared > 100


def test_cadence_only_matches_openant_without_wrap(bikecomputer):
    rng = random.Random(SEED + 2)
    pages = speed_pages(rng, 122, 200)
    ours = decode(bikecomputer, 122, pages, ["--interval-ms", "100"])
    data = BikeCadenceData()
    compared = 0
    for i, (p, o) in enumerate(zip(pages, ours)):
        prev = (data.bike_cadence_event_time[1], data.cumulative_cadence_revolution[1])
        BikeCadence.update_cadence_data(data, p[4:8])
        if i > 0 and (data.bike_cadence_event_time[1], data.cumulative_cadence_revolution[1]) != prev:
            assert abs(o["cadence_rpm"] - data.calculate_cadence()) < 1e-4, (i, bytes(p).hex())
            compared += 1
    assert compared > 60


def test_combined_speed_cadence_matches_openant_without_wrap(bikecomputer):
    rng = random.Random(SEED + 3)
    speed = speed_pages(rng, 123, 150)
    cad = speed_pages(rng, 122, 150)
    n = min(len(speed), len(cad))
    pages = [c[4:8] + s[4:8] for s, c in zip(speed[:n], cad[:n])]
    ours = decode(bikecomputer, 121, pages, ["--wheel-mm", "2000", "--interval-ms", "100"])
    sd, cd = BikeSpeedData(), BikeCadenceData()
    for i, (p, o) in enumerate(zip(pages, ours)):
        ps = (sd.bike_speed_event_time[1], sd.cumulative_speed_revolution[1])
        pc = (cd.bike_cadence_event_time[1], cd.cumulative_cadence_revolution[1])
        BikeSpeed.update_speed_data(sd, p[4:8], 2.0)
        BikeCadence.update_cadence_data(cd, p[0:4])
        if i > 0 and (sd.bike_speed_event_time[1], sd.cumulative_speed_revolution[1]) != ps:
            assert abs(o["speed_mps"] * 3.6 - sd.calculated_speed) < 1e-4
        if i > 0 and (cd.bike_cadence_event_time[1], cd.cumulative_cadence_revolution[1]) != pc:
            assert abs(o["cadence_rpm"] - cd.calculate_cadence()) < 1e-4


def openant_device(cls, data_key, data_cls):
    from openant.devices.common import CommonData
    d = cls.__new__(cls)
    d.name, d.device_id, d.trans_type = "dev", 1, 1
    d._attached, d._found = True, True
    d.on_found = lambda: None
    d.on_device_data = lambda *a: None
    d._on_battery = lambda *a: None
    d._event_count = [0, 0]
    d.data = {"common": CommonData(), "batteries": [None] * 16, data_key: data_cls()}
    return d


# openant's BatteryStatus names; it calls status 0 "Unknown", the profile reserves it.
STATUS = {"Unknown": "reserved", "New": "new", "Good": "good", "Ok": "ok", "Low": "low",
          "Critical": "critical", "Charging": "charging", "Invalid": "invalid"}


def test_heart_rate_pages_match_openant(bikecomputer):
    from openant.devices.heart_rate import HeartRate, HeartRateData
    rng = random.Random(SEED + 4)
    pages, t, beats = [], rng.randrange(65536), rng.randrange(256)
    for i in range(400):
        toggle = 0x80 if (i // 4) % 2 else 0
        page = rng.choice([0, 1, 2, 3, 4, 4, 4, 6, 7])
        if rng.random() < 0.7:
            prev = t
            t = (t + rng.randrange(300, 1500)) % 65536
            beats = (beats + 1) % 256
        else:
            prev = (t - 700) % 65536
        body = [rng.randrange(256) for _ in range(3)]
        if page == 4:
            body = [0xFF, prev & 0xFF, prev >> 8]
        if page == 7:
            body = [rng.randrange(0, 101), rng.randrange(256), rng.randrange(0, 0x80)]
        pages.append([page | toggle] + body + [t & 0xFF, t >> 8, beats, rng.randrange(40, 200)])
    ours = decode(bikecomputer, 120, pages)
    hr = openant_device(HeartRate, "heart_rate", HeartRateData)
    for i, (p, o) in enumerate(zip(pages, ours)):
        hr.on_data(p)
        ref = hr.data["heart_rate"]
        assert o["computed_heart_rate_bpm"] == ref.heart_rate
        assert o["heart_beat_count"] == ref.beat_count
        assert abs(o["heart_beat_event_time_s"] - ref.beat_time) < 1e-6
        if i < 4:
            continue  # page fields are shown once the toggle bit has changed
        page = p[0] & 0x7F
        if page == 1:
            assert o["cumulative_operating_time_s"] == ref.operating_time
        elif page == 2:
            assert o["manufacturer_id"] == ref.manufacturer_id_lsb and o["serial_number_high"] == ref.serial_number
        elif page == 4:
            assert abs(o["previous_heart_beat_event_time_s"] - ref.previous_heart_beat_time) < 1e-6
        elif page == 6:
            assert o["features_supported"] == ref.features_supported and o["features_enabled"] == ref.features_enabled
        elif page == 7:
            assert o["battery_percent"] == ref.battery_percentage
            assert o["battery_status"] == STATUS[hr.data["common"].last_battery_data.status.name]


def test_common_pages_match_openant(bikecomputer):
    from openant.devices.power_meter import PowerData
    rng = random.Random(SEED + 5)
    pages = []
    for _ in range(200):
        kind = rng.choice([0x50, 0x51, 0x52])
        p = [kind] + [rng.randrange(256) for _ in range(7)]
        if kind == 0x52:
            p[5] = 0  # openant reads the operating time from bytes 3-4 only; the profile has 3 bytes
            p[7] = p[7] & 0x80 | rng.randrange(1, 6) << 4 | rng.randrange(0, 15)
        pages.append(p)
    ours = decode(bikecomputer, 11, pages)
    dev = openant_device(PowerMeter, "power", PowerData)
    for p, o in zip(pages, ours):
        dev._on_data(p)
        c = dev.data["common"]
        if p[0] == 0x50:
            assert (o["hardware_revision"], o["manufacturer_id"], o["model_number"]) == (c.hardware_rev, c.manufacturer_id, c.model_no)
        elif p[0] == 0x51:
            assert o["serial_number"] == c.serial_no
            assert o["software_revision_main"] == p[3] and o["software_revision_supplemental"] == p[2]
        else:
            b = c.last_battery_data
            assert o["cumulative_operating_time_s"] == b.operating_time
            assert o["battery_status"] == STATUS[b.status.name]
            assert abs(o["battery_voltage_v"] - (b.voltage_coarse + b.voltage_fractional)) < 1e-6
