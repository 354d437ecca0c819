#!/bin/sh
# The users, groups and directories an installed bike computer needs, made in ONE place for both
# ways to install it: board/install.sh (development boards) and the Debian package's postinst
# (packaging/deb/postinst, which runs this file as /usr/lib/bikecomputer/accounts.sh). Change
# them here and both installs follow. Idempotent: run it again after an update.
#
#   accounts.sh [--user NAME] [--bridge-user NAME] [--bridge-home DIR] [--no-bridge]
#
# - the groups gpio, i2c and spi (the udev rules give them /dev/gpiochip*, /dev/i2c-* and
#   /dev/spidev*: the memory LCD);
# - the service user (default `bike`), a system user without a login shell, in gpio, i2c, spi
#   and dialout (a UART GPS);
# - /etc/bikecomputer, root:USER 0775: pairing a sensor makes the app (as USER) write config.toml
#   anew and rename it over the old one; the file stays readable by all;
# - /var/lib/bikecomputer, USER:USER 0750: the journal and the rides (a card's rides partition is
#   mounted there; the unit's ExecStartPre makes it again if a fresh partition is root's);
# - the group BRIDGE_USER (default `bikebridge`), even with --no-bridge: the directory of the app's
#   sockets is USER:BRIDGE_USER 2710 (board/tmpfiles.d/bikecomputer.conf), so the bridge reaches
#   bridge.sock (0660, of that group) but not the owner-only control socket;
# - with the bridge: the groups plugdev (the ANT+ stick) and bluetooth (BlueZ's D-Bus policy) and
#   the bridge's user (home BRIDGE_HOME) with BRIDGE_USER as its own group. It is not in USER's
#   group: that would give it the app's config directory and every ride (an earlier install put
#   it there; it is taken out).
set -eu

user=bike
bridge_user=bikebridge
bridge_home=/opt/bikebridge
with_bridge=yes

while [ $# -gt 0 ]; do
    case "$1" in
        --user) user=$2; shift 2 ;;
        --bridge-user) bridge_user=$2; shift 2 ;;
        --bridge-home) bridge_home=$2; shift 2 ;;
        --no-bridge) with_bridge=no; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "accounts.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done

if [ "$(id -u)" -ne 0 ]; then
    echo "accounts.sh: run as root" >&2
    exit 1
fi

system_group() {
    getent group "$1" >/dev/null || groupadd --system "$1"
}

# system_user NAME HOME: a system user with its own group, no login shell, no home made.
system_user() {
    if ! id "$1" >/dev/null 2>&1; then
        useradd --system --user-group --home-dir "$2" --no-create-home --shell /usr/sbin/nologin "$1"
    fi
}

echo "* groups and the $user user"
system_group gpio
system_group i2c
system_group spi
system_group dialout
system_user "$user" /var/lib/bikecomputer
usermod -aG gpio,i2c,spi,dialout "$user"

echo "* /etc/bikecomputer (root:$user 0775) and /var/lib/bikecomputer ($user 0750)"
install -d -m 0775 /etc/bikecomputer
chown "root:$user" /etc/bikecomputer
chmod 0775 /etc/bikecomputer
# A data directory that is a read-only or failed card is no reason to fail the install: the
# unit starts anyway and shows STORAGE ERROR (docs/board.md, "A full or failing card").
install -d -o "$user" -g "$user" -m 0750 /var/lib/bikecomputer 2>/dev/null \
    || echo "  /var/lib/bikecomputer could not be made $user's (a read-only card?): the unit retries at start" >&2

system_group "$bridge_user"
if [ "$with_bridge" = yes ]; then
    echo "* the bridge's user $bridge_user (its own group; plugdev, bluetooth)"
    system_group plugdev
    system_group bluetooth
    if ! id "$bridge_user" >/dev/null 2>&1; then
        useradd --system --gid "$bridge_user" --home-dir "$bridge_home" --no-create-home --shell /usr/sbin/nologin "$bridge_user"
    fi
    usermod -g "$bridge_user" -aG plugdev,bluetooth "$bridge_user"
    if id -nG "$bridge_user" | tr ' ' '\n' | grep -qx "$user"; then
        gpasswd -d "$bridge_user" "$user" >/dev/null && echo "  $bridge_user is no longer in the group $user"
    fi
fi
