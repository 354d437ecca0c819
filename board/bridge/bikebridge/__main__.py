"""python -m bikebridge --socket /run/bikecomputer/bridge.sock --config /etc/bikecomputer/config.toml

Forwards raw sensor payloads to the bike computer over its Unix socket (or a serial line). The
paired sensors are the config file's [[sensor]] tables (read again whenever the file changes),
plus any given with --ble / --ant. BLE goes through BlueZ; an ANT+ USB stick is used when one
is plugged in (Dynastream's USB vendor id) or an ANT+ sensor is paired. The app can ask for a
search (protocol version 2): the sensors found are reported to it."""
import argparse
import asyncio
import glob
import json
import logging
import os
import signal
import sys
import threading
import time

from . import kinds, protocol, replay
from .bridge import Bridge
from .transport import SerialTransport, SocketTransport

log = logging.getLogger("bikebridge")
DYNASTREAM_USB_VENDOR = "0fcf"


def parse_ant(text: str):
    """TYPE[:NUMBER[:TRANSMISSION]], e.g. 120 (any heart-rate strap) or 11:12345."""
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use TYPE[:NUMBER[:TRANSMISSION]], e.g. 120 or 11:12345") from None
    if parts[0] not in kinds.ANT_TYPES:
        raise argparse.ArgumentTypeError(f"ANT+ device type {parts[0]} unsupported: use one of {', '.join(map(str, kinds.ANT_TYPES))}")
    return parts[0], parts[1] if len(parts) > 1 else 0, parts[2] if len(parts) > 2 else 0


def ant_stick_present() -> bool:
    for p in glob.glob("/sys/bus/usb/devices/*/idVendor"):
        try:
            with open(p) as f:
                if f.read().strip() == DYNASTREAM_USB_VENDOR:
                    return True
        except OSError:
            pass
    return False


