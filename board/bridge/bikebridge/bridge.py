"""The radio-independent part of the bridge: turns notifications into frames, says hello, sends
heartbeats, and tracks link states. Radios call `notify` and `link`; tests and `replay` do too."""
import os
import threading
from typing import Callable, Optional

from . import protocol
from .transport import monotonic_us


class Bridge:
    HEARTBEAT_S = 1.0

    def __init__(self, send: Callable[[bytes], bool], radios: int, clock: Callable[[], int] = monotonic_us,
                 bridge_id: Optional[int] = None) -> None:
        self._send = send
        self.radios = radios
        self.clock = clock
        self.bridge_id = bridge_id if bridge_id is not None else int.from_bytes(os.urandom(4), "little")
        self.sequence = 0
        self.sent = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def send(self, frame: bytes) -> None:
        with self.lock:
            if self._send(frame):
                self.sent += 1
            else:
                self.dropped += 1

    def hello(self) -> None:
        self.send(protocol.hello(self.clock(), self.radios, self.bridge_id))

    def heartbeat(self) -> None:
        self.sequence += 1
        self.send(protocol.heartbeat(self.clock(), self.sequence))

    def notify(self, sensor: protocol.SensorId, profile: int, payload: bytes) -> None:
        """A raw payload: bleak's notification value, or openant's 8-byte broadcast page."""
        self.send(protocol.data(self.clock(), sensor, profile, bytes(payload)))

    def link(self, sensor: protocol.SensorId, profile: int, state: int) -> None:
        self.send(protocol.link(self.clock(), sensor, profile, state))
