#!/bin/sh
# Installs bikecomputer on a Raspberry Pi (or any Debian-like board):
#   sudo board/install.sh [--binary PATH] [--companion PATH | --no-companion] [--boot-config] [--user NAME]
#                         [--bridge-wheels DIR | --no-bridge]
# - the binary to /usr/local/bin/bikecomputer
# - a system user (default `bike`) in the gpio, i2c, spi and dialout groups, and the group
#   `bikebridge` (the bridge socket's)
# - /etc/tmpfiles.d/bikecomputer.conf: the units' directories with their owners and modes
# - udev rules for /dev/gpiochip* and /dev/i2c-* (group access, no root needed) and the ANT+ stick
# - /etc/bikecomputer/config.toml (kept if it exists) and the systemd unit
# - the phone companion (/usr/local/bin/bikecompanion, Chart.js, its own unit), which stays off
#   until the config says [companion] enabled = true
# - the sensor bridge: its own user `bikebridge` (its group is the app's bridge socket's; not in
#   the service user's group; in plugdev/bluetooth for the radios), /opt/bikebridge with a venv
#   of board/bridge/requirements-board.txt (from PyPI, or offline from --bridge-wheels DIR), and
#   its unit; its sensors are the config's [[sensor]] tables (more options: /etc/default/bikebridge)
# - the power-off path unit (the app asks for a clean power-off at a critical battery)
# - with --boot-config: the I2C/button lines appended once to the boot config.txt
# Run it again after an update: it only replaces the binaries and the units.
#
# Each part is one function below, run in order by main(); a new part (e.g. the bridge's user,
# venv and unit) is a new function and one line in main().
set -eu

here=$(cd "$(dirname "$0")" && pwd)
binary="$here/../.build/release/bikecomputer"
companion=""            # default: bikecompanion beside the binary
with_companion=yes
user=bike
boot_config=no
with_bridge=yes
bridge_wheels=""        # a directory of wheels for an offline install (default: PyPI)
bridge_user=bikebridge
doc_dir=/usr/local/share/doc/bikecomputer

usage() { sed -n '2,22p' "$0"; }

parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --binary) binary=$2; shift 2 ;;
            --companion) companion=$2; shift 2 ;;
            --no-companion) with_companion=no; shift ;;
            --user) user=$2; shift 2 ;;
            --boot-config) boot_config=yes; shift ;;
            --bridge-wheels) bridge_wheels=$2; shift 2 ;;
            --no-bridge) with_bridge=no; shift ;;
            -h|--help) usage; exit 0 ;;
            *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
        esac
    done
    [ -n "$companion" ] || companion="$(dirname "$binary")/bikecompanion"
}

check_prerequisites() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: run as root (sudo board/install.sh)" >&2
        exit 1
    fi
    if [ ! -x "$binary" ]; then
        echo "install.sh: no binary at $binary; build it with 'scripts/build-release.sh --static-swift-stdlib --product bikecomputer' or pass --binary PATH" >&2
        exit 1
    fi
    if [ "$with_companion" = yes ] && [ ! -x "$companion" ]; then
        echo "install.sh: no companion at $companion; build it with 'scripts/build-release.sh --static-swift-stdlib --product bikecompanion', pass --companion PATH, or install without it: --no-companion" >&2
        exit 1
    fi
    if [ "$with_bridge" = yes ] && [ -n "$bridge_wheels" ] && [ ! -d "$bridge_wheels" ]; then
        echo "install.sh: no wheel directory at $bridge_wheels; make one on a machine with network: pip download -d WHEELS -r board/bridge/requirements-board.txt" >&2
        exit 1
    fi
}

install_packages() {
    # gpiod and i2c-tools pull in the libgpiod and libi2c runtime libraries; libjs-chart.js is
    # the companion page's charts (served by the companion: the phone has no internet on a ride).
    packages="gpiod i2c-tools"
    if [ "$with_companion" = yes ]; then packages="$packages libjs-chart.js"; fi
    # python3-venv for the bridge's venv; libusb-1.0-0 is what pyusb (openant) opens the ANT+
    # stick with: without it the bridge fails with "No backend available".
    if [ "$with_bridge" = yes ]; then packages="$packages python3-venv libusb-1.0-0"; fi
    echo "* packages: $packages"
    if command -v apt-get >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends $packages
    else
        echo "  no apt-get on this system: install $packages with its package manager" >&2
    fi
}

