"""Sensor names paired through the running unit's control socket (issue 27): a name with a line
break (typed with `--name`, or heard over the air and offered as the default) used to be sent
as two request lines, so `bikecomputer sensors pair ... --name $'HR\\ndiscard'` paired "HR" and
then discarded the ride. Now a name with a control character is refused with the character
named, by `sensors pair` and by `ctl`, the ride and the config untouched; a printable name,
however hostile to TOML, is stored so that Python's tomllib and `config check` read it back."""
import pathlib
import subprocess
import sys
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_run import App, run_dir, write_config  # noqa: E402,F401

BREAKS = ["HR\ndiscard", "HR\r\nend", "HR\rdiscard"]
CONTROLS = ["DEL\x7fhere", "esc\x1b[31mred", "bell\x07", "tab\there", "unit\x1fsep"]
# Six (the test's config pairs two sensors; the unit takes eight), each within the 32 characters kept.
PRINTABLE = ["quote\"in 'single' '''triple'''", "back\\slash\\", "é ☃ 😀 \u202eright-to-left", "#not a comment",
             "[[sensor]]", "\\u000A literally"]


def pair_cmd(bikecomputer, cfg, address, name):
    return subprocess.run([str(bikecomputer), "sensors", "pair", f"ble:{address}", "--role", "heart_rate", "--name", name,
                           "--config", str(cfg)], capture_output=True, text=True, timeout=30)


def test_a_name_with_a_control_character_is_refused_and_runs_no_command(bikecomputer, run_dir):  # noqa: F811
    cfg = write_config(run_dir)
    app = App(bikecomputer, run_dir, cfg)
    try:
        app.ctl("start")
        app.wait_for(lambda s: s["state"] == "running", timeout=8, what="running")
        before = cfg.read_bytes()
        for i, name in enumerate(BREAKS + CONTROLS):
            address = f"C0:FF:EE:00:02:{i:02X}"
            r = pair_cmd(bikecomputer, cfg, address, name)
            assert r.returncode == 1 and "control character (U+" in r.stderr, (name, r.returncode, r.stdout, r.stderr)
            if "\t" in name:
                continue  # for ctl a tab separates words, as a space does (the name "tab here")
            c = app.ctl_raw("sensors", "pair", f"ble:{address}", "heart_rate", name)
            assert c.returncode == 64 and "control characters" in c.stderr, (name, c.returncode, c.stdout, c.stderr)
        assert cfg.read_bytes() == before, "nothing paired"
        st = app.status()
        assert st["state"] == "running", f"the text after the line break ran as a command: {st['state']}"
    finally:
        app.terminate()


def test_a_printable_hostile_name_paired_through_the_unit_reads_back_whole(bikecomputer, run_dir):  # noqa: F811
    cfg = write_config(run_dir)
    app = App(bikecomputer, run_dir, cfg)
    try:
        want = {}
        for i, name in enumerate(PRINTABLE):
            address = f"C0:FF:EE:00:03:{i:02X}"
            if i % 2:
                r = pair_cmd(bikecomputer, cfg, address, name)
                assert r.returncode == 0 and "paired" in r.stdout, (name, r.stdout, r.stderr)
            else:
                app.ctl("sensors", "pair", f"ble:{address}", "heart_rate", name)
            want[address] = name
        check = subprocess.run([str(bikecomputer), "config", "check", str(cfg)], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        stored = {s.get("ble_address"): s.get("name") for s in tomllib.loads(cfg.read_text())["sensor"]}
        for address, name in want.items():
            assert stored.get(address) == name, (address, name, stored.get(address))
    finally:
        app.terminate()
