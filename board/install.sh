#!/bin/sh
# Installs bikecomputer on a Raspberry Pi (or any Debian-like board):
#   sudo board/install.sh [--binary PATH] [--companion PATH | --no-companion] [--boot-config] [--user NAME]
#                         [--bridge-wheels DIR | --no-bridge]
# - the binary to /usr/local/bin/bikecomputer
# - a system user (default `bike`) in the gpio, i2c, spi and dialout groups
# - udev rules for /dev/gpiochip* and /dev/i2c-* (group access, no root needed)
# - /etc/bikecomputer/config.toml (kept if it exists) and the systemd unit
# - the phone companion (/usr/local/bin/bikecompanion, Chart.js, its own unit), which stays off
#   until the config says [companion] enabled = true
# - the sensor bridge: its own user `bikebridge` (in the service user's group, so it may use the
#   app's bridge socket, and in plugdev/bluetooth for the radios), /opt/bikebridge with a venv
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

usage() { sed -n '2,20p' "$0"; }

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

install_user() {
    echo "* groups and the $user user"
    for g in gpio i2c spi; do
        getent group "$g" >/dev/null || groupadd --system "$g"
    done
    if ! id "$user" >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/bikecomputer --no-create-home --shell /usr/sbin/nologin "$user"
    fi
    usermod -aG gpio,i2c,spi,dialout "$user"
}

install_udev() {
    echo "* udev rules and the i2c-dev module"
    install -m 0644 "$here/udev/99-bikecomputer.rules" /etc/udev/rules.d/99-bikecomputer.rules
    echo i2c-dev > /etc/modules-load.d/bikecomputer.conf
    modprobe i2c-dev 2>/dev/null || true
    udevadm control --reload-rules && udevadm trigger --subsystem-match=gpio --subsystem-match=i2c-dev --subsystem-match=spidev || true
}

# A unit file from board/systemd with User=/Group= set to the service user.
install_unit() {
    sed "s/^User=bike$/User=$user/; s/^Group=bike$/Group=$user/" "$here/systemd/$1" > "/etc/systemd/system/$1"
    chmod 0644 "/etc/systemd/system/$1"
}

install_device() {
    echo "* binary and config"
    install -m 0755 "$binary" /usr/local/bin/bikecomputer
    # Pairing a sensor (the unit's Sensors screen, `bikecomputer sensors pair`) makes the app,
    # running as $user, write config.toml anew and rename it over the old one: the directory is
    # the group's to write. The file stays readable by all (the bridge, the companion, a shell).
    install -d -m 0755 /etc/bikecomputer
    chown "root:$user" /etc/bikecomputer
    chmod 0775 /etc/bikecomputer
    if [ ! -e /etc/bikecomputer/config.toml ]; then
        install -m 0644 "$here/config.toml" /etc/bikecomputer/config.toml
    else
        echo "  keeping the existing /etc/bikecomputer/config.toml"
        chmod a+r /etc/bikecomputer/config.toml
    fi
    /usr/local/bin/bikecomputer config check /etc/bikecomputer/config.toml >/dev/null
    install -d -m 0755 "$doc_dir"
    for doc in board.md config.md companion.md power.md; do
        if [ -f "$here/../docs/$doc" ]; then install -m 0644 "$here/../docs/$doc" "$doc_dir/$doc"; fi
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
    install -m 0755 "$companion" /usr/local/bin/bikecompanion
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
    # The app's bridge socket is /run/bikecomputer/bridge.sock, mode 0660, owned by $user:$user,
    # in a directory of mode 0750: the bridge reaches it as a member of the group $user. The
    # control socket (0600) stays the service user's only.
    for g in plugdev bluetooth; do
        getent group "$g" >/dev/null || groupadd --system "$g"
    done
    if ! id "$bridge_user" >/dev/null 2>&1; then
        useradd --system --home-dir /opt/bikebridge --no-create-home --shell /usr/sbin/nologin "$bridge_user"
    fi
    usermod -aG "$user,plugdev,bluetooth" "$bridge_user"
    install -d -m 0755 /opt/bikebridge
    rm -rf /opt/bikebridge/bikebridge
    cp -r "$here/bridge/bikebridge" /opt/bikebridge/bikebridge
    find /opt/bikebridge/bikebridge -name __pycache__ -prune -exec rm -rf {} +
    install -m 0644 "$here/bridge/requirements-board.txt" /opt/bikebridge/requirements-board.txt
    if [ ! -x /opt/bikebridge/.venv/bin/python ] || ! cmp -s "$here/bridge/requirements-board.txt" /opt/bikebridge/.venv/requirements.installed; then
        rm -rf /opt/bikebridge/.venv
        python3 -m venv /opt/bikebridge/.venv
        if [ -n "$bridge_wheels" ]; then
            /opt/bikebridge/.venv/bin/pip install -q --no-index --find-links "$bridge_wheels" -r /opt/bikebridge/requirements-board.txt
        else
            /opt/bikebridge/.venv/bin/pip install -q -r /opt/bikebridge/requirements-board.txt
        fi
        cp "$here/bridge/requirements-board.txt" /opt/bikebridge/.venv/requirements.installed
    fi
    /opt/bikebridge/.venv/bin/python -m compileall -q /opt/bikebridge/bikebridge >/dev/null
    # The sensors are the config's [[sensor]] tables (the unit passes --config). An earlier
    # install's default, wildcard ANT+ channels that the app ignored (it records paired sensors
    # only), is replaced; a file edited by hand is kept.
    if [ ! -e /etc/default/bikebridge ] || [ "$(grep -v '^#' /etc/default/bikebridge | grep -v '^ *$')" = 'BIKEBRIDGE_SENSORS="--ant 120 --ant 11"' ]; then
        install -m 0644 "$here/bridge/bikebridge.default" /etc/default/bikebridge
    else
        echo "  keeping the existing /etc/default/bikebridge (its options)"
    fi
    sed "s/^SupplementaryGroups=bike$/SupplementaryGroups=$user/" "$here/bridge/bikebridge.service" > /etc/systemd/system/bikebridge.service
    chmod 0644 /etc/systemd/system/bikebridge.service
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
        cat "$here/boot-config.txt" >> "$cfg"
        echo "  appended the I2C and button lines to $cfg (reboot to apply)"
    fi
}

main() {
    parse_args "$@"
    check_prerequisites
    install_packages
    install_user
    install_udev
    install_device
    install_companion
    install_bridge
    install_power
    install_boot_config
    echo "done: reboot (boot config), then 'systemctl start bikecomputer' and 'bikecomputer ctl status'"
}

main "$@"
