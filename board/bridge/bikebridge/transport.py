"""Where frames go: the app's Unix SOCK_SEQPACKET socket, or a serial line (or a pty)."""
import os
import socket
import termios
import time
import tty
from typing import Optional

from . import protocol


class SocketTransport:
    """Connects to the app's socket; `send` reconnects (and says hello again) after the app restarts."""

    def __init__(self, path: str, on_connect=None) -> None:
        self.path = path
        self.sock: Optional[socket.socket] = None
        self.on_connect = on_connect

    def connect(self) -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            return False
        self.sock = s
        if self.on_connect:
            self.on_connect(self)
        return True

    def send(self, frame: bytes) -> bool:
        if self.sock is None and not self.connect():
            return False
        try:
            self.sock.send(frame)
            return True
        except OSError:
            self.close()
            return False

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class SerialTransport:
    """Writes COBS records to a tty opened raw. Starts with a delimiter so the first frame is not
    glued to line noise."""

    def __init__(self, path: str, baud: int = 115200) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd)
        attrs = termios.tcgetattr(self.fd)
        speed = getattr(termios, f"B{baud}")
        attrs[4] = attrs[5] = speed
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        os.write(self.fd, b"\x00")

    def send(self, frame: bytes) -> bool:
        data = protocol.serial_record(frame)
        while data:
            n = os.write(self.fd, data)
            data = data[n:]
        return True

    def close(self) -> None:
        os.close(self.fd)


def monotonic_us() -> int:
    return time.monotonic_ns() // 1000
