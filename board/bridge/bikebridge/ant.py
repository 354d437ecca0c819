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
from typing import Callable, Dict, List, Optional, Tuple

from . import kinds, protocol

log = logging.getLogger("bikebridge.ant")

# Channel periods (1/32768 s) per device type, from the ANT+ profiles (kinds.py).
PERIODS = kinds.ANT_PERIODS
SEARCH_TYPES = kinds.ANT_TYPES
RF_FREQUENCY = 57
FOUND_REPORT_S = 2.0
EXT_CHANNEL_ID, EXT_RSSI, EXT_TIMESTAMP = 0x80, 0x40, 0x20
LIB_CONFIG_ID, LIB_CONFIG_CHANNEL_ID_AND_RSSI = 0x6E, EXT_CHANNEL_ID | EXT_RSSI
# A failed stick is opened again after these delays, the next one after each failure in a row
# (a session that ran STABLE_S resets the count); its health is looked at every HEALTH_CHECK_S.
RESTART_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0)
STABLE_S = 60.0
HEALTH_CHECK_S = 1.0
# openant logs a USB error and reads again, forever (a stick that was reset or re-enumerated
# answers nothing but errors): this many in one health check end the session.
USB_ERRORS_MAX = 10
OPENANT_LOGGER = "openant.base.ant"
CONTROL_JOIN_S = 15.0