class Runner:
    """The bridge's event loop: the transport, heartbeats, the radios, the config watch."""

    def __init__(self, args, bridge: Bridge, transport) -> None:
        self.args = args
        self.bridge = bridge
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.ble = None
        self.ble_start = None  # the task connecting to BlueZ
        self.ant = None
        self.watch = None
        self.paired = None
        self.stop = asyncio.Event()
        self.hb_handle = None
        self.radios_starting = True
        self.pending_scan = None
        bridge.rearm = self.arm_heartbeat
        bridge.on_scan_request = self.scan_request
        bridge.on_reload = self.reload

    # ---------------------------------------------------------------- heartbeats

    def arm_heartbeat(self) -> None:
        """Fires HEARTBEAT_S after the last frame; pushed back from the send path while frames
        flow (Bridge.forward), so it wakes the process only when nothing else was sent."""
        now = self.loop.time()
        if self.hb_handle is not None:
            self.hb_handle.cancel()
        self.hb_handle = self.loop.call_at(now + Bridge.HEARTBEAT_S, self.heartbeat_due)
        self.bridge.push_after = now + Bridge.HEARTBEAT_S - Bridge.HEARTBEAT_PUSH_S

    def heartbeat_due(self) -> None:
        self.hb_handle = None
        if time.monotonic() - self.bridge.last_send_s >= Bridge.HEARTBEAT_S - 0.05 or self.transport_closed():
            self.bridge.heartbeat()  # also reconnects to an app that restarted
        self.arm_heartbeat()

    def transport_closed(self) -> bool:
        return isinstance(self.transport, SocketTransport) and self.transport.sock is None

    # ---------------------------------------------------------------- what the app sends

    def on_open(self, sock) -> None:
        self.loop.add_reader(sock.fileno(), self.app_readable)

    def on_close(self, sock) -> None:
        try:
            self.loop.remove_reader(sock.fileno())
        except (ValueError, OSError):
            pass
        self.bridge.app_gone()

    def app_readable(self) -> None:
        for _ in range(16):
            data = self.transport.receive()
            if not data:
                return
            self.bridge.from_app(data)

    def serial_readable(self) -> None:
        for f in self.transport.receive_frames():
            self.bridge.from_app_frame(f)

    # ---------------------------------------------------------------- sensors and searches

    def load_paired(self):
        from . import config
        paired = config.Paired(ble=[a.upper() for a in self.args.ble], ant=list(self.args.ant))
        if self.args.config:
            try:
                from_file = config.load(self.args.config)
            except config.ConfigError as e:
                log.error("cannot read the paired sensors: %s (keeping the ones before)", e)
                self.bridge.config_state(False, e.line, e.why)
                return self.paired
            if not self.bridge.config[0]:
                log.warning("%s can be read again", self.args.config)
            self.bridge.config_state(True)
            paired.ble += [a for a in from_file.ble if a not in paired.ble]
            paired.ant += [d for d in from_file.ant if d not in paired.ant]
        return paired

    def reload(self) -> None:
        paired = self.load_paired()
        if paired is None or paired == self.paired:
            return
        log.info("paired sensors: BLE %s, ANT+ %s", paired.ble or "none", paired.ant or "none")
        self.paired = paired
        if self.ble is not None:
            self.ble.set_paired(paired.ble)
        if paired.ant and self.ant is None and not self.args.no_ant:
            self.start_ant()
        if self.ant is not None:
            self.ant.set_paired(paired.ant)

    def start_ant(self) -> None:
        from .ant import AntRadio
        # The radio's threads reach the bridge (its transport, this loop's readers) only through
        # this loop: asyncio and the transport are not thread-safe.
        self.ant = AntRadio(self.bridge, post=self.loop.call_soon_threadsafe, stick_present=ant_stick_present)
        self.bridge.radios |= protocol.RADIO_ANT
        self.ant.start()

    def scan_request(self, start: bool, radios: int, seconds: int) -> None:
        if self.radios_starting:
            self.pending_scan = (start, radios, seconds)  # answered once the radios are up
            return
        seconds = seconds if start else 0
        log.info("search %s (radios %d, %d s)", "started" if start else "stopped", radios, seconds)
        searched = 0
        if radios & protocol.RADIO_BLE and self.ble is not None:
            self.ble.search(seconds)
            searched |= protocol.RADIO_BLE
        if radios & protocol.RADIO_ANT and self.ant is not None:
            self.ant.search(seconds)
            searched |= protocol.RADIO_ANT
        if start and not searched:
            self.bridge.scan_state(False, 0, 0)  # nothing to search with: say so at once

    # ---------------------------------------------------------------- stats

    def write_stats(self) -> None:
        stats = self.bridge.stats()
        if self.ble is not None:
            stats["ble"] = {"sensors": {a: {"state": s.state, "sessions": s.sessions} for a, s in self.ble.sensors.items()},
                            "bluez_signals": self.ble.bluez.signals, "bluetoothd_restarts": self.ble.bluez.restarts}
        if self.ant is not None:
            stats["ant"] = {"failed": self.ant.failed}
        if isinstance(self.transport, SocketTransport):
            stats["app_connections"] = self.transport.connects
        log.info("stats %s", json.dumps(stats))
        if self.args.stats:
            tmp = self.args.stats + ".tmp"
            with open(tmp, "w") as f:
                json.dump(stats, f)
            os.replace(tmp, self.args.stats)

    # ---------------------------------------------------------------- main

    async def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self.stop.set)
        self.loop.add_signal_handler(signal.SIGUSR1, self.write_stats)
        if isinstance(self.transport, SerialTransport):
            os.set_blocking(self.transport.fd, False)
            self.loop.add_reader(self.transport.fd, self.serial_readable)
            self.bridge.connected()
        else:
            self.transport.connect()
        self.arm_heartbeat()
        await self.start_radios()
        self.radios_starting = False
        if self.pending_scan:
            self.scan_request(*self.pending_scan)
            self.pending_scan = None
        self.reload()
        if self.args.config:
            from . import config
            self.watch = config.Watch(self.args.config, self.reload)
            if self.watch.fd is not None:
                self.loop.add_reader(self.watch.fd, self.watch.readable)
            else:
                self.loop.create_task(self.poll_config())
        await self.stop.wait()
        self.write_stats()
        return 0

    async def start_radios(self) -> None:
        if not self.args.no_ble and (self.args.config or self.args.ble):
            from .ble import BleRadio
            self.ble = BleRadio(self.bridge, self.args.adapter)
            self.bridge.radios |= protocol.RADIO_BLE
            # BlueZ may come later, or never (a board without Bluetooth, no D-Bus): the paired
            # sensors, the config file's watch and ANT+ do not wait for it; the BLE sensors and
            # searches wait for the adapter (BleRadio.wait_adapter).
            self.ble_start = self.loop.create_task(self.ble.start(), name="BlueZ")
        if not self.args.no_ant and ant_stick_present():
            self.start_ant()

    async def poll_config(self) -> None:
        from . import config
        while True:
            await asyncio.sleep(config.POLL_S)
            self.watch.poll()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bikebridge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--socket", help="the app's SOCK_SEQPACKET socket path")
    out.add_argument("--serial", help="a tty to write COBS-framed records to")
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--config", metavar="FILE", help="the bike computer's config file: its [[sensor]] tables are the "
                                                     "paired sensors, read again when the file changes")
    ap.add_argument("--ble", action="append", default=[], metavar="ADDRESS", help="a BLE sensor to connect to (besides the config's)")
    ap.add_argument("--ant", action="append", default=[], type=parse_ant, metavar="TYPE[:NUMBER[:TX]]")
    ap.add_argument("--adapter", help="the Bluetooth adapter, e.g. hci0 (default: the first one)")
    ap.add_argument("--no-ble", action="store_true", help="do not use BlueZ")
    ap.add_argument("--no-ant", action="store_true", help="do not use an ANT+ stick")
    ap.add_argument("--stats", metavar="FILE", help="write counters as JSON here on SIGUSR1 and at exit")
    ap.add_argument("--replay", metavar="FILE", help="send a recording (JSON lines) instead of using radios")
    ap.add_argument("--realtime", action="store_true",
                    help="with --replay: send each record at its recorded time, stamped with the current time")
    ap.add_argument("--repeat", action="store_true", help="with --replay --realtime: start again at the end, forever")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")

    if args.repeat and not args.realtime:
        ap.error("--repeat needs --realtime (a recording sent at once, forever, would flood the app)")
    if args.replay:
        bridge_box = {}
        transport = SocketTransport(args.socket, on_connect=lambda t: bridge_box["b"].connected()) if args.socket \
            else SerialTransport(args.serial, args.baud)
        bridge = Bridge(transport.send, 0)
        bridge_box["b"] = bridge
        if args.serial:
            bridge.hello()
        with open(args.replay) as f:
            if args.realtime:
                def heartbeats():
                    while True:
                        time.sleep(Bridge.HEARTBEAT_S)
                        bridge.heartbeat()
                threading.Thread(target=heartbeats, daemon=True).start()
                # A live-like sensor feed: the app restarting meanwhile loses frames, as with radios.
                for frame in replay.paced(f, args.repeat, lambda: time.monotonic_ns() // 1000, time.sleep):
                    bridge.send(frame)
            else:
                for frame in replay.frames(f):
                    bridge.send(frame)
        return 0

    if not args.config and not args.ant and not args.ble:
        ap.error("nothing to do: give --config FILE (its [[sensor]] tables), --ble ADDRESS, --ant TYPE[:NUMBER], "
                 "or --replay FILE")

    async def amain() -> int:
        bridge_box = {}
        if args.socket:
            transport = SocketTransport(args.socket, on_connect=lambda t: bridge_box["b"].connected())
        else:
            transport = SerialTransport(args.serial, args.baud)
        bridge = Bridge(transport.send, 0)
        bridge_box["b"] = bridge
        runner = Runner(args, bridge, transport)
        if args.socket:
            transport.on_open, transport.on_close = runner.on_open, runner.on_close
            bridge.send_fd = transport.send_with_fd
        return await runner.run()

    return asyncio.run(amain())


if __name__ == "__main__":
    sys.exit(main())
