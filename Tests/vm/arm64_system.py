"""Debian 12 for arm64 in the VM, as a rider's Raspberry Pi OS Lite (64-bit) is (issue 26).

Built on vmlib and system.py (the same initramfs, guest files and System class as the x86 system
VM, on Debian's arm64 kernel under qemu-system-aarch64 -M virt -cpu cortex-a53, TCG):

    img = arm64_system.image(k, arm64_modules)       # cached under .build/vm/system
    vm = system.System(k, img)                        # boots it with systemd, as on amd64
    rootfs = arm64_system.rootfs_drive(img)           # or its python3 etc. for a busybox guest

- `foreign_rootfs()`: `debootstrap --foreign --arch=arm64 --variant=minbase bookworm` on the host
  (downloads and unpacks; the host cannot run arm64 programs without binfmt, which this does not
  touch), cached by its package list.
- `image()`: that tree with the test's guest files (system._write_guest_files: the test unit, the
  hardware stand-ins, the masks, fstab) and the kernel's modules (and the project's ssd1306-sim
  and gpio-sim for arm64), made into an ext4 image, then booted once in an arm64 guest that runs
  debootstrap's second stage (the packages' maintainer scripts, under TCG); cached by content.
  What the package under test needs from Debian (python3, libusb, gpiod, i2c-tools,
  libjs-chart.js) is in it already: the guest has no network, and `apt install ./x.deb` resolves
  its dependencies from what is installed, as on a rider's Pi with them installed.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import tempfile
import time

import system
import vmlib
from vmlib import VMUnavailable, log, sh

SUITE = "bookworm"
ROOTFS_PACKAGES = ["systemd", "systemd-sysv", "udev", "kmod", "iproute2", "procps", "python3", "e2fsprogs", "gpiod",
                   "libgpiod2", "i2c-tools", "libi2c0", "libjs-chart.js", "systemd-timesyncd", "libusb-1.0-0",
                   "init-system-helpers", "dosfstools", "mtools"]
# The arm64 console is ttyAMA0: its getty would hang up the console like ttyS0's on amd64.
MASKED_UNITS = ["serial-getty@ttyAMA0.service"]
SECOND_STAGE_TIMEOUT_S = 2400


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


@vmlib.serialised
def foreign_rootfs() -> pathlib.Path:
    """The first stage of debootstrap for arm64 (read-only input: images are made from copies)."""
    vmlib.ensure_packages(["debootstrap", "e2fsprogs", "debian-archive-keyring", "qemu-utils"])
    key = _key(SUITE, "arm64", *ROOTFS_PACKAGES)
    root = system.SYSTEM / f"rootfs-arm64-{key}"
    ready = system.SYSTEM / f"rootfs-arm64-{key}.ready"
    if ready.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    mirror, _ = vmlib.system_mirrors()
    started = time.monotonic()
    with vmlib.timed(f"debootstrap --foreign --arch=arm64 {SUITE} ({len(ROOTFS_PACKAGES)} packages) from {mirror}"):
        sh(["debootstrap", "--foreign", "--arch=arm64", "--variant=minbase", f"--include={','.join(ROOTFS_PACKAGES)}",
            SUITE, str(root), mirror], timeout=1800)
    ready.write_text(f"{time.monotonic() - started:.0f} s\n")
    return root


SECOND_STAGE = r"""
set -u
mkdir -p /mnt
mount -t ext4 /dev/vda /mnt || { echo "cannot mount the new root"; exit 80; }
mount -t proc proc /mnt/proc
mount -o bind /dev /mnt/dev
mount -o bind /sys /mnt/sys
echo "second stage: $(date)"
chroot /mnt /debootstrap/debootstrap --second-stage > /out/second-stage.log 2>&1
status=$?
tail -n 20 /out/second-stage.log
if [ $status = 0 ]; then
    chroot /mnt /usr/bin/passwd -d root
    # apt in the guest has no network: what the package needs is installed; no lists, no cache.
    rm -rf /mnt/var/cache/apt/archives/*.deb /mnt/var/lib/apt/lists/*_Packages
    chroot /mnt /usr/bin/dpkg --print-architecture
    chroot /mnt /usr/bin/python3 --version
fi
umount /mnt/sys /mnt/dev /mnt/proc
sync
umount /mnt
exit $status
"""


@vmlib.serialised(per_arch=True)
def image(k: vmlib.Kernel, modules: list[pathlib.Path], size_mb: int = 2048) -> pathlib.Path:
    """The configured arm64 system (debootstrap's second stage done in a guest), with the test's
    guest files and the kernel's modules; cached by content. Never changed by a test (System
    boots it through a qcow2 overlay)."""
    if k.arch.name != "arm64":
        raise ValueError("arm64_system.image wants the arm64 kernel")
    base = foreign_rootfs()
    h = hashlib.sha256()
    for part in [base.name, k.version, system.SYSTEM_INIT, system.FSTAB, system.VM_TEST_UNIT, system.VM_HARDWARE_UNIT,
                 system.VM_HARDWARE, " ".join(system.MASKED_UNITS + MASKED_UNITS), " ".join(system.GUEST_MODULES),
                 SECOND_STAGE]:
        h.update(part.encode())
    h.update(vmlib.file_hash(*modules).encode())
    out = system.SYSTEM / f"arm64-system-{h.hexdigest()[:16]}.img"
    if out.exists():
        return out
    for old in system.SYSTEM.glob("arm64-system-*.img"):
        old.unlink()  # one at a time (2 GB sparse each)
    started = time.monotonic()
    with vmlib.timed("arm64 system image (copy, guest files, mkfs, second stage in a guest)"), \
            tempfile.TemporaryDirectory(dir=system.SYSTEM) as tmp:
        root = pathlib.Path(tmp) / "root"
        sh(["cp", "-a", str(base), str(root)], timeout=600)
        system._write_guest_files(root)
        system_dir = root / "etc" / "systemd" / "system"
        for unit in MASKED_UNITS:
            p = system_dir / unit
            if p.is_symlink() or p.exists():
                p.unlink()
            p.symlink_to("/dev/null")
        system._copy_modules(k, system.GUEST_MODULES, modules, root)
        raw = pathlib.Path(tmp) / "root.img"
        sh(["mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", str(root), str(raw), f"{size_mb}M"], timeout=600)
        vm = vmlib.Machine(k, ["virtio_blk", "crc32c_generic", "ext4"], [], host_root=False, memory_mb=1024, smp=2,
                           qemu_args=["-drive", f"file={raw},format=raw,if=virtio,cache=unsafe"])
        log("arm64 system image: debootstrap's second stage in an arm64 guest (minutes under TCG)")
        r = vm.run(SECOND_STAGE, timeout_s=SECOND_STAGE_TIMEOUT_S, name="arm64-second-stage")
        (system.SYSTEM / "arm64-second-stage.log").write_text(r.describe())
        if not r.ok:
            raise VMUnavailable(f"debootstrap's second stage failed in the arm64 guest:\n{r.describe()}")
        if "arm64" not in r.stdout or "Python 3" not in r.stdout:
            raise VMUnavailable(f"the arm64 system image is not what it should be:\n{r.describe()}")
        os.replace(raw, out)
    log(f"arm64 system image ready in {time.monotonic() - started:.0f} s")
    return out


def rootfs_drive(img: pathlib.Path) -> list[str]:
    """QEMU arguments that give a busybox guest (vmlib.Machine) the arm64 system as /dev/vda,
    its writes thrown away (snapshot=on): for its python3, chrooted (IN_ROOTFS below)."""
    return ["-drive", f"file={img},format=raw,if=virtio,snapshot=on"]


# Shell for a busybox guest with rootfs_drive(): `inrootfs CMD...` runs CMD in the arm64 Debian
# system (its python3), with /dev, /proc, /sys, the host root at /host and /out bound in and a
# tmpfs on /tmp: the busybox guest's kernel, modules and hardware stand-ins, Debian's userland.
IN_ROOTFS = r"""
mkdir -p /rootfs
mount -t ext4 /dev/vda /rootfs || { echo "cannot mount the arm64 system (/dev/vda)"; exit 81; }
mount -t tmpfs tmpfs /rootfs/tmp
mount -t tmpfs tmpfs /rootfs/run
mount -o rbind /dev /rootfs/dev
mount -t proc proc /rootfs/proc
mount -o rbind /sys /rootfs/sys
mkdir -p /rootfs/host /rootfs/out
mount -o rbind /host /rootfs/host
mount -o bind /out /rootfs/out
inrootfs() {
    chroot /rootfs /usr/bin/env -i HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 SWIFT_BACKTRACE=interactive=no \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
"""
