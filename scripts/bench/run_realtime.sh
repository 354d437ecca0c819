#!/usr/bin/env bash
# `bikecomputer run` at real time against the Python bridge replaying a synthetic ride (heart rate
# 1 Hz, power, speed and cadence 4 Hz each, BLE), recording a ride (docs/performance.md):
#   CPU share of one core, peak RSS, disk bytes written per minute over SECONDS (default 300), and
#   the time from exec until the control socket answers (the nearest observable to "first frame
#   sent" with --no-display; the run loop draws its first frame before it serves the socket).
#     bash scripts/bench/run_realtime.sh [SECONDS]
# Needs: python3; a C compiler for the floor (optional).
# GPS=1 adds a GPS (docs/gps.md): Debian's gpsd, fed the Edge 500 ride's own positions as NMEA at
# 1 Hz through a pty (Tests/oracle/gpsd_feed.py; needs gpsd, python3-gps and the .venv's fitdecode),
# and `[gps] enabled` in the app's config. The app's CPU is measured, not gpsd's.
# Prints the wake-up floor for comparison (scripts/bench/wakeup_floor.c) at the end.
# The bridge is board/bridge's own code (protocol, Bridge, SocketTransport), paced in real time.
# Measures with /proc/PID/stat (utime+stime), /proc/PID/status (VmHWM) and /proc/PID/io
# (write_bytes: bytes the process caused to be written to storage).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-300}
# The binary a board runs (docs/board.md): release, the Swift runtime linked in statically. It
# is built in its own scratch directory (.build/static) so the other release products stay as
# they are; the first build takes a few minutes. BIKE_BIN=DIR measures another build instead.
if [ -z "${BIKE_BIN:-}" ]; then
    echo "run_realtime.sh: building the board's binary (swift build -c release --static-swift-stdlib, .build/static)" >&2
    swift build -c release --static-swift-stdlib --product bikecomputer --scratch-path .build/static 2>&1 | tail -n 1 >&2
    bin=$(swift build -c release --static-swift-stdlib --scratch-path .build/static --show-bin-path)
else
    bin=$BIKE_BIN
fi
[ -x "$bin/bikecomputer" ] || { echo "run_realtime.sh: no bikecomputer in $bin: build it with swift build -c release --product bikecomputer" >&2; exit 1; }
"$bin/bikecomputer" run --help 2>/dev/null | grep -q -- "--no-display" \
    || { echo "run_realtime.sh: this bikecomputer has no \`run --no-display\` yet (branch run not merged)" >&2; exit 1; }
