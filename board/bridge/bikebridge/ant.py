"""ANT+ through a USB stick with openant: one receive channel per paired device (device number 0
= pair with the first found), extended messages on so every page carries the channel id (and,
where the stick supports it, the RSSI), each 8-byte broadcast page forwarded raw; and on request
a search: a wildcard channel per device type a kind has (kinds.py) for the given time, every device heard reported once per
FOUND_REPORT_S with its device number and signal strength.

openant cannot remove a channel safely (its channels are a list indexed by channel number), so
channels are kept in a pool: closed, given a new id and opened again."""
import logging
import queue
import threading
import time
from typing import Dict, List, Optional, Tuple

from . import kinds, protocol

log = logging.getLogger("bikebridge.ant")

# Channel periods (1/32768 s) per device type, from the ANT+ profiles (kinds.py).
PERIODS = kinds.ANT_PERIODS
SEARCH_TYPES = kinds.ANT_TYPES
RF_FREQUENCY = 57
FOUND_REPORT_S = 2.0
EXT_CHANNEL_ID, EXT_RSSI, EXT_TIMESTAMP = 0x80, 0x40, 0x20
LIB_CONFIG_ID, LIB_CONFIG_CHANNEL_ID_AND_RSSI = 0x6E, EXT_CHANNEL_ID | EXT_RSSI


def parse_extended(data) -> Tuple[Optional[protocol.AntId], Optional[int]]:
    """The channel id and RSSI (dBm) that follow the 8-byte page in an extended message: byte 8
    is the flag byte; 0x80: device number (u16), device type, transmission type; then 0x40:
    measurement type, RSSI (s8), threshold. Either may be absent (None)."""
    if len(data) < 9:
        return None, None
    flags = data[8]
    i = 9
    who = rssi = None
    if flags & EXT_CHANNEL_ID:
        if len(data) < i + 4:
            return None, None
        who = protocol.AntId(data[i] | data[i + 1] << 8, data[i + 2], data[i + 3])
        i += 4
    if flags & EXT_RSSI and len(data) >= i + 3:
        r = data[i + 1]
        rssi = r - 256 if r > 127 else r
    return who, rssi


def channel_id_from(data, fallback: protocol.AntId) -> protocol.AntId:
    who, _ = parse_extended(data)
    return who if who is not None else fallback


