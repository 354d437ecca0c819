#!/usr/bin/env bash
# The board's release, built on an x86_64 Debian machine as root (docs/releasing.md):
#
#   bash scripts/release-arm64.sh            # everything: .build/release-arm64/
#   bash scripts/release-arm64.sh prepare    # only the toolchain and sysroot (CI runs this early)
#   bash scripts/release-arm64.sh product bikebench   # one more product (scripts/bench/arm64-insn.sh)
#
# Out come fully static aarch64 executables `bikecomputer`, `bikecompanion` and `bikesim`
# (stripped; version and git commit recorded, as scripts/build-release.sh does) and the Debian
# package bikecomputer_<version>_arm64.deb (packaging/deb/build-deb.sh), in .build/release-arm64/,
# with MANIFEST.txt (versions of every Debian package the build used, sizes, sha256 sums).
#
# How: Debian sid ships Swift (`swiftlang`) for amd64 and arm64. A sid chroot made with
# debootstrap runs the amd64 compiler; an arm64 sysroot unpacked from sid's arm64 packages
# (glibc, libgcc/libstdc++, the Swift runtime and its static libraries, libgpiod, libi2c) is
# described by a Swift SDK bundle; `swift build --swift-sdk ... --static-swift-stdlib
# -static-executable` cross-compiles. Fully static because sid's Swift runtime needs glibc >=
# 2.38 and Raspberry Pi OS / Debian 12 have 2.36. Measured facts: ../shared/notes/arm64-swift.md.
#
# Everything is cached under .build/arm64/ (the chroot, the sysroot, every downloaded .deb and
# wheel): a second run downloads nothing and rebuilds only what changed. The Swift packages are
# pinned (SWIFT_DEB_VERSION): the cached .debs are used while sid has moved on; without them the
# script says the version is gone and what to change. BIKE_DEBIAN_MIRROR: the Debian mirror
# (default: the one the system's apt sources name).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

# The compiler and runtime the code is built and tested with. A newer Swift is fine for the
# code (this machine's 6.3 builds it too); 6.2.3 is what Debian ships for arm64 today. When sid
# moves past it (the cached .debs keep working), change this and re-run the VM tests.
SWIFT_DEB_VERSION=6.2.3-1+b1
SUITE=sid
PRODUCTS=(bikecomputer bikecompanion bikesim)
# Beside swiftlang in the chroot: the host libc's development files (SwiftPM compiles and links
# Package.swift for the build machine).
CHROOT_PACKAGES=(libc6-dev)
SDK_ID=debian-sid-aarch64
TRIPLE=aarch64-unknown-linux-gnu
# The arm64 packages of the sysroot: headers and static libraries for a fully static link.
# (Architecture: all packages, linux-libc-dev's headers, are taken as they are.)
SYSROOT_PACKAGES=(libc6 libc6-dev linux-libc-dev libgcc-s1 libgcc-16-dev libstdc++6 libstdc++-16-dev
                  libgpiod-dev libgpiod3 libi2c-dev libi2c0 "libswiftlang=$SWIFT_DEB_VERSION" "swiftlang=$SWIFT_DEB_VERSION")

ARM=$REPO/.build/arm64
OUT=$REPO/.build/release-arm64
CHROOT=$ARM/sid
LOGS=$ARM/logs
mkdir -p "$ARM/cache/debootstrap" "$ARM/cache/sid-amd64" "$ARM/cache/sid-arm64" "$LOGS"
started=$SECONDS

say() { echo "release-arm64: [$((SECONDS - started)) s] $*"; }
die() { echo "release-arm64: error: $*" >&2; exit 1; }
# run LOG WHAT CMD...: runs CMD with its output in LOG; on failure says WHAT failed, shows the
# log's tail and exits.
run() {
    local log=$LOGS/$1 what=$2; shift 2
    if ! "$@" > "$log" 2>&1; then
        tail -n 25 "$log" >&2
        die "$what failed (whole log: $log)"
    fi
}

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mount need it): sudo bash scripts/release-arm64.sh"
[ "$(uname -m)" = x86_64 ] || die "this script builds on x86_64 (the sid chroot runs the amd64 compiler); this is $(uname -m)"

