#!/bin/sh
# Installs the USB gadget script and units (run as root on the board).
set -eu
here=$(dirname "$0")
install -D -m 0755 "$here/usb-gadget.sh" /usr/local/lib/bikecomputer/usb-gadget.sh
for u in bikecomputer-usb-gadget.service bikecomputer-usb-refresh.service bikecomputer-usb-refresh.path; do
    install -D -m 0644 "$here/$u" "/etc/systemd/system/$u"
done
mkdir -p /run/bikecomputer /var/lib/bikecomputer/rides
systemctl daemon-reload
systemctl enable --now bikecomputer-usb-gadget.service bikecomputer-usb-refresh.path
echo "USB drive enabled. Add dtoverlay=dwc2 to /boot/firmware/config.txt and dwc2 to /etc/modules if not done (docs/usb.md)."
