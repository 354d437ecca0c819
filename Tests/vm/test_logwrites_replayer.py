"""The dm-log-writes replayer (logwrites.py) on logs written here in the kernel's layout; the VM
test (test_vm_logwrites.py) checks it against the kernel's own logs: replayed to the end, the
log must give the data device byte for byte."""
from __future__ import annotations

import pathlib

import pytest

import logwrites
from logwrites import DISCARD, ENTRY, FLUSH, FUA, MAGIC, MARK, SUPER, Log, LogError, Replayer

SS = 512


def write_log(path: pathlib.Path, entries: list[tuple[int, int, int, bytes]], sectorsize: int = SS,
              nr_entries: int | None = None, magic: int = MAGIC) -> None:
    """entries: (sector, nr_sectors, flags, data-or-mark-name)."""
    out = bytearray(SUPER.pack(magic, 1, len(entries) if nr_entries is None else nr_entries, sectorsize))
    out += bytes(sectorsize - len(out))
    for sector, nr, flags, data in entries:
        header = ENTRY.pack(sector, nr, flags, len(data) if flags & MARK else 0)
        if flags & MARK:
            header += data
        out += header + bytes(sectorsize - len(header))
        if not flags & (MARK | DISCARD):
            assert len(data) == nr * sectorsize
            out += data
    path.write_bytes(bytes(out))


def test_replays_writes_in_order_up_to_each_entry(tmp_path):
    a, b = bytes([1]) * SS * 2, bytes([2]) * SS
    write_log(tmp_path / "log", [(0, 2, 0, a), (1, 1, FLUSH, b), (0, 0, MARK, b"after-b"), (3, 1, FUA, bytes([3]) * SS),
                                 (0, 2, DISCARD, b"")])
    log = Log.open(str(tmp_path / "log"))
    assert [e.mark for e in log.entries] == [None, None, "after-b", None, None]
    assert [e.is_barrier for e in log.entries] == [False, True, False, True, False]
    assert log.find_mark("after-b").index == 2
    image = tmp_path / "img"
    image.write_bytes(bytes(SS * 4))
    with Replayer(log, str(image)) as r:
        r.replay_to(0)
        assert image.read_bytes()[:SS * 2] == a and image.read_bytes()[SS * 2:] == bytes(SS * 2)
        r.replay_to(1)
        assert image.read_bytes()[SS:SS * 2] == b, "the second write overlays the first"
        r.replay_to(3)
        assert image.read_bytes()[SS * 3:] == bytes([3]) * SS
        r.replay_to(4)
        assert image.read_bytes()[:SS * 2] == bytes(SS * 2), "a discard reads back as zeros"
        with pytest.raises(ValueError):
            r.replay_to(2)


def test_sector_units_follow_the_logs_sector_size(tmp_path):
    ss = 4096
    write_log(tmp_path / "log", [(2, 1, 0, bytes([7]) * ss)], sectorsize=ss)
    image = tmp_path / "img"
    image.write_bytes(bytes(ss * 4))
    with Replayer(Log.open(str(tmp_path / "log")), str(image)) as r:
        r.replay_to(0)
    assert image.read_bytes()[2 * ss:3 * ss] == bytes([7]) * ss and image.read_bytes()[:2 * ss] == bytes(2 * ss)


def test_refuses_what_is_not_a_whole_log(tmp_path):
    write_log(tmp_path / "bad", [], magic=0x1234)
    with pytest.raises(LogError, match="not a dm-log-writes log"):
        Log.open(str(tmp_path / "bad"))
    write_log(tmp_path / "short", [(0, 1, 0, bytes(SS))], nr_entries=2)
    with pytest.raises(LogError, match="entry 1 of 2"):
        Log.open(str(tmp_path / "short"))
    write_log(tmp_path / "cut", [(0, 4, 0, bytes(SS * 4))])
    data = (tmp_path / "cut").read_bytes()
    (tmp_path / "cut").write_bytes(data[:-SS])
    with pytest.raises(LogError, match="runs past the log's end"):
        Log.open(str(tmp_path / "cut"))


def test_command_line_lists_and_replays(tmp_path, capsys):
    write_log(tmp_path / "log", [(0, 1, FLUSH, bytes([9]) * SS), (0, 0, MARK, b"m")])
    image = tmp_path / "img"
    image.write_bytes(bytes(SS))
    assert logwrites.main([str(tmp_path / "log"), "--list", "--replay-to", "1", "--onto", str(image)]) == 0
    out = capsys.readouterr().out
    assert "2 entries, 1 flush/FUA, 1 marks" in out and "mark 'm'" in out
    assert image.read_bytes() == bytes([9]) * SS