python=$(command -v python3)
tmp=$(mktemp -d)
cleanup() { [ -n "${app:-}" ] && kill "$app" 2>/dev/null || true; [ -n "${bridge:-}" ] && kill "$bridge" 2>/dev/null || true; [ -n "${gpsd_feeder:-}" ] && kill -- -"$gpsd_feeder" 2>/dev/null || kill "${gpsd_feeder:-0}" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/data"
cat >"$tmp/config.toml" <<CONF
[bridge]
transport = "unix"
path = "$tmp/bridge.sock"

[[sensor]]
transport = "ble"
role = "heart_rate"
ble_address = "C0:FF:EE:00:00:01"

[[sensor]]
transport = "ble"
role = "power"
ble_address = "C0:FF:EE:00:00:02"

[[sensor]]
transport = "ble"
role = "speed"
ble_address = "C0:FF:EE:00:00:03"

[[sensor]]
transport = "ble"
role = "cadence"
ble_address = "C0:FF:EE:00:00:04"

[storage]
data_dir = "$tmp/data"

[control]
socket = "$tmp/control.sock"
CONF
if [ "${GPS:-0}" = 1 ]; then
    gps_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '\n[gps]\nenabled = true\ngpsd = "127.0.0.1:%s"\n' "$gps_port" >>"$tmp/config.toml"
    .venv/bin/python Tests/oracle/gps_nmea.py ../shared/fixtures/rides/garmin-edge-500-activity.fit "$tmp/gps.log" \
        --limit $((seconds + 60)) >&2
    # gpsd starts at once; the feed begins when "go" arrives (after the app has connected), one
    # epoch (5 sentences) a second.
    (sleep 4; echo go; sleep $((seconds + 120))) | /usr/bin/python3 Tests/oracle/gpsd_feed.py "$gps_port" 0.2 "$tmp/gps.log" \
        >"$tmp/gpsd.log" 2>&1 &
    gpsd_feeder=$!
    sleep 1
fi
# The replay: the same payload layouts as Simulator/Sources/Simulation/SensorPayloads.swift.
"$python" - "$seconds" >"$tmp/ride.jsonl" <<'PY'
import json, sys, math
end_ms = (int(sys.argv[1]) + 20) * 1000
def le16(v): return [v & 0xff, (v >> 8) & 0xff]
def le32(v): return le16(v & 0xffff) + le16((v >> 16) & 0xffff)
wheel = crank = 0.0
wheel_t = crank_t = 0  # event times (1/1024 s) of the last whole revolution, as a sensor reports them
def advance(revs, rate, t_ms, last_t):
    """Revolutions after 250 ms more at `rate` rev/s, and the time of the last whole one."""
    before = int(revs)
    revs += rate / 4
    if int(revs) != before:
        last_t = int((t_ms / 1000 - (revs - int(revs)) / rate) * 1024) & 0xffff
    return revs, last_t
out = []
for t in range(0, end_ms + 1, 250):
    p = 200 + 40 * math.sin(t / 60000)
    speed, cad = 8 + p / 100, 88.0
    wheel, wheel_t = advance(wheel, speed / 2.105, t, wheel_t)
    crank, crank_t = advance(crank, cad / 60, t, crank_t)
    if t % 1000 == 0:
        out.append((t + 130, "C0:FF:EE:00:00:01", "2a37", [0x06, int(130 + p / 20)]))
    out.append((t + 60, "C0:FF:EE:00:00:02", "2a63", le16(0x23) + le16(int(p)) + [100] + le16(int(crank) & 0xffff) + le16(crank_t)))
    out.append((t + 170, "C0:FF:EE:00:00:03", "2a5b", [1] + le32(int(wheel)) + le16(wheel_t)))
    out.append((t + 210, "C0:FF:EE:00:00:04", "2a5b", [2] + le16(int(crank) & 0xffff) + le16(crank_t)))
for t, addr, uuid, b in sorted(out):
    print(json.dumps({"t_ms": t, "ble": addr, "uuid": uuid, "hex": bytes(b).hex()}))
PY
clk=$(getconf CLK_TCK)
t0=$(date +%s%N)
# RUN_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=F" counts instructions instead
# (the wall-clock figures are then valgrind's; see docs/performance.md).
${RUN_WRAPPER:-} "$bin/bikecomputer" run --config "$tmp/config.toml" --data-dir "$tmp/data" --no-display --no-buttons \
    --ride-active-file "$tmp/ride-active" 2>"$tmp/app.log" &
app=$!
until "$bin/bikecomputer" ctl --socket "$tmp/control.sock" status >/dev/null 2>&1; do
    # (under valgrind this takes seconds)
    kill -0 "$app" 2>/dev/null || { echo "run_realtime.sh: bikecomputer run exited:" >&2; cat "$tmp/app.log" >&2; exit 1; }
    sleep 0.005
done
ready_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# The bridge's own modules (board/bridge), paced at the recording's times (its --replay mode
# sends everything at once).
PYTHONPATH=board/bridge "$python" - "$tmp/bridge.sock" "$tmp/ride.jsonl" 2>"$tmp/bridge.log" <<'PY' &
import sys, time
from bikebridge import protocol, replay
from bikebridge.bridge import Bridge
from bikebridge.transport import SocketTransport
box = {}
transport = SocketTransport(sys.argv[1], on_connect=lambda t: t.sock.send(
    protocol.hello(int(time.monotonic_ns() // 1000), protocol.RADIO_BLE, box["b"].bridge_id)))
bridge = Bridge(transport.send, protocol.RADIO_BLE)
box["b"] = bridge
lines = open(sys.argv[2]).read().splitlines()
start = time.monotonic()
for (t_ms, _), frame in zip(replay.records(lines), replay.frames(lines)):
    wait = start + t_ms / 1000 - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    bridge.send(frame)
PY
bridge=$!
sleep 5
"$bin/bikecomputer" ctl --socket "$tmp/control.sock" start >/dev/null
cpu0=$(awk '{print $14 + $15}' "/proc/$app/stat"); user0=$(awk '{print $14}' "/proc/$app/stat")
ns0=$(awk '{print $1}' "/proc/$app/schedstat")
io0=$(awk '/^write_bytes/ {print $2}' "/proc/$app/io")
journal_bytes() { "$bin/bikecomputer" ctl --socket "$tmp/control.sock" status 2>/dev/null | sed -n 's/.*"bytes_written":\([0-9]*\).*/\1/p'; }
jb0=$(journal_bytes)
[[ "${RUN_WRAPPER:-}" == *callgrind* ]] && command -v callgrind_control >/dev/null && callgrind_control --zero "$app" >/dev/null
sleep "$seconds"
[[ "${RUN_WRAPPER:-}" == *callgrind* ]] && command -v callgrind_control >/dev/null && callgrind_control --dump=measured "$app" >/dev/null
cpu1=$(awk '{print $14 + $15}' "/proc/$app/stat"); user1=$(awk '{print $14}' "/proc/$app/stat")
ns1=$(awk '{print $1}' "/proc/$app/schedstat")
io1=$(awk '/^write_bytes/ {print $2}' "/proc/$app/io")
jb1=$(journal_bytes)
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$app/status")
status=$("$bin/bikecomputer" ctl --socket "$tmp/control.sock" status 2>&1 | tr '\n' ' ')
echo "at the end: $(echo "$status" | grep -o '"live":{[^}]*}') $(echo "$status" | grep -o '"counters":"[^"]*"')"
[ "${GPS:-0}" = 1 ] && echo "gps: $(echo "$status" | grep -o '"gps":{[^}]*}')"
awk -v u=$((user1 - user0)) -v c=$((cpu1 - cpu0)) -v ns=$((ns1 - ns0)) -v hz="$clk" -v s="$seconds" -v io=$((io1 - io0)) -v hwm="$hwm" -v ready="$ready_ms" -v jb=$(( ${jb1:-0} - ${jb0:-0} )) 'BEGIN {
    printf "cpu_share_percent %.4f   (target <= 0.05; %.1f ms on CPU over %d s, /proc/PID/schedstat; utime+stime: %d ticks of 1/%d s, %d of them user)\n", ns / 1e9 / s * 100, ns / 1e6, s, c, hz, u
    printf "peak_rss_kb %d   (target <= 15360)\n", hwm
    printf "disk_bytes_per_min %.0f   (target <= 4096; write_bytes counts whole pages: each 1 s fdatasync rewrites a 4 KiB page)\n", io / (s / 60)
    printf "journal_bytes_per_min %.0f   (the bytes the journal itself writes: its bytes_written counter in `ctl status`)\n", jb / (s / 60)
    printf "exec_to_ready_ms %d   (target <= 100)\n", ready
}'
# For comparison: the least any process can spend on the same wake-ups and syncs here
# (scripts/bench/wakeup_floor.c), over the same stretch (at most 60 s). WAKEUP_FLOOR=0 skips it.
if [ "${WAKEUP_FLOOR:-1}" != 0 ]; then
    kill "$bridge" "$app" 2>/dev/null || true
    wait "$app" 2>/dev/null || true
    app= bridge=
    cc=$(command -v cc || command -v clang || command -v gcc || true)
    if [ -n "$cc" ] && "$cc" -O2 -o "$tmp/wakeup_floor" scripts/bench/wakeup_floor.c; then
        "$tmp/wakeup_floor" $(( seconds < 60 ? seconds : 60 )) "$tmp/data/floor.dat"
    else
        echo "wakeup_floor: no C compiler (cc, clang or gcc); skipped" >&2
    fi
fi
