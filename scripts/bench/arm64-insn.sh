#!/usr/bin/env bash
# Instructions per sensor frame of the aarch64 build (docs/performance.md), counted under QEMU:
#   sudo bash scripts/bench/arm64-insn.sh [FRAMES_SMALL FRAMES_LARGE]
# The same measurement as scripts/bench/callgrind.sh (valgrind, x86_64): `bikebench
# --callgrind-frames N` twice (same setup and warm-up, N1 and N2 measured frames), and
# (I2 - I1) / (frames2 - frames1) is the per-frame figure, setup cancelled out. Here bikebench
# is the aarch64 release build (bash scripts/release-arm64.sh product bikebench: Debian's Swift
# 6.2.3, -O, the Swift runtime static, glibc from the sysroot) and the instructions are the guest
# instructions Debian's qemu-aarch64 (qemu-user, TCG) executes, counted by a small plugin
# (scripts/bench/qemu-insn.c). Debian ships QEMU with plugin support but no plugins and no plugin
# header: the header is taken from Debian's source package of the installed QEMU (downloaded
# into .build/arm64/qemu-src, never committed). Deterministic for the same binary and inputs,
# whatever else the machine does.
set -euo pipefail
cd "$(dirname "$0")/../.."
n1=${1:-2000}
n2=${2:-12000}
ARM=.build/arm64
die() { echo "arm64-insn.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (the aarch64 build runs in a chroot)"

if ! command -v qemu-aarch64 >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends qemu-user gcc \
        >/dev/null || die "apt-get install qemu-user failed"
fi
qemu-aarch64 -h 2>&1 | grep -q -- '-plugin' || die "this qemu-aarch64 has no plugin support"

# QEMU's plugin header, of the installed version.
binary_version=$(dpkg-query -W -f='${Version}' qemu-user)
source_version=${binary_version%+b[0-9]*}
src=$ARM/qemu-src/$source_version
if [ ! -e "$src/qemu-plugin.h" ]; then
    echo "arm64-insn.sh: QEMU's plugin header from Debian's qemu $source_version source package"
    apt_dir=$(realpath -m "$ARM/qemu-src/apt")
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache" "$src"
    # (grep exits 2 when /etc/apt/sources.list is absent, as on a deb822-only system: not an error here.)
    mirror=$({ grep -ohE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null || true; } | head -n 1 | tr -d ' ')
    mirror=${mirror:-http://deb.debian.org/debian}
    security=${mirror%/debian}/debian-security
    printf 'deb-src %s bookworm main\ndeb-src %s bookworm-updates main\ndeb-src %s bookworm-security main\n' \
        "${mirror%/}" "${mirror%/}" "$security" > "$apt_dir/sources.list"
    opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$apt_dir/lists"
          -o "Dir::Cache=$apt_dir/cache" -o Acquire::Languages=none -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update -qq || die "apt-get update of the deb-src lists failed"
    (cd "$src" && apt-get "${opts[@]}" source --download-only -qq "qemu=$source_version") \
        || die "apt-get source qemu=$source_version failed (gone from the archive?)"
    orig=$(ls "$src"/qemu_*.orig.tar.* | head -n 1)
    tar -xf "$orig" -C "$src" --wildcards --strip-components=3 '*/include/qemu/qemu-plugin.h' \
        || die "no include/qemu/qemu-plugin.h in $orig"
    rm -f "$src"/qemu_*.tar.* "$src"/qemu_*.dsc
fi
plugin=$ARM/qemu-insn.so
gcc -O2 -shared -fPIC -Wall -I "$src" $(pkg-config --cflags glib-2.0 2>/dev/null || true) \
    scripts/bench/qemu-insn.c -o "$plugin" || die "building the plugin failed"

bin=$(bash scripts/release-arm64.sh product bikebench | tail -n 1)
[ -x "$bin" ] || die "no aarch64 bikebench ($bin)"
sysroot=$ARM/sdk/bikecomputer-arm64.artifactbundle/debian-sid-aarch64/sysroot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
    qemu-aarch64 -L "$sysroot" -d plugin -D "$tmp/insn.$1" -plugin "$plugin" "$bin" --callgrind-frames "$1" \
        >"$tmp/out.$1" 2>"$tmp/err.$1" || { cat "$tmp/err.$1" >&2; exit 1; }
    frames=$(awk '/^frames/ {print $2}' "$tmp/out.$1")
    insns=$(awk '/^qemu-insn:/ {print $2}' "$tmp/insn.$1")
    [ -n "$frames" ] && [ -n "$insns" ] || die "no frame count or instruction count from the run with $1 frames"
    echo "$frames $insns"
}
read -r f1 i1 < <(run "$n1")
read -r f2 i2 < <(run "$n2")
per=$(( (i2 - i1) / (f2 - f1) ))
echo "qemu-aarch64 + qemu-insn: $f1 frames: $i1 instructions; $f2 frames: $i2 instructions"
echo "aarch64 instructions per sensor frame (end to end, incl. its share of 1 Hz ticks): $per"
awk -v per="$per" 'BEGIN {
    printf "Pi Zero 2 W estimate (Cortex-A53 @ 1 GHz, IPC 1.0 .. 0.5): %.1f .. %.1f us per frame;", per / 1000, per / 500
    printf " at 13 frames/s: %.3f .. %.3f %% of one core\n", per * 13 / 1e9 * 100, per * 13 / 0.5e9 * 100
}'