mirror() {
    if [ -n "${BIKE_DEBIAN_MIRROR:-}" ]; then echo "$BIKE_DEBIAN_MIRROR"; return; fi
    local m
    m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ' || true)
    echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=$(mirror)
MIRROR=${MIRROR%/}

# ------------------------------------------------------------------------------ host tools
host_tools() {
    local need=()
    command -v debootstrap >/dev/null || need+=(debootstrap)
    [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
    command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
    command -v unshare >/dev/null || need+=(util-linux)
    command -v dpkg-deb >/dev/null || need+=(dpkg)
    [ ${#need[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing host packages (Debian names): ${need[*]}"
    say "installing host packages: ${need[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
            "${need[@]}" > "$LOGS/host-apt.log" 2>&1; then
        run host-apt-update.log "apt-get update" apt-get -o DPkg::Lock::Timeout=900 update -qq
        DEBIAN_FRONTEND=noninteractive run host-apt.log "apt-get install ${need[*]}" \
            apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${need[@]}"
    fi
}

# chroot_run SCRIPT: bash -euc SCRIPT in the sid chroot, in a private mount namespace (nothing
# stays mounted when it ends) with /proc, /dev, the repository at its own path, the local Swift
# package mirrors (/opt/swift-packages, if there), the amd64 apt cache at /var/cache/apt/archives
# and the arm64 one at /tmp/arm64-debs.
chroot_run() {
    unshare --mount --propagation private -- /bin/bash -euc '
        root=$1 repo=$2 arm=$3 script=$4
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root$repo" "$root/var/cache/apt/archives" "$root/tmp/arm64-debs"
        mount --bind "$repo" "$root$repo"
        mount --bind "$arm/cache/sid-amd64" "$root/var/cache/apt/archives"
        mount --bind "$arm/cache/sid-arm64" "$root/tmp/arm64-debs"
        if [ -d /opt/swift-packages ]; then
            mkdir -p "$root/opt/swift-packages"
            mount --bind /opt/swift-packages "$root/opt/swift-packages"
        fi
        cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
        exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
            PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin /bin/bash -euc "$script"
    ' chroot_run "$CHROOT" "$REPO" "$ARM" "$1"
}

APT_OPTS="-o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 -o DPkg::Lock::Timeout=300 -o APT::Sandbox::User=root"

# ------------------------------------------------------------------------------ the sid chroot
make_chroot() {
    if [ -e "$ARM/sid.ready" ] && [ "$(head -n 1 "$ARM/sid.ready")" = "swiftlang $SWIFT_DEB_VERSION ${CHROOT_PACKAGES[*]}" ]; then
        say "sid chroot with Swift $SWIFT_DEB_VERSION: cached ($CHROOT)"
        return 0
    fi
    rm -f "$ARM/sid.ready"
    if [ ! -e "$ARM/sid.bootstrapped" ]; then
        rm -rf "$ARM/sid.partial" "$CHROOT"
        say "debootstrap --variant=minbase $SUITE from $MIRROR (about 2 min; log: $LOGS/debootstrap.log)"
        run debootstrap.log "debootstrap of $SUITE from $MIRROR (a network problem? set BIKE_DEBIAN_MIRROR)" \
            debootstrap --variant=minbase --cache-dir="$ARM/cache/debootstrap" \
                --include=git,pkg-config,ca-certificates "$SUITE" "$ARM/sid.partial" "$MIRROR"
        mv "$ARM/sid.partial" "$CHROOT"
        touch "$ARM/sid.bootstrapped"
    fi
    echo "deb $MIRROR $SUITE main" > "$CHROOT/etc/apt/sources.list"
    # Git in the chroot resolves the Swift packages as the host's does (insteadOf the local mirrors).
    : > "$CHROOT/etc/gitconfig"
    git config --get-regexp '^url\..*\.insteadof$' 2>/dev/null | while read -r key value; do
        git config -f "$CHROOT/etc/gitconfig" --add "$key" "$value"
    done
    git config -f "$CHROOT/etc/gitconfig" --add safe.directory '*'
    say "Swift $SWIFT_DEB_VERSION in the chroot (first time: a 560 MB download, 2.7 GB unpacked; log: $LOGS/chroot-swift.log)"
    run chroot-swift.log "installing swiftlang $SWIFT_DEB_VERSION in the sid chroot" chroot_run "
        cd /var/cache/apt/archives
        apt-get $APT_OPTS update -qq || echo 'apt-get update failed: using the cached packages'
        for p in swiftlang libswiftlang; do
            f=\${p}_\$(echo '$SWIFT_DEB_VERSION' | sed 's/:/%3a/')_amd64.deb
            if [ ! -s \"\$f\" ]; then
                apt-get $APT_OPTS download \"\$p=$SWIFT_DEB_VERSION\" || {
                    echo \"\$p $SWIFT_DEB_VERSION is not in $SUITE any more and not cached in .build/arm64/cache/sid-amd64:\"
                    echo \"set SWIFT_DEB_VERSION in scripts/release-arm64.sh to what 'apt-cache policy swiftlang' shows in sid\"
                    exit 1; }
            fi
        done
        DEBIAN_FRONTEND=noninteractive apt-get $APT_OPTS install -y --no-install-recommends \
            ./swiftlang_*${SWIFT_DEB_VERSION//:/%3a}_amd64.deb ./libswiftlang_*${SWIFT_DEB_VERSION//:/%3a}_amd64.deb \
            ${CHROOT_PACKAGES[*]}
        swift --version"
    echo "swiftlang $SWIFT_DEB_VERSION ${CHROOT_PACKAGES[*]}" > "$ARM/sid.ready"
    grep -o 'Swift version [^ ]*' "$LOGS/chroot-swift.log" | tail -n 1 >> "$ARM/sid.ready" || true
}

# ------------------------------------------------------------------------------ the arm64 sysroot
SDK_BUNDLE=$ARM/sdk/bikecomputer-arm64.artifactbundle
SDK_DIR=$SDK_BUNDLE/$SDK_ID
SYSROOT=$SDK_DIR/sysroot

make_sysroot() {
    local key
    key=$(printf '%s\n' "${SYSROOT_PACKAGES[@]}" | sha256sum | cut -c1-16)
    if [ -e "$ARM/sysroot.ready" ] && [ "$(head -n 1 "$ARM/sysroot.ready")" = "$key" ]; then
        say "arm64 sysroot and Swift SDK: cached ($SDK_BUNDLE)"
        return 0
    fi
    rm -f "$ARM/sysroot.ready"
    say "arm64 packages for the sysroot (first time: about 600 MB; log: $LOGS/sysroot-download.log)"
    # Downloaded in the chroot (arm64 added as a foreign architecture there only); a package that
    # is cached already is not fetched again.
    run sysroot-download.log "downloading the arm64 packages of the sysroot (${SYSROOT_PACKAGES[*]})" chroot_run "
        dpkg --add-architecture arm64
        apt-get $APT_OPTS update -qq || echo 'apt-get update failed: using the cached packages'
        cd /tmp/arm64-debs
        for spec in ${SYSROOT_PACKAGES[*]}; do
            name=\${spec%%=*} version=
            [ \"\$name\" = \"\$spec\" ] || version=\${spec#*=}
            for a in arm64 all; do
                q=\$name:\$a; [ \$a = arm64 ] || q=\$name
                v=\$(apt-cache policy \"\$q\" 2>/dev/null | sed -n 's/^ *Candidate: //p')
                if [ -n \"\$v\" ] && [ \"\$v\" != '(none)' ]; then
                    [ -n \"\$version\" ] || version=\$v
                    break
                fi
            done
            if [ -z \"\$version\" ] || [ \"\$version\" = '(none)' ]; then  # sid dropped it: the newest cached
                f=\$(ls \${name}_*_arm64.deb \${name}_*_all.deb 2>/dev/null | sort -V | tail -n 1 || true)
                [ -n \"\$f\" ] || { echo \"\$name: no arm64 version in $SUITE and none cached\"; exit 1; }
            else
                f=\${name}_\$(echo \"\$version\" | sed 's/:/%3a/')_\$a.deb
                [ -s \"\$f\" ] || apt-get $APT_OPTS download \"\$q=\$version\" || {
                    echo \"\$q \$version is not in $SUITE any more and not cached in .build/arm64/cache/sid-arm64\"; exit 1; }
            fi
            echo \"use \$f\"
        done"
    local debs
    debs=$(sed -n 's/^use //p' "$LOGS/sysroot-download.log")
    [ -n "$debs" ] || die "no arm64 packages listed in $LOGS/sysroot-download.log"
    say "unpacking the sysroot ($(echo "$debs" | wc -l) packages)"
    rm -rf "$ARM/sdk"
    mkdir -p "$SYSROOT"
    local d
    for d in $debs; do
        # Only what a cross build reads: not the arm64 compiler, its host and embedded libraries,
        # nor documentation (2 GB of the 2.6 GB swiftlang unpacks to).
        dpkg-deb --fsys-tarfile "$ARM/cache/sid-arm64/$d" | tar -x -C "$SYSROOT" \
            --exclude=./usr/libexec/swift/bin --exclude=./usr/bin --exclude=./usr/share/doc --exclude=./usr/share/man \
            --exclude='./usr/libexec/swift/lib/lib*.so*' --exclude='./usr/libexec/swift/lib/python3*' \
            --exclude=./usr/libexec/swift/lib/swift/host --exclude=./usr/libexec/swift/lib/swift/embedded \
            --exclude=./usr/libexec/swift/share || die "unpacking $d into the sysroot failed"
    done
    local res=$SYSROOT/usr/libexec/swift/lib
    [ -d "$res/swift_static/linux" ] || die "no usr/libexec/swift/lib/swift_static in the arm64 swiftlang package: its layout changed"
    # Debian's arm64 swiftlang lacks swiftrt.o in its static folder; the fully static link needs it.
    [ -e "$res/swift_static/linux/aarch64/swiftrt.o" ] || cp "$res/swift/linux/aarch64/swiftrt.o" "$res/swift_static/linux/aarch64/swiftrt.o"
    # Absolute symlinks in the packages point at the build machine's /: make them relative.
    find "$SYSROOT" -type l -lname '/*' | while read -r l; do
        target=$(readlink "$l")
        ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$SYSROOT$target")" "$l"
    done
    { echo "$key"; for d in $debs; do echo "$d"; done; } > "$ARM/sysroot.ready"
}

# The Swift SDK bundle around the sysroot (written every run: cheap, and a change here needs no
# new sysroot).
write_sdk() {
    # The driver finds the static runtime (swiftrt.o) at SYSROOT/usr/lib/swift_static, as on
    # swift.org's layout; Debian keeps it under /usr/libexec/swift and links only usr/lib/swift.
    ln -sfn ../libexec/swift/lib/swift_static "$SYSROOT/usr/lib/swift_static"
    [ -e "$SYSROOT/usr/lib/swift" ] || ln -sfn ../libexec/swift/lib/swift "$SYSROOT/usr/lib/swift"
    cat > "$SDK_BUNDLE/info.json" <<EOF
{"schemaVersion": "1.0",
 "artifacts": {"$SDK_ID": {"type": "swiftSDK", "version": "$SWIFT_DEB_VERSION", "variants": [{"path": "$SDK_ID"}]}}}
EOF
    cat > "$SDK_DIR/swift-sdk.json" <<EOF
{"schemaVersion": "4.0",
 "targetTriples": {"$TRIPLE": {"sdkRootPath": "sysroot",
   "swiftResourcesPath": "sysroot/usr/libexec/swift/lib/swift",
   "swiftStaticResourcesPath": "sysroot/usr/libexec/swift/lib/swift_static",
   "toolsetPaths": ["toolset.json"]}}}
EOF
    cat > "$SDK_DIR/toolset.json" <<EOF
{"schemaVersion": "1.0",
 "swiftCompiler": {"extraCLIOptions": ["-use-ld=lld"]}}
EOF
}

# ------------------------------------------------------------------------------ the build
# The swift build options of every aarch64 build. The commit reaches Sources/CBuildInfo through a
# header in a directory on the include path (the flag never changes; only build_info.c includes
# the header), so a new commit recompiles one C file, not the package. No debug information
# (-gnone, -g0; SwiftPM's release builds ask for it): the shipped binaries are stripped of it
# anyway, and without it bikecomputer's cold cross build took 280 CPU-s against 300 (stop 47).
build_flags() {
    mkdir -p "$ARM/buildinfo"
    local h="#define BIKECOMPUTER_GIT_COMMIT \"$COMMIT\""
    [ "$(cat "$ARM/buildinfo/bikecomputer_commit.h" 2>/dev/null)" = "$h" ] || echo "$h" > "$ARM/buildinfo/bikecomputer_commit.h"
    echo "-c release --scratch-path $ARM/scratch --swift-sdks-path $ARM/sdk --swift-sdk $SDK_ID --static-swift-stdlib -Xcc -I$ARM/buildinfo -Xswiftc -gnone -Xcc -g0"
}

source_key() {
    # What the binaries are made of: the sources, the manifest and the toolchain.
    { git ls-files -s -- Package.swift Sources Simulator 2>/dev/null
      git diff HEAD -- Package.swift Sources Simulator 2>/dev/null
      git ls-files --others --exclude-standard -- Sources Simulator 2>/dev/null
      cat "$ARM/sid.ready" "$ARM/sysroot.ready"; echo "$COMMIT"; declare -f build_flags; } | sha256sum | cut -c1-16
}

version_and_commit() {
    VERSION=$(sed -n 's/.*static let \(major\|minor\|patch\) = \([0-9]*\).*/\2/p' Sources/RideModel/ProjectVersion.swift | paste -sd.)
    [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read the version from Sources/RideModel/ProjectVersion.swift (got '$VERSION')"
    COMMIT=$(git describe --tags --always --dirty 2>/dev/null | tr -cd 'A-Za-z0-9._+-' || true)
    [ -n "$COMMIT" ] || say "no git commit found (not a git checkout?): --version will say it is not recorded"
}

build() {
    local key
    key=$(source_key)
    if [ -e "$OUT/.built" ] && [ "$(cat "$OUT/.built")" = "$key" ] && [ -x "$OUT/bikecomputer" ]; then
        say "binaries: up to date ($OUT, commit ${COMMIT:-unknown})"
        return 0
    fi
    rm -f "$OUT/.built"
    mkdir -p "$OUT" "$ARM/scratch"
    local flags
    flags=$(build_flags)
    flags+=" -Xswiftc -static-executable"
    local p t
    for p in "${PRODUCTS[@]}"; do
        t=$SECONDS
        say "swift build $p for aarch64 (Swift $SWIFT_DEB_VERSION in the chroot; cold: 10-25 min on 2 cores; log: $LOGS/build-$p.log)"
        run "build-$p.log" "swift build --product $p for aarch64" \
            chroot_run "cd '$REPO' && swift build $flags --product $p"
        say "  $p built in $((SECONDS - t)) s"
    done
    local bin
    bin=$(chroot_run "cd '$REPO' && swift build $flags --show-bin-path" 2>/dev/null | tail -n 1)
    for p in "${PRODUCTS[@]}"; do
        [ -x "$bin/$p" ] || die "no $bin/$p after the build (see $LOGS/build-$p.log)"
        file -b "$bin/$p" 2>/dev/null | grep -q 'ARM aarch64' || [ "$(od -An -tx1 -j18 -N2 "$bin/$p" | tr -d ' ')" = b700 ] \
            || die "$bin/$p is not an aarch64 executable"
        chroot_run "llvm_strip=/usr/libexec/swift/bin/llvm-objcopy; \$llvm_strip --strip-all '$bin/$p' '$OUT/$p.tmp'"
        mv "$OUT/$p.tmp" "$OUT/$p"
    done
    # The binaries must run and know what they are (qemu-user runs them on this x86_64 host).
    local v
    v=$(qemu-aarch64-static "$OUT/bikecomputer" --version 2>&1) || die "the aarch64 bikecomputer does not run under qemu-aarch64-static: $v"
    case "$v" in *"$VERSION"*) ;; *) die "bikecomputer --version says '$v', not version $VERSION" ;; esac
    [ -z "$COMMIT" ] || case "$v" in *"$COMMIT"*) ;; *) die "bikecomputer --version says '$v', not commit $COMMIT" ;; esac
    say "  $v"
    echo "$key" > "$OUT/.built"
}

# ------------------------------------------------------------------------------ the package
package() {
    local key
    key=$( (cat "$OUT/.built"; cat packaging/deb/* board/accounts.sh board/config.toml board/udev/* board/boot-config.txt;
            cat board/systemd/* board/tmpfiles.d/* board/usb-gadget/* board/bridge/bikebridge.service board/bridge/bikebridge.default \
                board/bridge/requirements-board.txt board/bridge/bikebridge/*.py docs/board.md docs/config.md docs/companion.md \
                docs/usb.md docs/sensors.md docs/power.md LICENSE) | sha256sum | cut -c1-16)
    DEB=$OUT/bikecomputer_${VERSION}_arm64.deb
    if [ -e "$OUT/.packaged" ] && [ "$(cat "$OUT/.packaged")" = "$key" ] && [ -f "$DEB" ]; then
        say "Debian package: up to date ($(basename "$DEB"))"
        return 0
    fi
    rm -f "$OUT/.packaged" "$OUT"/bikecomputer_*_arm64.deb
    say "Debian package (packaging/deb/build-deb.sh)"
    run deb.log "building the Debian package" bash packaging/deb/build-deb.sh --arch arm64 --version "$VERSION" \
        --commit "${COMMIT:-unknown}" --bin-dir "$OUT" --wheels-cache "$ARM/cache" --out "$OUT"
    DEB=$(sed -n 's/^built //p' "$LOGS/deb.log" | tail -n 1)
    [ -f "$DEB" ] || die "packaging/deb/build-deb.sh did not say which package it built (see $LOGS/deb.log)"
    say "  $(basename "$DEB"): $(du -k "$DEB" | cut -f1) KB, installed $(dpkg-deb -f "$DEB" Installed-Size) KB"
    echo "$key" > "$OUT/.packaged"
}

# product NAME: one more product for aarch64 (not stripped; the Swift runtime static, glibc
# shared — bikebench interposes malloc, which a static libc.a refuses as a duplicate — run with
# qemu-aarch64 -L on the sysroot), e.g. bikebench for the instruction counts of
# docs/performance.md (scripts/bench/arm64-insn.sh). Prints its path last. The sysroot gets
# /lib -> usr/lib as a merged-/usr system has it: glibc's libc.so script names
# /lib/ld-linux-aarch64.so.1, which lld looks for inside the sysroot.
product() {
    local p=$1 t=$SECONDS flags bin
    flags=$(build_flags)
    [ -e "$SYSROOT/lib" ] || ln -s usr/lib "$SYSROOT/lib"
    say "swift build $p for aarch64 (log: $LOGS/build-$p.log)"
    run "build-$p.log" "swift build --product $p for aarch64" chroot_run "cd '$REPO' && swift build $flags --product $p"
    bin=$(chroot_run "cd '$REPO' && swift build $flags --show-bin-path" 2>/dev/null | tail -n 1)
    say "  $p built in $((SECONDS - t)) s"
    echo "$bin/$p"
}

manifest() {
    {
        echo "bikecomputer $VERSION, commit ${COMMIT:-unknown}, built $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/release-arm64.sh"
        echo "compiler: $(tail -n 1 "$ARM/sid.ready") (Debian swiftlang $SWIFT_DEB_VERSION, amd64, in a $SUITE chroot)"
        echo "sysroot packages (arm64, $SUITE):"
        tail -n +2 "$ARM/sysroot.ready" | sed 's/^/  /'
        echo "files:"
        (cd "$OUT" && for f in "${PRODUCTS[@]}" "$(basename "$DEB")"; do
            printf '  %-40s %10d bytes  sha256 %s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-64)"
        done)
    } > "$OUT/MANIFEST.txt"
}

host_tools
make_chroot
make_sysroot
write_sdk
case "${1:-}" in
    prepare)
        say "prepared: the chroot, the sysroot and the Swift SDK (.build/arm64) in $((SECONDS - started)) s"
        exit 0 ;;
    product)
        [ -n "${2:-}" ] || die "usage: release-arm64.sh product NAME"
        version_and_commit
        product "$2"
        exit 0 ;;
    "") ;;
    *) die "unknown argument $1 (release-arm64.sh [prepare | product NAME])" ;;
esac
version_and_commit
build
package
manifest
say "done in $((SECONDS - started)) s: $OUT (MANIFEST.txt)"
