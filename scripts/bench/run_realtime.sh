#!/usr/bin/env bash
# The whole recording system at real time (docs/performance.md): `bikecomputer run` and the
# sensor bridge side by side, four BLE sensors at real rates (heart rate 1 Hz, power, speed and
# cadence 4 Hz each), a ride being recorded.
#   - The app as on a board: the release binary with the Swift runtime linked statically, its
#     display pipeline on (`--measure-latency`: every page goes to a bus that counts and does
#     nothing else, `--emulated-bus-hz 0`); APP_DISPLAY=0 measures it with --no-display instead.
#   - The bridge as on a board: board/bridge's Runner, NotifyReader, DataFramer, Bridge and
#     SocketTransport (scripts/bench/bridge_feed.py), its notifications arriving on sockets as
#     BlueZ's AcquireNotify hands them over, written at the recording's times by a child process
#     that plays bluetoothd (not counted). The bridge hands the sockets to the app (protocol
#     version 2), which then reads the values itself; BRIDGE_FORWARD=1 keeps them in the bridge,
#     which forwards every value as a frame (an older app; before the hand-over).
# Prints per process and summed: CPU share of one core, peak RSS, wake-ups (context switches)
# per second and per notification; the app's bytes written per minute and start-up time; the
# latency to a value's page on the display bus (from the bridge's read of the notification when
# it forwards it; from the app's own read of the socket when it reads it itself); then the
# wake-up floor (scripts/bench/wakeup_floor.c).
#     bash scripts/bench/run_realtime.sh [SECONDS]        (default 300)
# Needs python3; a C compiler for the floor (optional). BIKE_BIN=DIR measures another build.
# Measures with /proc/PID/task/*/schedstat (on-CPU time of every thread, summed: the app's main
# thread and the kernel's io_uring worker that runs the journal's fdatasync; /proc/PID/schedstat
# alone counts the main thread only), /proc/PID/status (VmHWM; voluntary and involuntary context
# switches summed over the threads in /proc/PID/task) and /proc/PID/io. A thread that ended
# between two snapshots takes its time with it: the io_uring workers come and go, so the sum is
# taken over the threads alive at each snapshot and a worker that lived between them is missed;
# so the script also prints the process's utime+stime from /proc/PID/stat, which keeps the time
# of threads that ended (in clock ticks: 10 ms steps). THREADS=1 prints each thread at the end.
# GPS=1 adds a GPS (docs/gps.md): Debian's gpsd, fed the Edge 500 ride's own positions as NMEA at
# 1 Hz through a pty (Tests/oracle/gpsd_feed.py; needs gpsd, python3-gps and the .venv's fitdecode),
# and `[gps] enabled` in the app's config. The app's CPU is measured, not gpsd's.
# PANEL=sharp-ls027 draws on the 400x240 memory LCD's pipeline instead of the 128x64 OLED's
# (`[display] type`; the measurement's probe link counts its SPI transactions); the figures add
# the frames drawn and the app's CPU per frame.
# RADAR=1 adds a Garmin Varia rear radar (docs/sensors.md, "Rear radar"): its notifications at
# 8 Hz (the ANT+ radar's channel rate; a Varia notifies at most that often), a vehicle coming up
# from 140 m every 20 s, at 36 and 54 km/h in turn; the latency figures add the radar's own
# (a radar frame -> the radar column's page on the bus).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-300}
if [ -z "${BIKE_BIN:-}" ]; then
    echo "run_realtime.sh: building the board's binary (swift build -c release --static-swift-stdlib, .build/static)" >&2
    swift build -c release --static-swift-stdlib --product bikecomputer --scratch-path .build/static 2>&1 | tail -n 1 >&2
    bin=$(swift build -c release --static-swift-stdlib --scratch-path .build/static --show-bin-path)
else
    bin=$BIKE_BIN
