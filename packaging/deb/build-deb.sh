#!/usr/bin/env bash
# Builds the Debian package bikecomputer_<version>_<arch>.deb from the built executables and the
# files where they live in the repository (docs/releasing.md; scripts/release-arm64.sh runs it):
#
#   bash packaging/deb/build-deb.sh --arch arm64 --version 0.1.0 --commit v0.1.0-0-gabc1234 \
#       --bin-dir .build/release-arm64 --wheels-cache .build/arm64/cache --out .build/release-arm64
#
# The units, udev rules, USB gadget files, bridge and default config are taken from board/ as
# board/install.sh installs them (one copy of each in the repository); only their paths change
# for a package (/usr/local/bin -> /usr/bin, /opt/bikebridge -> /usr/lib/bikecomputer/bridge:
# PATH_MAP below), and the build fails if a unit names a path the package does not have. The
# users, groups and directories are board/accounts.sh, run by the postinst as it is by
# install.sh. The bridge's Python dependencies (board/bridge/requirements-board.txt, pinned) are
# unpacked from PyPI's wheels for the board's CPU and Debian 12's Python 3.11 into the package,
# so an install needs no network (on a newer Python, dbus-fast runs its pure-Python code).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
DEB_DIR=$REPO/packaging/deb

arch="" version="" commit=unknown bin_dir="" wheels_cache="" out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        --commit) commit=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --wheels-cache) wheels_cache=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "build-deb.sh: unknown option $1" >&2; exit 64 ;;
    esac
done
die() { echo "build-deb.sh: error: $*" >&2; exit 1; }
[ -n "$arch" ] && [ -n "$version" ] && [ -n "$bin_dir" ] && [ -n "$out" ] && [ -n "$wheels_cache" ] \
    || die "usage: build-deb.sh --arch ARCH --version V [--commit C] --bin-dir DIR --wheels-cache DIR --out DIR"
for b in bikecomputer bikecompanion; do
    [ -x "$bin_dir/$b" ] || die "no executable $bin_dir/$b"
done

# The Python the wheels are for: Debian 12's (Raspberry Pi OS bookworm's).
PYTHON_VERSION=3.11
case "$arch" in
    arm64) platforms=(manylinux_2_28_aarch64 manylinux2014_aarch64 manylinux_2_17_aarch64) ;;
    amd64) platforms=(manylinux_2_28_x86_64 manylinux2014_x86_64 manylinux_2_17_x86_64) ;;
    *) die "--arch is arm64 or amd64, not $arch" ;;
esac

# Where board/'s files point on a board installed by install.sh -> where the package puts them.
PATH_MAP=(
    "s#/usr/local/bin/#/usr/bin/#g"
    "s#/usr/local/lib/bikecomputer#/usr/lib/bikecomputer#g"
    "s#/usr/local/share/doc/bikecomputer#/usr/share/doc/bikecomputer#g"
    "s#/opt/bikebridge/\\.venv/bin/python#/usr/bin/python3#g"
    "s#/opt/bikebridge#/usr/lib/bikecomputer/bridge#g"
    "s#/etc/tmpfiles.d/bikecomputer.conf#/usr/lib/tmpfiles.d/bikecomputer.conf#g"
    "s#^\\(\\# \\)/etc/systemd/system/\\([^ ]*\\) (installed by board/install.sh#\\1/lib/systemd/system/\\2 (installed by the bikecomputer package; board/install.sh on other boards#"
)
map_paths() { sed "${PATH_MAP[@]/#/-e}" "$1"; }

pip_cmd() {
    if [ -x "$REPO/.venv/bin/pip" ]; then echo "$REPO/.venv/bin/pip"; else echo "python3 -m pip"; fi
}

# ------------------------------------------------------------------------- the bridge's wheels
req=$REPO/board/bridge/requirements-board.txt
key=$( (cat "$req"; echo "$arch $PYTHON_VERSION ${platforms[*]}") | sha256sum | cut -c1-16)
wheels=$wheels_cache/wheels-$arch-$key
if [ ! -e "$wheels/ready" ]; then
    rm -rf "$wheels"
    mkdir -p "$wheels"
    echo "build-deb.sh: downloading the bridge's wheels for $arch, Python $PYTHON_VERSION (PyPI)"
    # shellcheck disable=SC2046
    $(pip_cmd) download -q --only-binary :all: --python-version "$PYTHON_VERSION" --implementation cp \
        $(printf -- '--platform %s ' "${platforms[@]}") --no-deps -d "$wheels" -r "$req" \
        || die "pip download of the bridge's wheels ($req) failed: is PyPI reachable?"
    touch "$wheels/ready"
fi

# ------------------------------------------------------------------------- the tree
stage=$out/deb-staging
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
d() { install -d -m 0755 "$stage/$1"; }
d usr/bin
d usr/lib/bikecomputer
d lib/systemd/system
d lib/udev/rules.d
d usr/lib/modules-load.d
d usr/lib/tmpfiles.d
d etc/bikecomputer
d etc/default
d usr/share/doc/bikecomputer
d usr/share/bikecomputer

