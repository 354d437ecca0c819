"""What the guest scripts share (Tests/vm/guest_ride.py, guest_memlcd.py): sysfs and debugfs
files read and written whole, the control socket's line protocol, polling with a deadline, and
a kernel file read until two reads agree. Runs inside the guest with the host's python3."""
from __future__ import annotations

import json
import os
import socket
import time


def sysread(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def syswrite(path: str, value: str) -> None:
    """One open/write (sysfs, configfs and debugfs refuse write-to-temp-and-rename)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def control(sock: str, line: str) -> str:
    """One line to the control socket and its one-line reply."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(sock)
    s.sendall(line.encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.decode().strip()


def status(sock: str) -> dict:
    line = control(sock, "status")
    if not line.startswith("ok "):
        raise RuntimeError(f"status: {line}")
    return json.loads(line[3:])


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, RuntimeError, ValueError) as e:
            last = e
        time.sleep(poll_s)
    raise TimeoutError(f"{what}: not within {timeout_s} s (last: {last})")


def stable(read, interval_s: float = 0.05, tries: int = 40) -> bytes:
    """`read()` when two reads `interval_s` apart agree (not in the middle of a frame's steps)."""
    mem = read()
    for _ in range(tries):
        time.sleep(interval_s)
        again = read()
        if again == mem:
            return mem
        mem = again
    return mem