# Users, groups and directories: board/accounts.sh, shared with the Debian package's postinst.
install_user() {
    if [ "$with_bridge" = yes ]; then
        sh "$here/accounts.sh" --user "$user" --bridge-user "$bridge_user" --bridge-home /opt/bikebridge
    else
        sh "$here/accounts.sh" --user "$user" --no-bridge
    fi
}

# Every file is put in place whole: written beside its destination, made durable, then renamed
# over it (rename(2) replaces it at once), so a power cut at any moment of an install or an
# upgrade leaves the old file or the new one, never a half-written or not-yet-executable one (the
# power-cut loop found /usr/local/bin/bikecomputer without its mode after a cut here: docs/power.md).
# readable_by_all FILE: a+r on FILE without following a link. /etc/bikecomputer is the service
# user's to write (pairing rewrites the config), so a root `chmod` there could be pointed at any
# file of the system by a link put in the config's place.
readable_by_all() {
    python3 - "$1" 2>/dev/null <<'PY' || echo "  $1 is not a regular file: left as it is (put the config file there)" >&2
import os, stat, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
st = os.fstat(fd)
if not stat.S_ISREG(st.st_mode):
    sys.exit(1)
os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o444)
PY
}

# put MODE SRC DST
put() {
    put_text "$1" "$3" < "$2"
}

# put_text MODE DST: standard input, put in place as `put` does.
put_text() {
    tmp="$2.new.$$"
    cat > "$tmp"
    chmod "$1" "$tmp"
    sync "$tmp"
    mv -f "$tmp" "$2"
    sync "$(dirname "$2")"
}

# The units' directories, owner and mode (board/tmpfiles.d/bikecomputer.conf, with $user for
# `bike`): made or corrected now, at every boot, and before each start of the app. Nothing else
# makes them, so the order of installation (the USB drive before the first ride, say) does not
# matter (issue 27).
install_directories() {
    echo "* directories (/etc/tmpfiles.d/bikecomputer.conf)"
    awk -v u="$user" '$1 !~ /^#/ && NF >= 5 { if ($4 == "bike") $4 = u; if ($5 == "bike") $5 = u } { print }' \
        "$here/tmpfiles.d/bikecomputer.conf" | put_text 0644 /etc/tmpfiles.d/bikecomputer.conf
    systemd-tmpfiles --create /etc/tmpfiles.d/bikecomputer.conf || echo "  (the data partition is not writable now: the app's start corrects it)" >&2
    # An earlier install kept the companion's tokens in the data directory itself and the USB image
    # beside them; the companion now sees only companion/, the image is in usb/. rename(2) and
    # unlink(2) follow no link.
    data=/var/lib/bikecomputer
    if [ -f "$data/companion-tokens" ] && [ ! -L "$data/companion-tokens" ] && [ ! -e "$data/companion/companion-tokens" ]; then
        mv "$data/companion-tokens" "$data/companion/companion-tokens" && echo "  moved the companion's tokens to $data/companion/"
    fi
    rm -f "$data/usb.img" "$data/usb.img.tmp"
}

install_udev() {
    echo "* udev rules and the i2c-dev module"
    getent group plugdev >/dev/null || groupadd --system plugdev
    put 0644 "$here/udev/99-bikecomputer.rules" /etc/udev/rules.d/99-bikecomputer.rules
    echo i2c-dev | put_text 0644 /etc/modules-load.d/bikecomputer.conf
    modprobe i2c-dev 2>/dev/null || true
    udevadm control --reload-rules && udevadm trigger --subsystem-match=gpio --subsystem-match=i2c-dev --subsystem-match=spidev --subsystem-match=usb || true
}

# A unit file from board/systemd with User=/Group= set to the service user.
install_unit() {
    sed "s/^User=bike$/User=$user/; s/^Group=bike$/Group=$user/" "$here/systemd/$1" | put_text 0644 "/etc/systemd/system/$1"
}

