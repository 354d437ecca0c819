#!/bin/sh
# Installs bikecomputer on a Raspberry Pi (or any Debian-like board):
#   sudo board/install.sh [--binary PATH] [--boot-config] [--user NAME]
# - the binary to /usr/local/bin/bikecomputer
# - a system user (default `bike`) in the gpio, i2c and dialout groups
# - udev rules for /dev/gpiochip* and /dev/i2c-* (group access, no root needed)
# - /etc/bikecomputer/config.toml (kept if it exists) and the systemd unit
# - with --boot-config: the I2C/button lines appended once to the boot config.txt
# Run it again after an update: it only replaces the binary and the unit.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
binary="$here/../.build/release/bikecomputer"
user=bike
boot_config=no

while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary=$2; shift 2 ;;
        --user) user=$2; shift 2 ;;
        --boot-config) boot_config=yes; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done

if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: run as root (sudo board/install.sh)" >&2
    exit 1
fi
if [ ! -x "$binary" ]; then
    echo "install.sh: no binary at $binary; build it with 'swift build -c release' or pass --binary PATH" >&2
    exit 1
fi

echo "* packages: gpiod and i2c-tools (they pull in the libgpiod and libi2c runtime libraries)"
if command -v apt-get >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends gpiod i2c-tools
fi

echo "* groups and the $user user"
for g in gpio i2c; do
    getent group "$g" >/dev/null || groupadd --system "$g"
done
if ! id "$user" >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/bikecomputer --no-create-home --shell /usr/sbin/nologin "$user"
fi
usermod -aG gpio,i2c,dialout "$user"

echo "* udev rules and the i2c-dev module"
install -m 0644 "$here/udev/99-bikecomputer.rules" /etc/udev/rules.d/99-bikecomputer.rules
echo i2c-dev > /etc/modules-load.d/bikecomputer.conf
modprobe i2c-dev 2>/dev/null || true
udevadm control --reload-rules && udevadm trigger --subsystem-match=gpio --subsystem-match=i2c-dev || true

echo "* binary and config"
install -m 0755 "$binary" /usr/local/bin/bikecomputer
install -d -m 0755 /etc/bikecomputer
if [ ! -e /etc/bikecomputer/config.toml ]; then
    install -m 0644 "$here/config.toml" /etc/bikecomputer/config.toml
else
    echo "  keeping the existing /etc/bikecomputer/config.toml"
fi
/usr/local/bin/bikecomputer config check /etc/bikecomputer/config.toml >/dev/null

echo "* systemd unit"
sed "s/^User=bike$/User=$user/; s/^Group=bike$/Group=$user/" "$here/systemd/bikecomputer.service" \
    > /etc/systemd/system/bikecomputer.service
chmod 0644 /etc/systemd/system/bikecomputer.service
systemctl daemon-reload
systemctl enable bikecomputer.service

if [ "$boot_config" = yes ]; then
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
fi

echo "done: reboot (boot config), then 'systemctl start bikecomputer' and 'bikecomputer ctl status'"
