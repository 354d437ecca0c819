#!/bin/sh
# Installs the USB gadget script and units (run as root on the board, after board/install.sh):
#   sudo board/usb-gadget/install.sh [--user NAME]   (the app's service user, as given to install.sh)
# The image is built as that user (bikecomputer-usb-image.service); only the gadget's configfs
# steps run as root. The directories are board/install.sh's (/etc/tmpfiles.d/bikecomputer.conf):
# this script makes none itself, so the order (the USB drive before the first ride) cannot leave
# the rides directory root's.
set -eu
here=$(dirname "$0")
user=bike
while [ $# -gt 0 ]; do
    case "$1" in
        --user) user=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "usb-gadget/install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "usb-gadget/install.sh: run as root (sudo board/usb-gadget/install.sh)" >&2
    exit 1
fi
if ! id "$user" >/dev/null 2>&1 || [ ! -f /etc/tmpfiles.d/bikecomputer.conf ]; then
    echo "usb-gadget/install.sh: install the bike computer first (sudo board/install.sh; docs/board.md), then run this again" >&2
    exit 1
fi
install -D -m 0755 "$here/usb-gadget.sh" /usr/local/lib/bikecomputer/usb-gadget.sh
for u in bikecomputer-usb-image.service bikecomputer-usb-gadget.service bikecomputer-usb-refresh.service bikecomputer-usb-refresh.path; do
    sed "s/^User=bike$/User=$user/; s/^Group=bike$/Group=$user/; s/^Environment=IMAGE_OWNER=bike$/Environment=IMAGE_OWNER=$user/" \
        "$here/$u" > "/etc/systemd/system/$u"
    chmod 0644 "/etc/systemd/system/$u"
done
# libcomposite at boot (the gadget unit loads no module itself: it has no CAP_SYS_MODULE).
echo libcomposite > /etc/modules-load.d/bikecomputer-usb.conf
modprobe libcomposite 2>/dev/null || true
systemd-tmpfiles --create /etc/tmpfiles.d/bikecomputer.conf || true
rm -f /var/lib/bikecomputer/usb.img /var/lib/bikecomputer/usb.img.tmp  # where an earlier version kept it
systemctl daemon-reload
systemctl enable --now bikecomputer-usb-gadget.service bikecomputer-usb-refresh.path
echo "USB drive enabled. Add dtoverlay=dwc2 to /boot/firmware/config.txt and dwc2 to /etc/modules if not done (docs/usb.md)."
