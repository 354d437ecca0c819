#!/bin/sh
# USB mass-storage gadget for the bike computer: the ride library as a READ-ONLY USB drive.
#
#   usb-gadget.sh up IMAGE       create the gadget (configfs) and expose IMAGE read-only
#   usb-gadget.sh refresh IMAGE  eject the medium and insert IMAGE again (after a rebuild)
#   usb-gadget.sh down           unbind and remove the gadget
#
# Needs: dtoverlay=dwc2 (peripheral mode), modules dwc2 and libcomposite, configfs mounted at
# /sys/kernel/config. See docs/usb.md. The LUN is always created with ro=1 before any medium is
# attached; this script never writes ro=0.
#
# The image belongs to the user who builds it (the app's: bikecomputer-usb-image.service), in a
# directory of theirs, and this script runs as root: it opens the image itself and hands the
# kernel that open file (/proc/self/fd/3), never the path again, and only if it is a regular file
# of IMAGE_OWNER (default: the user running this). A link put in its place (to /etc/shadow, say)
# or another user's file is refused, never exposed.
#
# Overridable for tests: GADGET_ROOT (default /sys/kernel/config/usb_gadget), UDC (default: the
# first controller in /sys/class/udc).
set -eu

GADGET_ROOT=${GADGET_ROOT:-/sys/kernel/config/usb_gadget}
G="$GADGET_ROOT/bikecomputer"
LUN="$G/functions/mass_storage.usb0/lun.0"

die() { echo "usb-gadget: $*" >&2; exit 1; }

udc_name() {
    if [ -n "${UDC:-}" ]; then echo "$UDC"; return; fi
    name=$(ls /sys/class/udc 2>/dev/null | head -n 1 || true)
    [ -n "$name" ] || die "no USB device controller: add dtoverlay=dwc2 to config.txt, load dwc2, and use the USB (not PWR) port"
    echo "$name"
}

serial() {
    s=$(sed -n 's/^Serial[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1 || true)
    echo "${s:-0000000000000001}"
}

# Opens the image as fd 3 if it is a regular file of IMAGE_OWNER reached without a link.
open_image() {
    image=$1
    [ -e "$image" ] || die "$image does not exist: build it with 'bikecomputer usb-image --out $image'"
    [ ! -L "$image" ] || die "$image is a symbolic link: refused (the image must be a regular file)"
    [ -f "$image" ] || die "$image is not a regular file: refused"
    owner=${IMAGE_OWNER:-$(id -un)}
    uid=$(id -u "$owner" 2>/dev/null) || die "no user $owner (IMAGE_OWNER)"
    exec 3< "$image" || die "cannot open $image"
    # What was opened (a link swapped in after the checks above is caught here).
    seen=$(stat -L -c '%u %F' /proc/self/fd/3) || die "cannot stat the opened $image"
    [ "$seen" = "$uid regular file" ] || { exec 3<&-; die "$image is not a regular file of $owner ($seen): refused"; }
}

# Inserts the image open as fd 3 (open_image) and closes it: the kernel holds its own reference.
attach() {
    echo 1 > "$LUN/ro"          # read-only, always, before the medium
    echo /proc/self/fd/3 > "$LUN/file"   # the open file (echo is the shell's own: its fd 3)
    exec 3<&-
}

up() {
    image=$1
    [ -d "$GADGET_ROOT" ] || die "$GADGET_ROOT missing: modprobe libcomposite and mount configfs"
    open_image "$image"
    if [ -d "$G" ]; then down; fi
    mkdir -p "$G"
    echo 0x1d6b > "$G/idVendor"        # Linux Foundation
    echo 0x0104 > "$G/idProduct"       # Multifunction Composite Gadget
    echo 0x0100 > "$G/bcdDevice"
    echo 0x0200 > "$G/bcdUSB"
    mkdir -p "$G/strings/0x409"
    serial > "$G/strings/0x409/serialnumber"
    echo "Open Bike Computer" > "$G/strings/0x409/manufacturer"
    echo "Bike Computer Rides" > "$G/strings/0x409/product"
    mkdir -p "$G/configs/c.1/strings/0x409"
    echo "Ride library (read-only)" > "$G/configs/c.1/strings/0x409/configuration"
    echo 100 > "$G/configs/c.1/MaxPower"
    mkdir -p "$LUN"
    echo 1 > "$G/functions/mass_storage.usb0/stall"
    echo 1 > "$LUN/removable"
    echo 0 > "$LUN/cdrom"
    echo 1 > "$LUN/nofua"
    attach
    ln -s "$G/functions/mass_storage.usb0" "$G/configs/c.1/"
    udc_name > "$G/UDC"
}

refresh() {
    image=$1
    [ -d "$LUN" ] || { up "$image"; return; }
    # The new image opened and checked first: one that is refused leaves the drive as it was.
    open_image "$image"
    # Eject even if the host locked the medium, then insert the rebuilt image (a new inode:
    # the old one stayed intact while it was being rebuilt).
    if [ -e "$LUN/forced_eject" ]; then echo 1 > "$LUN/forced_eject"; else echo "" > "$LUN/file"; fi
    attach
}

down() {
    [ -d "$G" ] || return 0
    [ -e "$G/UDC" ] && echo "" > "$G/UDC" || true
    rm -f "$G/configs/c.1/mass_storage.usb0"
    rmdir "$G/configs/c.1/strings/0x409" "$G/configs/c.1" 2>/dev/null || true
    rmdir "$LUN" 2>/dev/null || true
    rmdir "$G/functions/mass_storage.usb0" "$G/strings/0x409" "$G" 2>/dev/null || true
}

case "${1:-}" in
    up) [ $# -eq 2 ] || die "usage: $0 up IMAGE"; up "$2" ;;
    refresh) [ $# -eq 2 ] || die "usage: $0 refresh IMAGE"; refresh "$2" ;;
    down) down ;;
    *) die "usage: $0 up IMAGE | refresh IMAGE | down" ;;
esac