class UsbErrorCounter(logging.Handler):
    """Counts the USB errors openant's reader logs (and otherwise only logs) for the radio."""

    def __init__(self, radio) -> None:
        super().__init__(logging.WARNING)
        self.radio = radio

    def emit(self, record) -> None:
        if "USBError" in record.getMessage():
            self.radio.usb_errors += 1


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
    until the stick answers).

    Everything the radio tells the bridge goes through `post` (the bridge's event loop's
    `call_soon_threadsafe`: the bridge, its transport and asyncio are used from that loop's
    thread only; the default calls at once, for a caller without a loop).

    A stick that fails (openant's loop raises or ends, its reader thread dies, USB errors keep
    coming, the stick leaves the USB bus) ends the radio's session: its channels are reported
    disconnected, and the stick is opened again after RESTART_DELAYS_S (longer after each
    failure in a row) with the paired channels of the moment, for as long as the bridge runs.
    Only a missing openant is final."""

    def __init__(self, bridge, post: Optional[Callable] = None, stick_present: Optional[Callable[[], bool]] = None,
                 restart_delays=None) -> None:
        self.bridge = bridge
        self.post = post or (lambda fn, *args: fn(*args))
        self.stick_present = stick_present
        self.restart_delays = tuple(restart_delays or RESTART_DELAYS_S)
        self.node = None
        self.pool: List = []
        self.paired: Dict[Tuple[int, int, int], object] = {}
        self.searching: List = []
        self.found: Dict[Tuple[int, int], float] = {}
        self.search_until = 0.0
        self.work: "queue.Queue" = queue.Queue()
        self.failed: Optional[str] = None
        self.wanted: List = []  # the paired devices last asked for: applied again after a restart
        self.sessions = 0  # times the stick was opened
        self.restarts = 0  # times it was opened again after a failure
        self.lost: Optional[str] = None  # why the current session is ending
        self.usb_errors = 0  # openant's USB errors in the current session (UsbErrorCounter)
        self.stopping = threading.Event()
        self.usb_error_counter = UsbErrorCounter(self)
        self.control: Optional[threading.Thread] = None

    def start(self) -> None:
        logging.getLogger(OPENANT_LOGGER).addHandler(self.usb_error_counter)
        threading.Thread(target=self._run, name="ant", daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        self._end_session("stopped")

    def set_paired(self, devices) -> None:
        self.wanted = list(devices)
        self.work.put(("paired", list(devices)))

    def search(self, seconds: int) -> None:
        self.work.put(("search", seconds))

    def _tell(self, method, *args) -> None:
        """A call on the bridge, made on its loop's thread."""
        try:
            self.post(method, *args)
        except RuntimeError:  # the loop closed: the bridge is exiting
            pass

    # ---------------------------------------------------------------- the stick's threads

    def _run(self) -> None:
        failures = 0
        told = None
        while not self.stopping.is_set():
            opened = time.monotonic()
            why = self._session()
            if why is None or self.stopping.is_set():
                return
            self._channels_lost()
            failures = 1 if time.monotonic() - opened >= STABLE_S else failures + 1
            delay = self.restart_delays[min(failures, len(self.restart_delays)) - 1]
            # Once per reason: a stick left unplugged is tried every 30 s without filling the log.
            (log.error if why != told else log.debug)(
                "ANT+ stick failed (%s): its channels are closed; opening it again in %.0f s", why, delay)
            told = why
            if self.stopping.wait(delay):
                return
            self.restarts += 1

    def _session(self) -> Optional[str]:
        """Opens the stick and runs openant's loop until the stick fails: why it failed, or None
        when it never can work (no openant) or the radio was stopped."""
        try:
            from openant.devices import ANTPLUS_NETWORK_KEY  # lazy: tests and BLE-only boards need no openant
            from openant.easy.node import Node
        except ImportError as e:
            self.failed = f"{type(e).__name__}: {e}"
            log.error("ANT+ unusable (%s): the bridge's venv lacks openant (board/bridge/requirements-board.txt)", self.failed)
            return None
        self.lost = None
        self.usb_errors = 0
        try:
            node = Node()
            node.set_network_key(0x00, ANTPLUS_NETWORK_KEY)
        except Exception as e:  # no stick, no permission: the BLE side goes on; tried again later
            self.failed = f"{type(e).__name__}: {e}"
            if self.sessions == 0:
                log.error("ANT+ stick unusable (%s): check it is plugged in and the udev rule gives access", self.failed)
            return self.failed
        # The last session's control thread may still be in a call on the old stick (openant
        # times them out): the new session's channels are not to meet it.
        if self.control is not None:
            self.control.join(CONTROL_JOIN_S)
        self.node = node
        self.failed = None
        self.sessions += 1
        self.paired, self.pool, self.searching = {}, [], []
        self._enable_rssi()
        if self.sessions > 1:
            log.info("ANT+ stick open again (session %d)", self.sessions)
        self.control = threading.Thread(target=self._control, args=(node,), name="ant-control", daemon=True)
        self.control.start()
        try:
            node.start()
            return self.lost or "openant's loop ended"
        except Exception as e:
            return self.lost or f"{type(e).__name__}: {e}"
        finally:
            self._end_session(self.lost or "ended")

    def _end_session(self, why: str) -> None:
        node = self.node
        if node is None:
            return
        if self.lost is None:
            self.lost = why
        try:
            node.stop()  # node.start() returns
        except Exception as e:
            log.warning("ANT+ stick: stopping openant: %s", e)
        if self.node is node:
            self.node = None

    def _channels_lost(self) -> None:
        for key in list(self.paired):
            self._tell(self.bridge.link, protocol.AntId(key[1], key[0], key[2]), key[0], protocol.LINK_DISCONNECTED)
        if self.searching:
            self._tell(self.bridge.scan_state, False, protocol.RADIO_ANT, len(self.found))
        self.paired, self.pool, self.searching = {}, [], []

    def health(self, node) -> Optional[str]:
        """Why the open stick no longer works, or None."""
        reader = getattr(getattr(node, "ant", None), "_worker_thread", None)
        if reader is not None and not reader.is_alive():
            return "openant's reader thread ended"
        errors, self.usb_errors = self.usb_errors, 0
        if errors >= USB_ERRORS_MAX:
            return f"{errors} USB errors in {HEALTH_CHECK_S:.0f} s"
        if self.stick_present is not None and not self.stick_present():
            return "the stick left the USB bus"
        return None

    def _enable_rssi(self) -> None:
        try:
            from openant.base.message import Message
            self.node.ant.write_message(Message(LIB_CONFIG_ID, [0x00, LIB_CONFIG_CHANNEL_ID_AND_RSSI]))
        except Exception as e:  # older sticks: channel ids come with enable_extended_messages anyway
            log.info("no RSSI from this stick (%s)", e)

    def _control(self, node) -> None:
        """The session's control thread: the paired channels of the moment, then the queued
        work; once a second the stick's health (a failing stick ends the session)."""
        try:
            self._apply_paired(self.wanted)
        except Exception as e:
            log.error("ANT+ paired: %s", e)
        while self.node is node:
            try:
                what, arg = self.work.get(timeout=HEALTH_CHECK_S)
            except queue.Empty:
                why = self.health(node)
                if why is not None:
                    self._end_session(why)
                    return
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
            self._tell(self.bridge.link, protocol.AntId(key[1], key[0], key[2]), key[0], protocol.LINK_DISCONNECTED)
            log.info("ANT+ channel closed: type %d number %d", key[0], key[1])
        for device_type, number, trans in [k for k in ordered if k not in self.paired]:
            fallback = protocol.AntId(number, device_type, trans)

            def on_data(data, fallback=fallback, device_type=device_type):
                self._tell(self.bridge.notify, channel_id_from(data, fallback), device_type, bytes(data[:8]))

            self.paired[(device_type, number, trans)] = self._channel(device_type, number, trans, on_data)
            self._tell(self.bridge.link, fallback, device_type, protocol.LINK_SEARCHING)
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
        self._tell(self.bridge.scan_state, True, protocol.RADIO_ANT, len(self.found))

    def _stop_search(self) -> None:
        while self.searching:
            self._release(self.searching.pop())
        self._tell(self.bridge.scan_state, False, protocol.RADIO_ANT, len(self.found))

    def heard(self, device_type: int, data) -> None:
        """A page on a search channel: report the device (once per FOUND_REPORT_S)."""
        who, rssi = parse_extended(data)
        if who is None:
            self._tell(self.bridge.count_bad, "ant_no_channel_id", protocol.AntId(0, device_type, 0), device_type,
                                  "a search page without the extended channel id")
            return
        key = (who.device_number, who.device_type)
        now = time.monotonic()
        if now - self.found.get(key, -1e9) < FOUND_REPORT_S:
            return
        self.found[key] = now
        self._tell(self.bridge.found, who, who.device_type, rssi, "")


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
