"""`bikecomputer config check` against Python's own TOML parser (tomllib, TOML 1.0).

The shipped board/config.toml must be valid TOML; the effective config the binary prints must
be valid TOML that says the same as the input; random valid configs written here must come back
with the same values; bad files must exit 1 with `path:line: message` lines.
"""
import pathlib
import random
import subprocess
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]


def check(bikecomputer, path):
    return subprocess.run([str(bikecomputer), "config", "check", str(path)], capture_output=True, text=True, timeout=30)


def effective(bikecomputer, path):
    r = check(bikecomputer, path)
    assert r.returncode == 0, r.stderr
    return tomllib.loads(r.stdout)


def test_shipped_config_is_valid_toml_and_round_trips(bikecomputer):
    shipped = tomllib.loads((REPO / "board/config.toml").read_text())
    printed = effective(bikecomputer, REPO / "board/config.toml")
    assert printed == shipped


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(v)


def write_toml(tables, sensors):
    lines = []
    for name, keys in tables.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in keys.items()]
    for s in sensors:
        lines.append("[[sensor]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in s.items()]
    return "\n".join(lines) + "\n"


def test_random_valid_configs_come_back_unchanged(bikecomputer, tmp_path):
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    for i in range(25):
        pins = rng.sample(range(0, 41), rng.choice([2, 3]))
        tables = {
            "buttons": {"pins": pins, "active_low": rng.choice([True, False]),
                        "bias": rng.choice(["pull-up", "pull-down", "disabled", "as-is"]),
                        "long_press_ms": rng.randint(300, 10000), "debounce_ms": rng.randint(1, 500)},
            "display": {"bus": rng.randint(0, 31), "address": rng.randint(3, 0x77),
                        "type": rng.choice(["ssd1306", "sh1106"]), "height": rng.choice([32, 64]),
                        "contrast": rng.randint(0, 255)},
            "bike": {"wheel_circumference_mm": rng.randint(500, 3500)},
            "rider": {"resting_hr": rng.randint(40, 70), "max_hr": rng.randint(160, 210), "ftp": rng.randint(30, 700)},
            "training": {"auto_pause_speed_kmh": rng.randint(5, 150) / 10, "auto_lap": rng.choice([True, False])},
            "storage": {"data_dir": f"/data/ride {rng.randint(0, 9)} \"x\"", "fsync_interval_ms": rng.randint(50, 1000)},
        }
        sensors = []
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.5:
                sensors.append({"transport": "ant", "role": rng.choice(["heart_rate", "power", "speed", "cadence"]),
                                "ant_device_number": rng.randint(1, 65535), "ant_device_type": rng.randint(1, 255)})
            else:
                sensors.append({"transport": "ble", "role": "power",
                                "ble_address": ":".join(f"{rng.randrange(256):02X}" for _ in range(6))})
        path = tmp_path / f"c{i}.toml"
        path.write_text(write_toml(tables, sensors))
        printed = effective(bikecomputer, path)
        for table, keys in tables.items():
            for k, v in keys.items():
                assert printed[table][k] == v, f"seed {seed}: [{table}] {k}"
        assert printed.get("sensor", []) == sensors, f"seed {seed}"


def test_bad_files_exit_1_with_line_numbers(bikecomputer, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[buttons]\ndebounce_ms = 0\nfoo = 1\n[display]\ntype = "lcd"\n')
    r = check(bikecomputer, path)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert lines[0] == f"{path}:2: debounce_ms = 0 is out of range; allowed: 1...500"
    assert lines[1].startswith(f"{path}:3: unknown key 'foo' in [buttons]")
    assert lines[2].startswith(f"{path}:5: type = \"lcd\" is not allowed")
    assert "3 problems" in lines[3]
    assert r.stdout == ""


def test_missing_explicit_file_is_an_error(bikecomputer, tmp_path):
    r = check(bikecomputer, tmp_path / "nope.toml")
    assert r.returncode == 1
    assert "cannot read" in r.stderr
