#!/usr/bin/env bash
# Instructions per sensor frame, end to end (docs/performance.md), with valgrind's callgrind:
# comparable across runs on a noisy shared machine, unlike wall time.
#   bash scripts/bench/callgrind.sh [FRAMES_SMALL FRAMES_LARGE]
# Runs `bikebench --callgrind-frames N` twice (same setup and warm-up, N1 and N2 measured frames);
# (Ir2 - Ir1) / (frames2 - frames1) is the per-frame figure, setup cancelled out. Prints the
# figure, and a Pi Zero 2 W estimate (Cortex-A53 at 1 GHz) at IPC 0.5 to 1.0: an estimate only.
set -euo pipefail
cd "$(dirname "$0")/../.."
n1=${1:-2000}
n2=${2:-12000}
command -v valgrind >/dev/null || { echo "callgrind.sh: no valgrind: sudo apt-get install valgrind" >&2; exit 1; }
swift build -c release --product bikebench 2>&1 | tail -n 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# valgrind 3.19 cannot read the DWARF 5 the Swift toolchain emits: run a copy without debug info
# (the symbol table stays, so profiles still name functions).
bin="$tmp/bikebench"
objcopy --strip-debug "$(swift build -c release --show-bin-path)/bikebench" "$bin"
run() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$bin" --callgrind-frames "$1" >"$tmp/out.$1" 2>"$tmp/err.$1" \
        || { cat "$tmp/err.$1" >&2; exit 1; }
    frames=$(awk '/^frames/ {print $2}' "$tmp/out.$1")
    ir=$(awk '/^summary:|^totals:/ {print $2; exit}' "$tmp/cg.$1")
    echo "$frames $ir"
}
read -r f1 i1 < <(run "$n1")
read -r f2 i2 < <(run "$n2")
per=$(( (i2 - i1) / (f2 - f1) ))
echo "callgrind: $f1 frames: $i1 Ir; $f2 frames: $i2 Ir"
echo "instructions per sensor frame (end to end, incl. its share of 1 Hz ticks): $per"
awk -v per="$per" 'BEGIN {
    printf "Pi Zero 2 W estimate (Cortex-A53 @ 1 GHz, IPC 1.0 .. 0.5): %.1f .. %.1f us per frame;", per / 1000, per / 500
    printf " at 13 frames/s: %.3f .. %.3f %% of one core\n", per * 13 / 1e9 * 100, per * 13 / 0.5e9 * 100
}'
if [ "${CALLGRIND_TOP:-0}" != 0 ]; then
    callgrind_annotate --inclusive=yes "$tmp/cg.$n2" 2>/dev/null | head -n 60
fi
