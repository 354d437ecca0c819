"""Every error a newcomer can hit in the README's two commands and the board's first boot names
the fix in one line. Each is provoked here: no Swift, a Swift too old, no apt, an invalid config,
no display, no sensor bridge, no python3 or python3-venv. (A terminal too small for the demo: test_terminal_demo.py.)"""
import os
import pathlib
import shutil
import signal
import subprocess
import time

from conftest import REPO

TEST_SH = REPO / "scripts" / "test.sh"


def fake_tool(directory: pathlib.Path, name: str, script: str):
    p = directory / name
    p.write_text("#!/bin/sh\n" + script + "\n")
    p.chmod(0o755)


def tools_dir(tmp_path, names, skip=()):
    """A PATH directory with the real tools `names` (symlinked), except those in `skip`."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for n in names:
        real = shutil.which(n)
        if real and n not in skip and not (d / n).exists():
            (d / n).symlink_to(real)
    return d


def run_test_sh(path_dirs):
    env = dict(os.environ, PATH=":".join(str(p) for p in path_dirs))
    return subprocess.run(["/bin/bash", str(TEST_SH)], capture_output=True, text=True, timeout=60, env=env)


BASIC = ["dirname", "sed", "head", "grep", "id", "cat", "env", "python3", "tee", "cmp", "cp"]


def one_line_fix(stderr, *words):
    lines = [l for l in stderr.splitlines() if l.startswith("test.sh:")]
    assert lines, stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_no_swift(tmp_path):
    r = run_test_sh([tools_dir(tmp_path, BASIC)])
    assert r.returncode == 1
    one_line_fix(r.stderr, "no swift on PATH", "swift.org", "PATH")


def test_swift_too_old(tmp_path):
    d = tools_dir(tmp_path, BASIC)
    fake_tool(d, "swift", 'echo "Swift version 5.10.1 (swift-5.10.1-RELEASE)"; echo "Target: x86_64-unknown-linux-gnu"')
    r = run_test_sh([d])
    assert r.returncode == 1
    one_line_fix(r.stderr, "Swift 5.10 found", "needs Swift 6.1 or later", "swift.org")
    fake_tool(d, "swift", 'echo "Swift version 6.0.3 (swift-6.0.3-RELEASE)"')
    assert "Swift 6.0 found" in run_test_sh([d]).stderr


def test_no_apt_names_the_packages(tmp_path):
    d = tools_dir(tmp_path, BASIC + ["swift"])
    # Nothing installed, and no apt-get on this system.
    fake_tool(d, "dpkg-query", "exit 1")
    r = run_test_sh([d, "/opt/swift/usr/bin"] if not shutil.which("swift", path=str(d)) else [d])
    assert r.returncode == 1
    one_line_fix(r.stderr, "missing packages", "libgpiod-dev", "tmux", "no apt-get", "package manager")


def test_not_root_names_the_apt_command(tmp_path):
    d = tools_dir(tmp_path, BASIC + ["swift"], skip=("id",))
    fake_tool(d, "dpkg-query", "exit 1")
    fake_tool(d, "id", "echo 1000")
    fake_tool(d, "apt-get", "echo apt-get must not run >&2; exit 9")
    r = run_test_sh([d])
    assert r.returncode == 1 and "apt-get must not run" not in r.stderr
    assert "sudo apt-get install libgpiod-dev" in r.stderr


def run_briefly(bikecomputer, tmp_path, config_text, seconds=2.5):
    cfg = tmp_path / "c.toml"
    cfg.write_text(config_text.replace("DIR", str(tmp_path)))
    p = subprocess.Popen([str(bikecomputer), "run", "--config", str(cfg), "--data-dir", str(tmp_path / "data"), "--no-buttons"],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=15)
    return p.returncode, err


def test_invalid_config_names_the_line_and_what_to_do(bikecomputer, tmp_path):
    rc, err = run_briefly(bikecomputer, tmp_path, "[display]\nheight = 48\n")
    assert rc == 1
    line = next(l for l in err.splitlines() if "c.toml:2" in l)
    assert "height" in line and "64" in line and "32" in line, line
    assert "docs/config.md" in err


def test_no_display_and_no_bridge_say_what_to_do(bikecomputer, tmp_path):
    short = pathlib.Path(f"/tmp/bcnew-{os.getpid()}")
    short.mkdir(exist_ok=True)
    try:
        rc, err = run_briefly(bikecomputer, short, '[display]\nbus = 9\n[bridge]\npath = "DIR/b.sock"\n[control]\nsocket = "DIR/c.sock"\n'
                              '[[sensor]]\ntransport = "ant"\nrole = "heart_rate"\nant_device_number = 1\n')
        assert rc == 0, err
        display = next(l for l in err.splitlines() if "display:" in l)
        assert "/dev/i2c-9" in display and "enable I2C" in display and "dtparam=i2c_arm=on" in display
        bridge = next(l for l in err.splitlines() if "sensor bridge" in l)
        assert "systemctl start bikebridge" in bridge
    finally:
        shutil.rmtree(short, ignore_errors=True)


def copy_of_test_sh(tmp_path) -> pathlib.Path:
    """test.sh in a checkout of its own (it works from the directory above scripts/), so its venv
    step runs there and not in this repository's .venv."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "Tests" / "oracle").mkdir(parents=True)
    shutil.copy(TEST_SH, root / "scripts" / "test.sh")
    shutil.copy(REPO / "Tests" / "oracle" / "requirements.txt", root / "Tests" / "oracle" / "requirements.txt")
    return root / "scripts" / "test.sh"


def installed_tools(tmp_path, python3_script=None, skip=()):
    """Swift 6.3, every Debian package installed, chromium there: test.sh gets to the venv."""
    d = tools_dir(tmp_path, BASIC, skip=("python3", *skip))
    fake_tool(d, "swift", 'echo "Swift version 6.3.1 (swift-6.3.1-RELEASE)"')
    fake_tool(d, "dpkg-query", "echo 'install ok installed'")
    fake_tool(d, "chromium", "exit 0")
    fake_tool(d, "apt-get", "echo apt-get must not run >&2; exit 9")
    if python3_script is not None:
        fake_tool(d, "python3", python3_script)
    return d


def test_no_python3_names_the_packages(tmp_path):
    d = installed_tools(tmp_path)
    env = dict(os.environ, PATH=str(d))
    r = subprocess.run(["/bin/bash", str(copy_of_test_sh(tmp_path))], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 1, r.stderr
    one_line_fix(r.stderr, "no python3", "apt-get install python3 python3-venv")


def test_no_venv_module_names_python3_venv(tmp_path):
    # Debian's python3 without python3-venv: `python3 -m venv` fails (ensurepip is not available).
    real = shutil.which("python3")
    d = installed_tools(tmp_path, 'case "$1 $2" in "-m venv") echo "The virtual environment was not created '
                                  'successfully because ensurepip is not available." >&2; exit 1;; esac; '
                                  f'exec {real} "$@"')
    env = dict(os.environ, PATH=str(d))
    test_sh = copy_of_test_sh(tmp_path)
    r = subprocess.run(["/bin/bash", str(test_sh)], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 1, r.stderr
    assert "apt-get must not run" not in r.stderr
    fix = [l for l in r.stderr.splitlines() if l.startswith("test.sh:")]
    assert fix and "python3 -m venv failed" in fix[-1] and "apt-get install python3-venv" in fix[-1], r.stderr
    assert not (test_sh.parent.parent / ".venv" / "requirements.installed").exists()