install_device() {
    echo "* binary and config"
    put 0755 "$binary" /usr/local/bin/bikecomputer
    # /etc/bikecomputer (root:$user 0775: pairing rewrites config.toml) is made by accounts.sh.
    # The file stays readable by all (the bridge, the companion, a shell).
    if [ ! -e /etc/bikecomputer/config.toml ]; then
        put 0644 "$here/config.toml" /etc/bikecomputer/config.toml
    else
        echo "  keeping the existing /etc/bikecomputer/config.toml"
        readable_by_all /etc/bikecomputer/config.toml
    fi
    /usr/local/bin/bikecomputer config check /etc/bikecomputer/config.toml >/dev/null
    install -d -m 0755 "$doc_dir"
    for doc in board.md config.md companion.md power.md; do
        if [ -f "$here/../docs/$doc" ]; then put 0644 "$here/../docs/$doc" "$doc_dir/$doc"; fi
    done
    echo "* systemd unit bikecomputer.service"
    install_unit bikecomputer.service
    systemctl daemon-reload
    systemctl enable bikecomputer.service
}

install_companion() {
    [ "$with_companion" = yes ] || { echo "* companion: skipped (--no-companion)"; return 0; }
    echo "* companion: bikecompanion and bikecompanion.service (runs as $user, like bikecomputer: the control socket accepts only that user)"
    # `bikecomputer companion` runs bikecompanion from the directory bikecomputer is in.
    put 0755 "$companion" /usr/local/bin/bikecompanion
    install_unit bikecompanion.service
    systemctl daemon-reload
    # Enabled, but its ExecCondition (bikecompanion check-enabled) skips it until the config
    # has [companion] enabled = true.
    systemctl enable bikecompanion.service
    if /usr/local/bin/bikecompanion check-enabled --config /etc/bikecomputer/config.toml >/dev/null 2>&1; then
        echo "  [companion] enabled = true: it starts with the unit"
    else
        echo "  off until [companion] enabled = true in /etc/bikecomputer/config.toml; then: sudo systemctl start bikecompanion"
    fi
}

