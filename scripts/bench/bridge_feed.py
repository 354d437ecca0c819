"""The bridge's production hot path, fed at real time without a radio (scripts/bench/run_realtime.sh).

This process is the bridge: board/bridge's Runner (its event loop, heartbeats, the app socket)
with, instead of BlueZ, one notification socket per sensor characteristic, read by the same
NotifyReader, DataFramer and Bridge.forward a board uses with BlueZ's AcquireNotify sockets. A
child process plays bluetoothd: it writes each recorded notification into its socket at the
recording's time (JSON lines as board/bridge's replay reads them). Its CPU is not the bridge's.

The frames' bridge time is the time the child wrote the notification (shared through a small
file), so the app's `--measure-latency` figures run from "the notification reached the board"
to "its page went to the display bus", the bridge's share included.

    PYTHONPATH=board/bridge python3 scripts/bench/bridge_feed.py --socket SOCK --recording RIDE.jsonl
"""
import argparse
import asyncio
import json
import mmap
import os
import socket
import struct
import subprocess
import sys
import time
import types


def recording(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                r = json.loads(line)
                out.append((int(r["t_ms"]), r["ble"].upper(), int(r["uuid"], 16), bytes.fromhex(r["hex"])))
    return out


def feed(args) -> int:
    """The child: writes each notification at its time."""
    rec = recording(args.recording)
    fds = dict(x.split("=") for x in args.fds.split(","))
    socks = {k: socket.socket(fileno=int(fd)) for k, fd in fds.items()}
    fd = os.open(args.clock_file, os.O_RDWR)
    clock = mmap.mmap(fd, 8)
    start = time.monotonic() + 0.5
    for t_ms, address, uuid, payload in rec:
        wait = start + t_ms / 1000 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        struct.pack_into("<Q", clock, 0, time.monotonic_ns() // 1000)
        try:
            socks[f"{address}/{uuid:04x}"].send(payload)
        except OSError:
            return 0  # the bridge is gone
    return 0


def bridge(args) -> int:
    from bikebridge import protocol
    from bikebridge.__main__ import Runner
    from bikebridge.ble import NotifyReader
    from bikebridge.bridge import Bridge
    from bikebridge.transport import SocketTransport

    rec = recording(args.recording)
    keys = sorted({(a, u) for _, a, u, _ in rec})
    pairs = {k: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for k in keys}
    fd = os.open(args.clock_file, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 8)
    clock = mmap.mmap(fd, 8)
    child_ends = {f"{a}/{u:04x}": pairs[(a, u)][1].fileno() for a, u in keys}
    child = subprocess.Popen([sys.executable, __file__, "--feed", "--recording", args.recording, "--clock-file", args.clock_file,
                              "--fds", ",".join(f"{k}={v}" for k, v in child_ends.items())],
                             pass_fds=list(child_ends.values()))
    for _, theirs in pairs.values():
        theirs.close()

    class BenchRunner(Runner):
        async def start_radios(self):
            loop = asyncio.get_running_loop()
            self.bridge.radios |= protocol.RADIO_BLE
            self.readers = []
            for (address, uuid), (ours, _) in pairs.items():
                framer = self.bridge.framer(protocol.BleId(address), uuid)
                self.readers.append(NotifyReader(loop, ours.detach(), self.bridge, framer, lambda why: self.stop.set()))
                self.bridge.link(protocol.BleId(address), 0, protocol.LINK_CONNECTED)

    async def amain() -> int:
        box = {}
        transport = SocketTransport(args.socket, on_connect=lambda t: box["b"].connected())
        b = Bridge(transport.send, 0, clock=lambda: struct.unpack_from("<Q", clock, 0)[0] or time.monotonic_ns() // 1000)
        box["b"] = b
        opts = types.SimpleNamespace(config=None, ble=[], ant=[], adapter=None, no_ble=True, no_ant=True,
                                     stats=args.stats)
        runner = BenchRunner(opts, b, transport)
        transport.on_open, transport.on_close = runner.on_open, runner.on_close
        if not args.forward:
            b.send_fd = transport.send_with_fd  # an app that reads the sockets itself gets them, as on a board
        return await runner.run()

    try:
        return asyncio.run(amain())
    finally:
        child.terminate()
        child.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket")
    ap.add_argument("--recording", required=True)
    ap.add_argument("--clock-file", default=f"/tmp/bridge_feed.clock.{os.getpid()}")
    ap.add_argument("--stats")
    ap.add_argument("--forward", action="store_true",
                    help="keep the sockets: the bridge reads and forwards every notification (as for an app of "
                         "protocol version 1, or before the sockets were handed over)")
    ap.add_argument("--feed", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fds", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.feed:
        return feed(args)
    if not args.socket:
        ap.error("--socket SOCK: the app's bridge socket")
    return bridge(args)


if __name__ == "__main__":
    sys.exit(main())
