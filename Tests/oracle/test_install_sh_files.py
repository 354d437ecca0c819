"""board/install.sh's file helpers, run on the host as the script defines them (the whole script
is tested in the VM: Tests/vm/test_vm_system.py, test_vm_powercut.py):

- `readable_by_all` makes the rider's kept config readable without following a link: the
  config's directory is the service user's to write, so a link in the config's place must not
  turn root's chmod on another file;
- `put` leaves the destination whole, with its mode, and no temporary behind.
"""
from __future__ import annotations

import os
import pathlib
import re
import stat
import subprocess

INSTALL_SH = pathlib.Path(__file__).resolve().parents[2] / "board" / "install.sh"


def function(name: str) -> str:
    text = INSTALL_SH.read_text()
    m = re.search(rf"^{name}\(\) {{\n.*?^}}\n", text, re.S | re.M)
    assert m, f"board/install.sh has no function {name}()"
    return m.group(0)


def run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-eu", "-c", script], capture_output=True, text=True, timeout=60)


def test_readable_by_all_does_not_follow_a_link_in_the_configs_place(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:x\n")
    secret.chmod(0o600)
    config = tmp_path / "config.toml"
    config.symlink_to(secret)
    r = run(function("readable_by_all") + f'readable_by_all "{config}"\n')
    assert r.returncode == 0, r.stderr  # the install goes on
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600, "root's chmod followed the link"
    assert "not a regular file" in r.stderr, r.stderr


def test_readable_by_all_makes_a_plain_config_readable(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[display]\n")
    config.chmod(0o600)
    r = run(function("readable_by_all") + f'readable_by_all "{config}"\n')
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o644


def test_put_replaces_the_file_whole_with_its_mode(tmp_path):
    src = tmp_path / "new-binary"
    src.write_bytes(b"\x7fELF new")
    dst = tmp_path / "bin" / "bikecomputer"
    dst.parent.mkdir()
    dst.write_bytes(b"old")
    dst.chmod(0o755)
    before = dst.stat().st_ino
    r = run(function("put_text") + function("put") + f'put 0755 "{src}" "{dst}"\n')
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == b"\x7fELF new"
    assert stat.S_IMODE(dst.stat().st_mode) == 0o755
    # Renamed over (a new inode), not written in place; nothing left beside it.
    assert dst.stat().st_ino != before
    assert sorted(os.listdir(dst.parent)) == ["bikecomputer"]
