"""Where frames go: the app's Unix SOCK_SEQPACKET socket, or a serial line (or a pty)."""
import array
import os
import socket
import termios
import time
import tty
from typing import Optional

from . import protocol


class SocketTransport:
    """Connects to the app's socket; `send` reconnects (and says hello again) after the app
    restarts. Sends never block: a frame the app's full queue cannot take is dropped (counted by
    the Bridge), the connection stays. `on_open(sock)` / `on_close(sock)` let an event loop read
    what the app sends back (protocol version 2)."""

    def __init__(self, path: str, on_connect=None, on_open=None, on_close=None) -> None:
        self.path = path
        self.sock: Optional[socket.socket] = None
        self.on_connect = on_connect
        self.on_open = on_open
        self.on_close = on_close
        self.connects = 0

    def connect(self) -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            return False
        s.setblocking(False)
        self.sock = s
        self.connects += 1
        if self.on_open:
            self.on_open(s)
        if self.on_connect:
            self.on_connect(self)
        return True

    def send(self, frame) -> bool:
        if self.sock is None and not self.connect():
            return False
        try:
            self.sock.send(frame)
            return True
        except BlockingIOError:
            return False
        except OSError:
            self.close()
            return False

    def send_with_fd(self, frame, fd: int) -> bool:
        """One frame with a file descriptor attached (SCM_RIGHTS)."""
        if self.sock is None and not self.connect():
            return False
        try:
            self.sock.sendmsg([bytes(frame)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
            return True
        except BlockingIOError:
            return False
        except OSError:
            self.close()
            return False

    def receive(self) -> Optional[bytes]:
        """One frame from the app, b"" when it closed the connection, None when nothing is there."""
        if self.sock is None:
            return b""
        try:
            data = self.sock.recv(protocol.FRAME_BYTES_MAX)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self.close()
        return data

    def close(self) -> None:
        if self.sock is not None:
            s, self.sock = self.sock, None
            if self.on_close:
                self.on_close(s)
            s.close()


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
        self.deframer = protocol.SerialDeframer()

    def receive_frames(self):
        """Frames the app wrote back (version 2), parsed; bad records are counted by the deframer."""
        try:
            chunk = os.read(self.fd, 512)
        except BlockingIOError:
            return []
        return list(self.deframer.feed(chunk))

    def send(self, frame) -> bool:
        data = protocol.serial_record(bytes(frame))
        while data:
            n = os.write(self.fd, data)
            data = data[n:]
        return True

    def close(self) -> None:
        os.close(self.fd)


def monotonic_us() -> int:
    return time.monotonic_ns() // 1000
