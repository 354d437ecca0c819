"""python -m bikebridge --socket /run/bikecomputer/bridge.sock --ble C0:FF:EE:00:11:22 --ant 120:0

Forwards raw sensor payloads to the bike computer over its Unix socket (or a serial line)."""
import argparse
import asyncio
import logging
import sys
import threading
import time

from . import protocol, replay
from .bridge import Bridge
from .transport import SerialTransport, SocketTransport


def parse_ant(text: str):
    """TYPE[:NUMBER[:TRANSMISSION]], e.g. 120 (any heart-rate strap) or 11:12345."""
    parts = [int(p) for p in text.split(":")]
    if parts[0] not in (120, 11, 121, 122, 123):
        raise argparse.ArgumentTypeError(f"ANT+ device type {parts[0]} unsupported: use 120, 11, 121, 122 or 123")
    return parts[0], parts[1] if len(parts) > 1 else 0, parts[2] if len(parts) > 2 else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bikebridge", description=__doc__)
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--socket", help="the app's SOCK_SEQPACKET socket path")
    out.add_argument("--serial", help="a tty to write COBS-framed records to")
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--ble", action="append", default=[], metavar="ADDRESS", help="a BLE sensor to connect to")
    ap.add_argument("--ant", action="append", default=[], type=parse_ant, metavar="TYPE[:NUMBER[:TX]]")
    ap.add_argument("--replay", metavar="FILE", help="send a recording (JSON lines) instead of using radios")
    ap.add_argument("--realtime", action="store_true",
                    help="with --replay: send each record at its recorded time, stamped with the current time")
    ap.add_argument("--repeat", action="store_true", help="with --replay --realtime: start again at the end, forever")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")

    radios = (protocol.RADIO_ANT if args.ant else 0) | (protocol.RADIO_BLE if args.ble else 0)
    bridge_box = {}
    if args.socket:
        transport = SocketTransport(args.socket, on_connect=lambda t: t.sock.send(
            protocol.hello(int(time.monotonic_ns() // 1000), radios, bridge_box["b"].bridge_id)))
    else:
        transport = SerialTransport(args.serial, args.baud)
    bridge = Bridge(transport.send, radios)
    bridge_box["b"] = bridge
    if args.serial:
        bridge.hello()

    if args.repeat and not args.realtime:
        ap.error("--repeat needs --realtime (a recording sent at once, forever, would flood the app)")
    def heartbeats():
        while True:
            time.sleep(Bridge.HEARTBEAT_S)
            bridge.heartbeat()

    if args.replay:
        with open(args.replay) as f:
            if args.realtime:
                threading.Thread(target=heartbeats, daemon=True).start()
                # A live-like sensor feed: the app restarting meanwhile loses frames, as with radios.
                for frame in replay.paced(f, args.repeat, lambda: time.monotonic_ns() // 1000, time.sleep):
                    bridge.send(frame)
            else:
                for frame in replay.frames(f):
                    bridge.send(frame)
        return 0

    if not args.ant and not args.ble:
        ap.error("nothing to do: give --ble ADDRESS and/or --ant TYPE[:NUMBER], or --replay FILE")

    threading.Thread(target=heartbeats, daemon=True).start()
    if args.ant:
        from . import ant
        threading.Thread(target=ant.run, args=(bridge, args.ant), daemon=True).start()
    if args.ble:
        from . import ble
        asyncio.run(ble.run(bridge, args.ble))
    else:
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