install -m 0755 "$bin_dir/bikecomputer" "$bin_dir/bikecompanion" "$stage/usr/bin/"
install -m 0755 "$REPO/board/accounts.sh" "$stage/usr/lib/bikecomputer/accounts.sh"
install -m 0755 "$REPO/board/usb-gadget/usb-gadget.sh" "$stage/usr/lib/bikecomputer/usb-gadget.sh"
for u in "$REPO"/board/systemd/*.service "$REPO"/board/systemd/*.path "$REPO"/board/bridge/bikebridge.service \
         "$REPO"/board/usb-gadget/*.service "$REPO"/board/usb-gadget/*.path; do
    map_paths "$u" > "$stage/lib/systemd/system/$(basename "$u")"
    chmod 0644 "$stage/lib/systemd/system/$(basename "$u")"
done
install -m 0644 "$REPO/board/udev/99-bikecomputer.rules" "$stage/lib/udev/rules.d/99-bikecomputer.rules"
echo i2c-dev > "$stage/usr/lib/modules-load.d/bikecomputer.conf"
# The units' directories with their owners and modes (the service user is `bike` here).
map_paths "$REPO/board/tmpfiles.d/bikecomputer.conf" > "$stage/usr/lib/tmpfiles.d/bikecomputer.conf"
chmod 0644 "$stage/usr/lib/tmpfiles.d/bikecomputer.conf"
install -m 0644 "$REPO/board/config.toml" "$stage/etc/bikecomputer/config.toml"
install -m 0644 "$REPO/board/bridge/bikebridge.default" "$stage/etc/default/bikebridge"
install -m 0644 "$REPO/board/boot-config.txt" "$stage/usr/share/bikecomputer/boot-config.txt"
for doc in board.md config.md companion.md usb.md sensors.md power.md; do
    [ -f "$REPO/docs/$doc" ] && install -m 0644 "$REPO/docs/$doc" "$stage/usr/share/doc/bikecomputer/$doc"
done
{
    echo "bikecomputer $version, commit $commit"
    echo "The bike computer's own code: Apache License 2.0 (below). The bridge's Python dependencies in"
    echo "/usr/lib/bikecomputer/bridge carry their licences in their *.dist-info directories."
    echo
    cat "$REPO/LICENSE"
} > "$stage/usr/share/doc/bikecomputer/copyright"

# The bridge: its package and its pinned dependencies, side by side (the unit runs
# `python3 -m bikebridge` in that directory, which puts it first on sys.path).
bridge=$stage/usr/lib/bikecomputer/bridge
mkdir -p "$bridge"
cp -r "$REPO/board/bridge/bikebridge" "$bridge/bikebridge"
install -m 0644 "$req" "$bridge/requirements-board.txt"
# shellcheck disable=SC2046
$(pip_cmd) install -q --no-index --find-links "$wheels" --target "$bridge" --no-deps --no-compile \
    --only-binary :all: --python-version "$PYTHON_VERSION" --implementation cp \
    $(printf -- '--platform %s ' "${platforms[@]}") -r "$req" \
    || die "unpacking the bridge's wheels into the package failed"
rm -rf "$bridge/bin"
find "$bridge" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$stage" -type d -exec chmod 0755 {} +
find "$bridge" -type f -exec chmod 0644 {} +

# ------------------------------------------------------------------------- checks
# Every path a unit runs or names must be in the package or be the system's.
fail=""
for u in "$stage"/lib/systemd/system/*; do
    if grep -nE '/usr/local/|/opt/' "$u" >/dev/null; then
        fail+="$(basename "$u") still names $(grep -noE '/usr/local/[^ ]*|/opt/[^ ]*' "$u" | head -n 3 | tr '\n' ' ')"$'\n'
    fi
    for p in $(grep -E '^(ExecStart|ExecStartPre|ExecStartPost|ExecStop|ExecCondition|ExecReload)=' "$u" \
               | sed -E 's/^[A-Za-z]+=[-+@!:]*//' | awk '{print $1}'); do
        case "$p" in
            /usr/bin/python3|/usr/bin/install|/sbin/modprobe|/bin/sh|/usr/bin/env|/bin/echo|/usr/bin/systemd-tmpfiles) ;;
            /usr/bin/*|/usr/lib/bikecomputer/*) [ -x "$stage$p" ] || fail+="$(basename "$u") runs $p, which the package does not have"$'\n' ;;
            *) fail+="$(basename "$u") runs $p: add it to the checked system paths in build-deb.sh if it is the system's"$'\n' ;;
        esac
    done
done
grep -q '^WorkingDirectory=/usr/lib/bikecomputer/bridge$' "$stage/lib/systemd/system/bikebridge.service" \
    && grep -q '^ExecStart=/usr/bin/python3 -m bikebridge ' "$stage/lib/systemd/system/bikebridge.service" \
    || fail+="bikebridge.service does not run 'python3 -m bikebridge' in /usr/lib/bikecomputer/bridge: the package's bridge layout (build-deb.sh) needs it"$'\n'
[ -z "$fail" ] || die "the units do not fit the package:"$'\n'"$fail"

# ------------------------------------------------------------------------- DEBIAN/
installed_kb=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$installed_kb/" -e "s/@COMMIT@/$commit/" \
    "$DEB_DIR/control.in" > "$stage/DEBIAN/control"
printf '%s\n' /etc/bikecomputer/config.toml /etc/default/bikebridge > "$stage/DEBIAN/conffiles"
for s in postinst prerm postrm; do
    install -m 0755 "$DEB_DIR/$s" "$stage/DEBIAN/$s"
done
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' md5sum) \
    > "$stage/DEBIAN/md5sums"

deb=$out/bikecomputer_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null || die "dpkg-deb --build failed"
rm -rf "$stage"
echo "built $deb"