class AntRadio:
    """One ANT+ stick. `start()` runs openant in its own thread; `set_paired` and `search` may
    be called from any thread: the work is queued to a control thread (openant's calls block
    until the stick answers)."""

    def __init__(self, bridge) -> None:
        self.bridge = bridge
        self.node = None
        self.pool: List = []
        self.paired: Dict[Tuple[int, int, int], object] = {}
        self.searching: List = []
        self.found: Dict[Tuple[int, int], float] = {}
        self.search_until = 0.0
        self.work: "queue.Queue" = queue.Queue()
        self.failed: Optional[str] = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="ant", daemon=True).start()

    def set_paired(self, devices) -> None:
        self.work.put(("paired", list(devices)))

    def search(self, seconds: int) -> None:
        self.work.put(("search", seconds))

    # ---------------------------------------------------------------- the stick's threads

    def _run(self) -> None:
        try:
            from openant.devices import ANTPLUS_NETWORK_KEY  # lazy: tests and BLE-only boards need no openant
            from openant.easy.node import Node
            self.node = Node()
            self.node.set_network_key(0x00, ANTPLUS_NETWORK_KEY)
        except Exception as e:  # no openant, no stick, no permission: the BLE side goes on
            self.failed = f"{type(e).__name__}: {e}"
            log.error("ANT+ stick unusable (%s): check it is plugged in and the udev rule gives access", self.failed)
            return
        self._enable_rssi()
        threading.Thread(target=self._control, name="ant-control", daemon=True).start()
        try:
            self.node.start()
        finally:
            self.node.stop()

    def _enable_rssi(self) -> None:
        try:
            from openant.base.message import Message
            self.node.ant.write_message(Message(LIB_CONFIG_ID, [0x00, LIB_CONFIG_CHANNEL_ID_AND_RSSI]))
        except Exception as e:  # older sticks: channel ids come with enable_extended_messages anyway
            log.info("no RSSI from this stick (%s)", e)

    def _control(self) -> None:
        while True:
            try:
                what, arg = self.work.get(timeout=1.0)
            except queue.Empty:
                if self.searching and time.monotonic() >= self.search_until:
                    self._stop_search()
                continue
            try:
                if what == "paired":
                    self._apply_paired(arg)
                elif what == "search":
                    self._start_search(arg) if arg > 0 else self._stop_search()
            except Exception as e:
                log.error("ANT+ %s: %s", what, e)

    def _channel(self, device_type: int, number: int, trans: int, handler):
        from openant.easy.channel import Channel
        ch = self.pool.pop() if self.pool else self.node.new_channel(Channel.Type.BIDIRECTIONAL_RECEIVE, 0x00, 0x01)
        ch.on_broadcast_data = handler
        ch.on_burst_data = handler
        ch.set_id(number, device_type, trans)
        ch.enable_extended_messages(1)
        ch.set_search_timeout(0xFF)
        ch.set_period(PERIODS[device_type])
        ch.set_rf_freq(RF_FREQUENCY)
        ch.open()
        return ch

    def _release(self, ch) -> None:
        try:
            ch.close()
        finally:
            ch.on_broadcast_data = ch.on_burst_data = lambda data: None
            self.pool.append(ch)

    def _apply_paired(self, devices) -> None:
        ordered = list(dict.fromkeys(tuple(d) for d in devices))  # the config's order
        wanted = set(ordered)
        for key in [k for k in self.paired if k not in wanted]:
            self._release(self.paired.pop(key))
            self.bridge.link(protocol.AntId(key[1], key[0], key[2]), key[0], protocol.LINK_DISCONNECTED)
            log.info("ANT+ channel closed: type %d number %d", key[0], key[1])
        for device_type, number, trans in [k for k in ordered if k not in self.paired]:
            fallback = protocol.AntId(number, device_type, trans)

            def on_data(data, fallback=fallback, device_type=device_type):
                self.bridge.notify(channel_id_from(data, fallback), device_type, bytes(data[:8]))

            self.paired[(device_type, number, trans)] = self._channel(device_type, number, trans, on_data)
            self.bridge.link(fallback, device_type, protocol.LINK_SEARCHING)
            log.info("ANT+ channel open: type %d number %d", device_type, number)

    def _start_search(self, seconds: int) -> None:
        self.search_until = time.monotonic() + seconds
        self.found = {}
        if not self.searching:
            free = max(0, getattr(self.node, "max_channels", 8) - len(self.paired))
            for device_type in SEARCH_TYPES[:free]:
                self.searching.append(self._channel(device_type, 0, 0, lambda data, t=device_type: self.heard(t, data)))
            if free < len(SEARCH_TYPES):
                log.warning("ANT+ search: %d channels free, searching only device types %s", free, SEARCH_TYPES[:free])
        self.bridge.scan_state(True, protocol.RADIO_ANT, len(self.found))

    def _stop_search(self) -> None:
        while self.searching:
            self._release(self.searching.pop())
        self.bridge.scan_state(False, protocol.RADIO_ANT, len(self.found))

    def heard(self, device_type: int, data) -> None:
        """A page on a search channel: report the device (once per FOUND_REPORT_S)."""
        who, rssi = parse_extended(data)
        if who is None:
            self.bridge.count_bad("ant_no_channel_id", protocol.AntId(0, device_type, 0), device_type,
                                  "a search page without the extended channel id")
            return
        key = (who.device_number, who.device_type)
        now = time.monotonic()
        if now - self.found.get(key, -1e9) < FOUND_REPORT_S:
            return
        self.found[key] = now
        self.bridge.found(who, who.device_type, rssi, "")


def run(bridge, devices) -> None:
    """The paired channels only, blocking in openant's loop (the bridge before searching)."""
    radio = AntRadio(bridge)
    from openant.devices import ANTPLUS_NETWORK_KEY
    from openant.easy.node import Node
    radio.node = Node()
    radio.node.set_network_key(0x00, ANTPLUS_NETWORK_KEY)
    radio._apply_paired(devices)
    try:
        radio.node.start()
    finally:
        radio.node.stop()
