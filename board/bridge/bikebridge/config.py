"""The paired sensors, read from the bike computer's config file (its [[sensor]] tables,
docs/config.md), and a watch on that file: when `bikecomputer sensors pair|forget`, the unit's
Sensors screen or an editor replaces it, the bridge reads it again (no restart).

The watch is inotify on the file's directory (the app writes the file atomically: a new file
renamed over the old one), through ctypes; where inotify is missing it falls back to checking
the file's modification time every POLL_S seconds. The app also asks for a reload over the
bridge protocol (version 2) after it changed the file."""
import ctypes
import ctypes.util
import logging
import os
import struct
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from . import kinds

log = logging.getLogger("bikebridge.config")

POLL_S = 5.0


@dataclass
class Paired:
    ble: List[str] = field(default_factory=list)  # addresses, "C0:FF:EE:00:11:22"
    ant: List[Tuple[int, int, int]] = field(default_factory=list)  # (device type, number, transmission type)


class ConfigError(ValueError):
    """Why the config file cannot be read; `line` is where (0: the whole file) and `why` the
    reason without the path (what the app shows)."""

    def __init__(self, message: str, line: int = 0, why: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.why = why or message


UTF8_BOM = b"\xef\xbb\xbf"


def parse(data: bytes) -> dict:
    """The config file's bytes as tomllib reads them, with the one leniency the app's reader
    has too: a leading UTF-8 byte-order mark is skipped. Raises ConfigError with the line."""
    import re
    import tomllib
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(f"line {line}: not UTF-8 text (byte 0x{data[e.start]:02X})", line,
                          "not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        line = int(m.group(1)) if m else getattr(e, "lineno", 0) or 0
        if not m and "end of document" in str(e):
            line = text.count("\n") + 1
        raise ConfigError(str(e), line, re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(e))) from None


def load(path: str) -> Paired:
    """The [[sensor]] entries of the config file at `path`. A file that cannot be read or parsed
    raises ConfigError with the reason and line (the bridge keeps what it had)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}", 0, e.strerror or "cannot read the file") from None
    try:
        data = parse(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}", e.line, e.why) from None
    out = Paired()
    sensors = data.get("sensor", [])
    if not isinstance(sensors, list):
        raise ConfigError(f"{path}: [[sensor]] must be an array of tables")
    for i, s in enumerate(sensors, 1):
        if not isinstance(s, dict):
            continue
        transport = s.get("transport")
        if transport == "ble":
            address = s.get("ble_address")
            parts = address.split(":") if isinstance(address, str) else []
            if len(parts) == 6 and all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p) for p in parts):
                if address.upper() not in out.ble:
                    out.ble.append(address.upper())
            else:
                log.warning("%s: sensor %d: ble_address %r is not an address like C0:FF:EE:00:11:22; skipped", path, i, address)
        elif transport == "ant":
            number = s.get("ant_device_number")
            dtype = s.get("ant_device_type", kinds.ant_device_type(s.get("role")))
            if isinstance(number, int) and isinstance(dtype, int) and 0 < number <= 0xFFFF and 0 < dtype <= 0xFF:
                entry = (dtype, number, 0)
                if entry not in out.ant:
                    out.ant.append(entry)
            else:
                log.warning("%s: sensor %d: needs ant_device_number (and a role or ant_device_type); skipped", path, i)
    return out


class _InotifyEvent(ctypes.Structure):
    _fields_ = [("wd", ctypes.c_int), ("mask", ctypes.c_uint32), ("cookie", ctypes.c_uint32), ("len", ctypes.c_uint32)]


IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x8, 0x80, 0x100, 0x200
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000


class Watch:
    """Calls `changed()` after the file at `path` was written or replaced. Register `fd` for
    reading in the event loop and call `readable()` when it is; without inotify, `fd` is None
    and `poll()` must be called every POLL_S seconds."""

    def __init__(self, path: str, changed: Callable[[], None]) -> None:
        self.path = os.path.abspath(path)
        self.name = os.path.basename(self.path).encode()
        self.changed = changed
        self.fd: Optional[int] = None
        self.mtime = self._stamp()
        libc_name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(libc_name, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "inotify_init1")
            wd = libc.inotify_add_watch(fd, os.path.dirname(self.path).encode(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
            if wd < 0:
                os.close(fd)
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {os.path.dirname(self.path)}")
            self.fd = fd
        except (OSError, AttributeError) as e:
            log.warning("no inotify (%s): checking %s every %.0f s instead", e, self.path, POLL_S)

    def _stamp(self):
        try:
            st = os.stat(self.path)
            return (st.st_mtime_ns, st.st_ino, st.st_size)
        except OSError:
            return None

    def readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        hit = False
        head = ctypes.sizeof(_InotifyEvent)
        i = 0
        while i + head <= len(data):
            _, mask, _, length = struct.unpack_from("iIII", data, i)
            name = data[i + head:i + head + length].rstrip(b"\0")
            i += head + length
            if name == self.name and mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE):
                hit = True
        if hit:
            self.mtime = self._stamp()
            self.changed()

    def poll(self) -> None:
        stamp = self._stamp()
        if stamp != self.mtime:
            self.mtime = stamp
            self.changed()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
