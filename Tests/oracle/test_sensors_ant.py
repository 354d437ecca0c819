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