install_bridge() {
    [ "$with_bridge" = yes ] || { echo "* bridge: skipped (--no-bridge)"; return 0; }
    echo "* bridge: the $bridge_user user, /opt/bikebridge (venv) and bikebridge.service"
    # The app's bridge socket is /run/bikecomputer/bridge.sock, mode 0660, of the group
    # $bridge_user (its directory is $user:$bridge_user 2710, bikecomputer.conf): the bridge
    # reaches it through its own group, not the group $user (that would give it the app's config
    # directory and the data directory). The control socket (0600) stays the service user's only.
    # Its user and groups: accounts.sh (install_user).
    install -d -m 0755 /opt/bikebridge
    put 0644 "$here/bridge/requirements-board.txt" /opt/bikebridge/requirements-board.txt
    # The venv, when its requirements changed: made beside (.venv.new), then renamed into place
    # (the old one renamed away first: the two renames in one breath, a cut between them leaves
    # .venv.old, which the next install.sh puts back).
    if [ ! -e /opt/bikebridge/.venv ] && [ -d /opt/bikebridge/.venv.old ]; then mv /opt/bikebridge/.venv.old /opt/bikebridge/.venv; fi
    if [ ! -x /opt/bikebridge/.venv/bin/python ] || ! cmp -s "$here/bridge/requirements-board.txt" /opt/bikebridge/.venv/requirements.installed; then
        rm -rf /opt/bikebridge/.venv.new /opt/bikebridge/.venv.old
        python3 -m venv /opt/bikebridge/.venv.new
        if [ -n "$bridge_wheels" ]; then
            /opt/bikebridge/.venv.new/bin/pip install -q --no-index --find-links "$bridge_wheels" -r /opt/bikebridge/requirements-board.txt
        else
            /opt/bikebridge/.venv.new/bin/pip install -q -r /opt/bikebridge/requirements-board.txt
        fi
        cp "$here/bridge/requirements-board.txt" /opt/bikebridge/.venv.new/requirements.installed
        sync -f /opt/bikebridge/.venv.new
        if [ -e /opt/bikebridge/.venv ]; then mv /opt/bikebridge/.venv /opt/bikebridge/.venv.old; fi
        mv /opt/bikebridge/.venv.new /opt/bikebridge/.venv
        sync /opt/bikebridge
        rm -rf /opt/bikebridge/.venv.old
    fi
    # The bridge's package: a new directory of its own (bikebridge-TIME-PID, compiled), then the
    # link /opt/bikebridge/bikebridge (the unit runs `python -m bikebridge` there) renamed over
    # to it at once; the old directories go after.
    stage="bikebridge-$(date +%s)-$$"
    cp -r "$here/bridge/bikebridge" "/opt/bikebridge/$stage"
    find "/opt/bikebridge/$stage" -name __pycache__ -prune -exec rm -rf {} +
    /opt/bikebridge/.venv/bin/python -m compileall -q "/opt/bikebridge/$stage" >/dev/null
    sync -f "/opt/bikebridge/$stage"
    if [ -d /opt/bikebridge/bikebridge ] && [ ! -L /opt/bikebridge/bikebridge ]; then
        # An earlier install's plain directory (once: from then on it is a link).
        mv /opt/bikebridge/bikebridge "/opt/bikebridge/bikebridge-old-$$"
    fi
    ln -s "$stage" /opt/bikebridge/bikebridge.new
    mv -T /opt/bikebridge/bikebridge.new /opt/bikebridge/bikebridge
    sync /opt/bikebridge
    for old in /opt/bikebridge/bikebridge-*; do
        [ "$old" = "/opt/bikebridge/$stage" ] || rm -rf "$old"
    done
    # The sensors are the config's [[sensor]] tables (the unit passes --config). An earlier
    # install's default, wildcard ANT+ channels that the app ignored (it records paired sensors
    # only), is replaced; a file edited by hand is kept.
    if [ ! -e /etc/default/bikebridge ] || [ "$(grep -v '^#' /etc/default/bikebridge | grep -v '^ *$')" = 'BIKEBRIDGE_SENSORS="--ant 120 --ant 11"' ]; then
        put 0644 "$here/bridge/bikebridge.default" /etc/default/bikebridge
    else
        echo "  keeping the existing /etc/default/bikebridge (its options)"
    fi
    put 0644 "$here/bridge/bikebridge.service" /etc/systemd/system/bikebridge.service
    systemctl daemon-reload
    systemctl enable bikebridge.service
}

# The clean power-off without root (docs/power.md): the app writes /run/bikecomputer/power-off
# when the battery is empty or the power button is held; this path unit (root, PID 1) sees it
# and powers the board off. The app gets no privilege for it.
install_power() {
    echo "* power: bikecomputer-poweroff.path and bikecomputer-poweroff.service (the app asks for a clean power-off)"
    install_unit bikecomputer-poweroff.path
    install_unit bikecomputer-poweroff.service
    systemctl daemon-reload
    systemctl enable bikecomputer-poweroff.path
}

install_boot_config() {
    [ "$boot_config" = yes ] || return 0
    cfg=/boot/firmware/config.txt
    [ -f "$cfg" ] || cfg=/boot/config.txt
    if [ ! -f "$cfg" ]; then
        echo "install.sh: no /boot/firmware/config.txt or /boot/config.txt; add board/boot-config.txt by hand" >&2
    elif grep -q '^# \[bikecomputer\]' "$cfg"; then
        echo "  $cfg already has the bikecomputer lines"
    else
        cp "$cfg" "$cfg.before-bikecomputer"
        # Whole or not at all, as `put` (no chmod: the boot partition is FAT).
        cat "$cfg" "$here/boot-config.txt" > "$cfg.new.$$"
        sync "$cfg.new.$$"
        mv -f "$cfg.new.$$" "$cfg"
        sync "$(dirname "$cfg")"
        echo "  appended the I2C and button lines to $cfg (reboot to apply)"
    fi
}

main() {
    parse_args "$@"
    check_prerequisites
    install_packages
    install_user
    install_directories
    install_udev
    install_device
    install_companion
    install_bridge
    install_power
    install_boot_config
    echo "done: reboot (boot config), then 'systemctl start bikecomputer' and 'bikecomputer ctl status'"
}

main "$@"