fi
[ -x "$bin/bikecomputer" ] || { echo "run_realtime.sh: no bikecomputer in $bin: build it with swift build -c release --product bikecomputer" >&2; exit 1; }
"$bin/bikecomputer" run --help 2>/dev/null | grep -q -- "--measure-latency" \
    || { echo "run_realtime.sh: this bikecomputer has no \`run --measure-latency\`" >&2; exit 1; }
python=$(command -v python3)
tmp=$(mktemp -d)
# (Never `kill 0`: that is the whole process group, whatever started this script included.)
# The GPS feeder runs in its own process group (setsid below). SIGTERM makes gpsfake's library
# stop its gpsd, but the feeder itself carries on (the library's handler does not exit), so the
# group gets SIGKILL after it.
cleanup() {
    [ -n "${app:-}" ] && kill "$app" 2>/dev/null || true
    [ -n "${bridge:-}" ] && kill "$bridge" 2>/dev/null || true
    if [ -n "${gpsd_feeder:-}" ]; then
        kill -- -"$gpsd_feeder" 2>/dev/null; sleep 0.5; kill -KILL -- -"$gpsd_feeder" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
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

$(if [ "${RADAR:-0}" = 1 ]; then printf '[[sensor]]\ntransport = "ble"\nrole = "radar"\nble_address = "C0:FF:EE:00:00:05"\n'; fi)

[storage]
data_dir = "$tmp/data"

[control]
socket = "$tmp/control.sock"
CONF
if [ -n "${PANEL:-}" ]; then
    printf '\n[display]\ntype = "%s"\n' "$PANEL" >>"$tmp/config.toml"
fi
if [ "${GPS:-0}" = 1 ]; then
    gps_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '\n[gps]\nenabled = true\ngpsd = "127.0.0.1:%s"\n' "$gps_port" >>"$tmp/config.toml"
    .venv/bin/python Tests/oracle/gps_nmea.py ../shared/fixtures/rides/garmin-edge-500-activity.fit "$tmp/gps.log" \
        --limit $((seconds + 60)) >&2
    # gpsd starts at once; the feed begins when "go" arrives (after the app has connected), one
    # epoch (5 sentences) a second.
    setsid bash -c '(sleep 4; echo go; sleep "$1") | /usr/bin/python3 Tests/oracle/gpsd_feed.py "$2" 0.2 "$3"' \
        feeder $((seconds + 120)) "$gps_port" "$tmp/gps.log" >"$tmp/gpsd.log" 2>&1 &
    gpsd_feeder=$!
    sleep 1
fi
# The recording: the same payload layouts as Simulator/Sources/Simulation/SensorPayloads.swift.
"$python" - "$seconds" "${RADAR:-0}" >"$tmp/ride.jsonl" <<'PY'
import json, sys, math
end_ms = (int(sys.argv[1]) + 30) * 1000
radar = sys.argv[2] == "1"
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
# The radar: a frame every 125 ms (header: sequence nibble, 0x2 whole frame; then track, range m,
# km/h per vehicle); a vehicle from 140 m every 20 s, 36 or 54 km/h, until it passes.
for k, t in enumerate(range(0, end_ms + 1, 125) if radar else []):
    behind = []
    for n in range(t // 20000 + 1):
        kmh = 36 if n % 2 == 0 else 54
        r = 140 - kmh / 3.6 * (t - n * 20000) / 1000
        if 0 < r <= 140:
            behind.append((r, n % 255 + 1, kmh))
    body = [b for r, track, kmh in sorted(behind)[:6] for b in (track, max(1, round(r)), kmh)]
    out.append((t + 30, "C0:FF:EE:00:00:05", "3203", [(k & 0x0F) << 4 | 0x2] + body))
for t, addr, uuid, b in sorted(out):
    print(json.dumps({"t_ms": t, "ble": addr, "uuid": uuid, "hex": bytes(b).hex()}))
PY
clk=$(getconf CLK_TCK)
settle=5
if [ "${APP_DISPLAY:-1}" = 1 ]; then
    # The display pipeline drawing to a counting bus; the run ends itself and prints its latency figures.
    display=(--measure-latency $((seconds + settle + 15)) --emulated-bus-hz 0)
else
    display=(--no-display)
fi
t0=$(date +%s%N)
# RUN_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=F" counts instructions instead.
${RUN_WRAPPER:-} "$bin/bikecomputer" run --config "$tmp/config.toml" --data-dir "$tmp/data" --no-buttons "${display[@]}" \
    --ride-active-file "$tmp/ride-active" >"$tmp/app.out" 2>"$tmp/app.log" &
app=$!
until "$bin/bikecomputer" ctl --socket "$tmp/control.sock" status >/dev/null 2>&1; do
    kill -0 "$app" 2>/dev/null || { echo "run_realtime.sh: bikecomputer run exited:" >&2; cat "$tmp/app.log" >&2; exit 1; }
    sleep 0.005
done
ready_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# BRIDGE_CMD="CMD" runs another bridge instead (given --socket SOCK --recording FILE --stats FILE),
# e.g. the previous replay loop, to compare (docs/performance.md).
if [ -n "${BRIDGE_CMD:-}" ]; then
    $BRIDGE_CMD --socket "$tmp/bridge.sock" --recording "$tmp/ride.jsonl" --stats "$tmp/bridge-stats.json" 2>"$tmp/bridge.log" &
else
    # BRIDGE_FORWARD=1: the bridge keeps the notification sockets and forwards every value (an
    # app of protocol version 1; what a board did before the sockets were handed over).
    PYTHONPATH=board/bridge "$python" scripts/bench/bridge_feed.py --socket "$tmp/bridge.sock" --recording "$tmp/ride.jsonl" \
        --clock-file "$tmp/clock" --stats "$tmp/bridge-stats.json" ${BRIDGE_FORWARD:+--forward} 2>"$tmp/bridge.log" &
fi
bridge=$!
sleep "$settle"
"$bin/bikecomputer" ctl --socket "$tmp/control.sock" start >/dev/null
sleep 4  # the countdown
snap() {  # PID -> "on-CPU ns (every thread), wake-ups (voluntary context switches), preemptions, VmHWM kB"
    local pid=$1 cs=0 pre=0 ns=0
    for t in /proc/"$pid"/task/*; do
        cs=$((cs + $(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)))
        pre=$((pre + $(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)))
        ns=$((ns + $(awk '{print $1}' "$t/schedstat" 2>/dev/null || echo 0)))
    done
    echo "$ns $cs $pre $(awk '/^VmHWM/ {print $2}' /proc/"$pid"/status)"
}
threads() {  # PID -> one line per thread: "TID NAME on-CPU-ns"
    local pid=$1
    for t in /proc/"$pid"/task/*; do
        echo "$(basename "$t") $(cat "$t/comm" 2>/dev/null) $(awk '{print $1}' "$t/schedstat" 2>/dev/null)"
    done
}
# Notifications that reached the app: those the bridge forwarded as frames plus those the app
# read itself from the sockets the bridge handed it (an app that says so in its hello).
notes() {
    kill -USR1 "$bridge"; sleep 0.3
    "$bin/bikecomputer" ctl --socket "$tmp/control.sock" status >"$tmp/status-notes.json" 2>/dev/null || echo '{}' >"$tmp/status-notes.json"
    "$python" -c 'import json,sys
s = json.load(open(sys.argv[1]))
forwarded = sum(n for k, n in s["notifications"].items() if not k.endswith("/2a19"))
app = json.load(open(sys.argv[2])).get("bridge", {})
read = sum(v["values"] for v in app.get("socket_values", []))
print(forwarded + read, forwarded, read)' "$tmp/bridge-stats.json" "$tmp/status-notes.json"
}
io0=$(awk '/^write_bytes/ {print $2}' "/proc/$app/io")
journal_bytes() { "$bin/bikecomputer" ctl --socket "$tmp/control.sock" status 2>/dev/null | sed -n 's/.*"bytes_written":\([0-9]*\).*/\1/p'; }
jb0=$(journal_bytes)
status0=$("$bin/bikecomputer" ctl --socket "$tmp/control.sock" status)
pages0=$(echo "$status0" | sed -n 's/.*"pages_sent":\([0-9]*\).*/\1/p')
frames0=$(echo "$status0" | sed -n 's/.*"display":{[^}]*"frames":\([0-9]*\).*/\1/p')
read -r n0 fw0 rd0 <<<"$(notes)"
read -r a_ns0 a_cs0 a_pre0 _ <<<"$(snap "$app")"
a_main0=$(awk '{print $1}' /proc/"$app"/schedstat)
a_ticks0=$(awk '{print $14 + $15}' /proc/"$app"/stat)
read -r b_ns0 b_cs0 b_pre0 _ <<<"$(snap "$bridge")"
[[ "${RUN_WRAPPER:-}" == *callgrind* ]] && command -v callgrind_control >/dev/null && callgrind_control --zero "$app" >/dev/null
sleep "$seconds"
[[ "${RUN_WRAPPER:-}" == *callgrind* ]] && command -v callgrind_control >/dev/null && callgrind_control --dump=measured "$app" >/dev/null
read -r a_ns1 a_cs1 a_pre1 a_hwm <<<"$(snap "$app")"
a_main1=$(awk '{print $1}' /proc/"$app"/schedstat)
a_ticks1=$(awk '{print $14 + $15}' /proc/"$app"/stat)
[ "${THREADS:-0}" = 1 ] && { echo "app threads (tid name on-CPU ns):"; threads "$app"; }
read -r b_ns1 b_cs1 b_pre1 b_hwm <<<"$(snap "$bridge")"
read -r n1 fw1 rd1 <<<"$(notes)"
io1=$(awk '/^write_bytes/ {print $2}' "/proc/$app/io")
jb1=$(journal_bytes)
status=$("$bin/bikecomputer" ctl --socket "$tmp/control.sock" status 2>&1 | tr '\n' ' ')
pages1=$(echo "$status" | sed -n 's/.*"pages_sent":\([0-9]*\).*/\1/p')
frames1=$(echo "$status" | sed -n 's/.*"display":{[^}]*"frames":\([0-9]*\).*/\1/p')
echo "at the end: $(echo "$status" | grep -o '"live":{[^}]*}') $(echo "$status" | grep -o '"counters":"[^"]*"')"
[ "${GPS:-0}" = 1 ] && echo "gps: $(echo "$status" | grep -o '"gps":{[^}]*}')"
echo "bridge: $(cat "$tmp/bridge-stats.json" | tr -d '\n' | cut -c1-400)"
echo "notifications forwarded by the bridge $((fw1 - fw0)), read by the app from handed sockets $((rd1 - rd0))"
[ $((n1 - n0)) -gt 0 ] || { echo "run_realtime.sh: no notification reached the app" >&2; exit 1; }
awk -v s="$seconds" -v n=$((n1 - n0)) -v ans=$((a_ns1 - a_ns0)) -v bns=$((b_ns1 - b_ns0)) -v acs=$((a_cs1 - a_cs0)) \
    -v bcs=$((b_cs1 - b_cs0)) -v apre=$((a_pre1 - a_pre0)) -v bpre=$((b_pre1 - b_pre0)) -v ahwm="$a_hwm" -v bhwm="$b_hwm" -v io=$((io1 - io0)) -v jb=$(( ${jb1:-0} - ${jb0:-0} )) \
    -v ready="$ready_ms" -v pages=$(( ${pages1:-0} - ${pages0:-0} )) -v frames=$(( ${frames1:-0} - ${frames0:-0} )) -v panel="${PANEL:-ssd1306}" \
    -v amain=$((a_main1 - a_main0)) -v aticks=$((a_ticks1 - a_ticks0)) -v clk="$clk" 'BEGIN {
    printf "notifications %d in %d s (%.1f/s); display pages sent %d (%.1f/s)\n", n, s, n / s, pages, pages / s
    if (frames > 0) printf "panel %s: frames drawn %d (%.1f/s); app cpu per frame %.1f us (all of the app'"'"'s CPU / frames)\n", panel, frames, frames / s, ans / 1e3 / frames
    printf "%-8s %10s %10s %12s %16s %14s\n", "", "cpu_%", "rss_kb", "wakeups/s", "wakeups/notif", "preempted/s"
    printf "%-8s %10.4f %10d %12.2f %16.3f %14.2f\n", "app", ans / 1e9 / s * 100, ahwm, acs / s, acs / n, apre / s
    printf "%-8s %10.4f %10d %12.2f %16.3f %14.2f\n", "bridge", bns / 1e9 / s * 100, bhwm, bcs / s, bcs / n, bpre / s
    printf "%-8s %10.4f %10d %12.2f %16.3f %14.2f\n", "sum", (ans + bns) / 1e9 / s * 100, ahwm + bhwm, (acs + bcs) / s, (acs + bcs) / n, (apre + bpre) / s
    printf "app_main_thread_cpu_%% %.4f   (the main thread alone: /proc/PID/schedstat)\n", amain / 1e9 / s * 100
    printf "app_process_cpu_%% %.4f   (utime+stime of /proc/PID/stat, ended threads included, %d ticks of 1/%d s)\n", aticks / clk / s * 100, aticks, clk
    printf "bridge_to_app_cpu_ratio %.2f   (target <= 1.00)\n", bns / ans
    printf "cpu_per_notification_us app %.1f bridge %.1f\n", ans / 1e3 / n, bns / 1e3 / n
    printf "disk_bytes_per_min %.0f   (write_bytes; journal_bytes_per_min %.0f)\n", io / (s / 60), jb / (s / 60)
    printf "exec_to_ready_ms %d   (target <= 100)\n", ready
}'
if [ "${APP_DISPLAY:-1}" = 1 ]; then
    kill "$bridge" 2>/dev/null || true
    for _ in $(seq 1 $((settle + 30))); do kill -0 "$app" 2>/dev/null || break; sleep 1; done
    "$python" - "$tmp/app.out" <<'PY'
import json, sys
text = open(sys.argv[1]).read().strip().splitlines()
if not text:
    print("latency: the app printed no figures"); sys.exit(0)
j = json.loads(text[-1])
fs = j.get("from_send") or j.get("from_send_us") or {}
print("latency notification -> page on the bus:", json.dumps(fs), "  (target p99 <= 50 ms)")
if "radar" in j:
    r = j["radar"]
    print(f"latency radar frame -> radar column's page on the bus ({r['frames']} radar frames):", json.dumps(r["from_send_us"]))
PY
    app= bridge=
fi
# For comparison: the least any process can spend on the same wake-ups and syncs here
# (scripts/bench/wakeup_floor.c), over the same stretch (at most 60 s). WAKEUP_FLOOR=0 skips it.
if [ "${WAKEUP_FLOOR:-1}" != 0 ]; then
    [ -n "${bridge:-}" ] && kill "$bridge" 2>/dev/null || true
    [ -n "${app:-}" ] && { kill "$app" 2>/dev/null || true; wait "$app" 2>/dev/null || true; }
    app= bridge=
    cc=$(command -v cc || command -v clang || command -v gcc || true)
    if [ -n "$cc" ] && "$cc" -O2 -o "$tmp/wakeup_floor" scripts/bench/wakeup_floor.c; then
        "$tmp/wakeup_floor" $(( seconds < 60 ? seconds : 60 )) "$tmp/data/floor.dat"
    else
        echo "wakeup_floor: no C compiler (cc, clang or gcc); skipped" >&2
    fi
fi
