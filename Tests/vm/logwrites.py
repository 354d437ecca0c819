"""A replayer for dm-log-writes logs (the project's own; Debian packages none).

dm-log-writes (drivers/md/dm-log-writes.c, documented in the kernel's
admin-guide/device-mapper/log-writes) records every write, flush, FUA and discard that reaches a
device, in the order they became durable, onto a log device, and lets userspace put named marks
between them (`dmsetup message DEV 0 mark NAME`). Writes that complete but are not yet flushed
are held back and logged just before the flush that covers them, so replaying the log up to any
entry gives a state the device could have held had the power gone at that moment.

The log device's layout (little endian):
- block 0, the super block: magic u64 (0x6a736677736872), version u64 (1), nr_entries u64,
  sectorsize u32 (the data device's logical block size);
- from byte `sectorsize` on, one entry after the other: a header block of `sectorsize` bytes
  (sector u64, nr_sectors u64, flags u64, data_len u64; a mark's name follows the header in the
  same block), then for a write its data, nr_sectors x sectorsize bytes. Discards carry no data.
  sector and nr_sectors count `sectorsize` units.
- flags: FLUSH 1, FUA 2, DISCARD 4, MARK 8, METADATA 16.

    log = Log.open(path)                 # parses every entry header (the data stays on disk)
    with Replayer(log, image) as r:      # image: a copy of the device as it was when logging began
        r.replay_to(i)                   # applies entries [.., i] (forward only), returns the image

Command line: python3 logwrites.py LOG [--list] [--replay-to N --onto IMAGE]
"""
from __future__ import annotations

import dataclasses
import os
import struct
import sys

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")
ZERO_CHUNK = 1 << 20


class LogError(ValueError):
    """The log is not a dm-log-writes log, or is cut short; the message says where."""


@dataclasses.dataclass(frozen=True)
class Entry:
    index: int  # 0-based position in the log
    sector: int  # in units of the log's sectorsize
    nr_sectors: int
    flags: int
    data_offset: int  # byte offset of the data (writes) in the log file
    mark: str | None

    @property
    def is_write(self) -> bool:
        return not self.flags & (MARK | DISCARD) and self.nr_sectors > 0

    @property
    def is_barrier(self) -> bool:
        """A flush or FUA: a point where the device promised durability."""
        return bool(self.flags & (FLUSH | FUA))

    def describe(self) -> str:
        names = [n for bit, n in [(FLUSH, "FLUSH"), (FUA, "FUA"), (DISCARD, "DISCARD"), (MARK, "MARK"), (METADATA, "META")]
                 if self.flags & bit]
        what = f"mark {self.mark!r}" if self.mark is not None else f"sector {self.sector} +{self.nr_sectors}"
        return f"#{self.index} {what} {'|'.join(names) or 'WRITE'}"


@dataclasses.dataclass
class Log:
    path: str
    sectorsize: int
    entries: list[Entry]

    @staticmethod
    def open(path: str) -> "Log":
        with open(path, "rb") as f:
            head = f.read(SUPER.size)
            if len(head) < SUPER.size:
                raise LogError(f"{path}: {len(head)} bytes, shorter than the super block")
            magic, version, nr_entries, sectorsize = SUPER.unpack(head)
            if magic != MAGIC:
                raise LogError(f"{path}: magic {magic:#x}, not a dm-log-writes log ({MAGIC:#x})")
            if version != VERSION:
                raise LogError(f"{path}: version {version}, this replayer reads version {VERSION}")
            if sectorsize < 512 or sectorsize & (sectorsize - 1):
                raise LogError(f"{path}: sector size {sectorsize} is not a power of two >= 512")
            size = os.fstat(f.fileno()).st_size
            entries: list[Entry] = []
            offset = sectorsize
            for index in range(nr_entries):
                f.seek(offset)
                block = f.read(sectorsize)
                if len(block) < ENTRY.size:
                    raise LogError(f"{path}: entry {index} of {nr_entries} at byte {offset} is cut short")
                sector, nr_sectors, flags, data_len = ENTRY.unpack_from(block)
                mark = None
                if flags & MARK:
                    if data_len > sectorsize - ENTRY.size:
                        raise LogError(f"{path}: entry {index}: a mark of {data_len} bytes does not fit its block")
                    mark = block[ENTRY.size:ENTRY.size + data_len].decode(errors="replace")
                data_offset = offset + sectorsize
                length = 0 if flags & (DISCARD | MARK) else nr_sectors * sectorsize
                if data_offset + length > size:
                    raise LogError(f"{path}: entry {index} ({nr_sectors} sectors) runs past the log's end")
                entries.append(Entry(index, sector, nr_sectors, flags, data_offset, mark))
                offset = data_offset + length
            return Log(path, sectorsize, entries)

    def marks(self) -> list[Entry]:
        return [e for e in self.entries if e.mark is not None]

    def find_mark(self, name: str) -> Entry:
        for e in self.entries:
            if e.mark == name:
                return e
        raise LogError(f"{self.path}: no mark {name!r}")


