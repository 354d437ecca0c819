"""`bikecomputer zones` shows the zones the device's config puts in force, flags on top, and
where each number came from (the file and line, a flag, or the built-in default)."""
import json
import subprocess


def zones(bikecomputer, *args):
    r = subprocess.run([str(bikecomputer), "zones", *args], capture_output=True, text=True, timeout=30)
    return r


def test_zones_come_from_the_config_file_with_their_lines(bikecomputer, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[rider]\nage = 40\nmax_hr = 190\nftp = 260\n\n[zones]\nhr_model = "max_hr"\n')
    r = zones(bikecomputer, "--config", str(cfg), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    inputs = out["inputs"]
    assert inputs["max_hr"] == {"value": "190 bpm", "source": "config", "from": f"{cfg}:3 ([rider] max_hr)"}
    assert inputs["ftp"]["source"] == "config" and inputs["ftp"]["from"].endswith(":4 ([rider] ftp)")
    assert inputs["resting_hr"]["source"] == "default"
    assert inputs["lthr"]["source"] == "unset"
    # 50/60/70/80/90 % of 190 and Coggan's 55 % of 260.
    assert out["heart_rate"]["boundaries"][:2] == [95, 114]
    assert out["power"]["boundaries"][0] == 143


def test_a_flag_overrides_its_key_and_says_so(bikecomputer, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("[rider]\nftp = 260\n")
    r = zones(bikecomputer, "--config", str(cfg), "--ftp", "300")
    assert r.returncode == 0, r.stderr
    assert "ftp         300 W" in r.stdout and "--ftp flag" in r.stdout
    assert "FTP 300 W" in r.stdout
    # Without the flag the file's 260 W is in force.
    r = zones(bikecomputer, "--config", str(cfg))
    assert "FTP 260 W" in r.stdout and f"{cfg}:2 ([rider] ftp)" in r.stdout


def test_heart_rate_flags_pick_the_model_unless_the_file_sets_it(bikecomputer, tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing set\n")
    r = zones(bikecomputer, "--config", str(empty), "--lthr", "170", "--json")
    assert json.loads(r.stdout)["heart_rate"]["source"] == "lthr", "LTHR given: Friel's zones"
    fixed = tmp_path / "fixed.toml"
    fixed.write_text('[zones]\nhr_model = "max_hr"\n')
    r = zones(bikecomputer, "--config", str(fixed), "--lthr", "170", "--json")
    assert json.loads(r.stdout)["heart_rate"]["source"] == "percent_max", "the file's hr_model stays"


def test_an_invalid_or_missing_config_names_the_line_or_the_path(bikecomputer, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[rider]\nage = 400\n")
    r = zones(bikecomputer, "--config", str(bad))
    assert r.returncode == 1
    assert f"{bad}:2: age = 400 is out of range" in r.stderr
    r = zones(bikecomputer, "--config", str(tmp_path / "missing.toml"))
    assert r.returncode == 1 and "cannot read" in r.stderr and "missing.toml" in r.stderr