class Replayer:
    """Applies a log's entries in order onto an image file (a copy of the device's content when
    logging began, e.g. zeros before mkfs). Forward only: replay_to(i) after replay_to(j) needs
    i >= j (start a new Replayer on a fresh copy to go back)."""

    def __init__(self, log: Log, image: str) -> None:
        self.log = log
        self.image = image
        self.applied = -1  # index of the last applied entry
        self._log_file = open(log.path, "rb")
        self._image = open(image, "r+b")

    def __enter__(self) -> "Replayer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._log_file.close()
        self._image.close()

    def _apply(self, e: Entry) -> None:
        ss = self.log.sectorsize
        if e.flags & MARK:
            return
        if e.flags & DISCARD:
            # A discarded range reads back as zeros here (virtio-blk's discard on a raw file
            # punches a hole; a card may return anything, which no file system may rely on).
            remaining = e.nr_sectors * ss
            self._image.seek(e.sector * ss)
            while remaining:
                n = min(remaining, ZERO_CHUNK)
                self._image.write(b"\0" * n)
                remaining -= n
            return
        if e.nr_sectors == 0:
            return  # a bare flush: ordering only
        self._log_file.seek(e.data_offset)
        data = self._log_file.read(e.nr_sectors * ss)
        self._image.seek(e.sector * ss)
        self._image.write(data)

    def replay_to(self, index: int) -> str:
        """Applies every entry up to and including `index`; returns the image path."""
        if index < self.applied:
            raise ValueError(f"replay is forward only: at #{self.applied}, asked for #{index}")
        if index >= len(self.log.entries):
            raise ValueError(f"the log has {len(self.log.entries)} entries, no #{index}")
        for e in self.log.entries[self.applied + 1:index + 1]:
            self._apply(e)
        self.applied = index
        self._image.flush()
        return self.image


def main(argv: list[str]) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("--list", action="store_true", help="print every entry")
    p.add_argument("--replay-to", type=int, help="apply entries 0..N onto --onto")
    p.add_argument("--onto", help="the image to replay onto (changed in place)")
    a = p.parse_args(argv)
    try:
        log = Log.open(a.log)
    except (LogError, OSError) as e:
        print(f"logwrites: {e}", file=sys.stderr)
        return 1
    barriers = sum(1 for e in log.entries if e.is_barrier)
    print(f"{a.log}: {len(log.entries)} entries, {barriers} flush/FUA, {len(log.marks())} marks, sector size {log.sectorsize}")
    if a.list:
        for e in log.entries:
            print(e.describe())
    if a.replay_to is not None:
        if not a.onto:
            p.error("--replay-to needs --onto IMAGE")
        with Replayer(log, a.onto) as r:
            r.replay_to(a.replay_to)
        print(f"replayed #0..#{a.replay_to} onto {a.onto}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
