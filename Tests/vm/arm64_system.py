"""Debian 12 for arm64 in the VM, as a rider's Raspberry Pi OS Lite (64-bit) is (issue 26).

Built on vmlib and system.py (the same initramfs, guest files and System class as the x86 system
VM, on Debian's arm64 kernel under qemu-system-aarch64 -M virt -cpu cortex-a53, TCG):

    img = arm64_system.image(k, arm64_modules)       # cached under .build/vm/system
    vm = system.System(k, img)                        # boots it with systemd, as on amd64
    rootfs = arm64_system.rootfs_drive(img)           # or its python3 etc. for a busybox guest

- `foreign_rootfs()`: `debootstrap --foreign --arch=arm64 --variant=minbase bookworm` on the host
  (downloads and unpacks; the host cannot run arm64 programs without binfmt, which this does not
  touch), cached by its package list.
- `configured_rootfs()`: debootstrap's second stage (the packages' maintainer scripts, arm64
  programs) run on the host under `qemu-aarch64-static`, through a binfmt_misc handler registered
  in a private user and mount namespace (Linux 6.7 or later: nothing changes for the rest of the
  machine); 4.3 min of CPU, 48 min wall at load 12-33. Where the kernel cannot, the second stage runs in an arm64 guest instead
  (under full-system TCG: over 40 min on a loaded 2-core machine).
- `image()`: that tree with the test's guest files (system._write_guest_files: the test unit, the
  hardware stand-ins, the masks, fstab) and the kernel's modules (and the project's ssd1306-sim
  and gpio-sim for arm64), made into an ext4 image; cached by content.
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
SECOND_STAGE_TIMEOUT_S = 3600  # the second stage took 40+ min under qemu-user at load 20-36


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


# aarch64 ELF executables -> qemu-aarch64-static; F: the interpreter is opened now, so it runs
# inside the chroot too.
BINFMT_AARCH64 = (r":qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:"
                  r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F")

# Runs in the private user and mount namespace (uids 0-65535 mapped to themselves, so the files
# get their real owners): its own binfmt_misc, the handler, the chroot's mounts, the second stage.
HOST_SECOND_STAGE = r"""
set -u
read -r _ready
root=$1
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || { echo "no private binfmt_misc (Linux < 6.7?)"; exit 90; }
printf '%s' "$2" > /proc/sys/fs/binfmt_misc/register || { echo "cannot register the aarch64 handler"; exit 91; }
mount --rbind /proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
# container=lxc: debootstrap then neither tests mknod (refused in a user namespace) nor makes
# device nodes (the first stage made them) but binds them.
chroot "$root" /usr/bin/env container=lxc /debootstrap/debootstrap --second-stage || { tail -n 30 "$root/debootstrap/debootstrap.log"; exit 92; }
chroot "$root" /usr/bin/passwd -d root
chroot "$root" /usr/bin/dpkg --print-architecture
chroot "$root" /usr/bin/python3 --version
"""


def _second_stage_on_host(root: pathlib.Path) -> tuple[bool, str]:
    """debootstrap --second-stage in `root` under qemu-aarch64-static (see HOST_SECOND_STAGE).
    (False, why) when this kernel cannot give the namespace its own binfmt_misc."""
    import subprocess
    vmlib.ensure_packages(["qemu-user-static"])
    # nice 10: scripts/test.sh runs this in the background of `swift test` and the oracle tests
    # (stage image), and the arm64 VM tests that need it come ~15 min later; at the tests' own
    # priority its qemu-user CPU (5.5 min before stop 47's cut lists, 3.2 min since) took an
    # equal share of the 2 CPUs from them. Only CPU work, no timing: the install guest before it
    # in that stage, whose timeouts would suffer, keeps its priority.
    proc = subprocess.Popen(["nice", "-n", "10", "unshare", "--user", "--mount", "--propagation", "private", "--fork", "sh", "-c",
                             HOST_SECOND_STAGE, "second-stage", str(root), BINFMT_AARCH64],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mine = os.readlink("/proc/self/ns/user")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until `unshare` has entered its new user namespace
        try:
            if os.readlink(f"/proc/{proc.pid}/ns/user") != mine:
                break
        except OSError:
            pass
        time.sleep(0.05)
    try:
        for f in ("uid_map", "gid_map"):
            pathlib.Path(f"/proc/{proc.pid}/{f}").write_text("0 0 65536\n")
    except OSError as e:
        proc.kill()
        proc.communicate()
        return False, f"cannot map the namespace's users: {e}"
    try:
        out, _ = proc.communicate("go\n", timeout=SECOND_STAGE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise VMUnavailable(f"debootstrap's second stage under qemu-aarch64-static did not finish within "
                            f"{SECOND_STAGE_TIMEOUT_S} s:\n{out[-3000:]}")
    if proc.returncode in (90, 91):
        return False, out.strip()
    if proc.returncode != 0 or "arm64" not in out or "Python 3" not in out:
        raise VMUnavailable(f"debootstrap's second stage under qemu-aarch64-static failed ({proc.returncode}):\n{out[-3000:]}")
    return True, out


def trim_package_lists(root: pathlib.Path) -> None:
    """The first stage's package lists cut down to the packages it downloaded
    (debootstrap/debpaths, ~150 of bookworm's 60,000 for arm64). debootstrap's second stage runs
    in the arm64 tree, so its own scans of the lists (pkgdetails, a perl script, for each
    pre-dependency it installs and for dpkg's `available`) run under qemu-user, and over the
    whole 49 MB list they were half of the stage. On the quiet machine the second stage took 332
    CPU-s (276 s) with the whole list and 180-192 CPU-s (155-167 s, two runs) with the cut one
    (stop 47); its four gaps between dpkg runs, 74-98 s each in stop 46's dpkg.log, are 4-5 s.
    Every package it installs is one the first stage downloaded, so the cut lists give it the
    same answers: dpkg's `available` and `status` came out byte for byte the same."""
    names = {line.split()[0] for line in (root / "debootstrap" / "debpaths").read_text().splitlines() if line.strip()}
    lists = sorted((root / "var" / "lib" / "apt" / "lists").glob("*_Packages"))
    if not names or not lists:
        raise VMUnavailable(f"debootstrap's first stage left no debpaths or no package lists in {root}")
    found: set[str] = set()
    for p in lists:
        kept = []
        for stanza in p.read_text().split("\n\n"):
            name = stanza.split("\n", 1)[0].removeprefix("Package: ").strip()
            if stanza.startswith("Package: ") and name in names:
                kept.append(stanza.strip("\n"))
                found.add(name)
        # Each stanza ends with a blank line, the last one too: pkgdetails writes a stanza out
        # when it reaches one.
        p.write_text("".join(stanza + "\n\n" for stanza in kept))
    if found != names:
        raise VMUnavailable(f"packages downloaded by debootstrap but not in its lists: {sorted(names - found)}")


@vmlib.serialised
def configured_rootfs() -> pathlib.Path | None:
    """The arm64 tree with debootstrap's second stage done on the host (read-only input), or
    None where the kernel cannot register a private binfmt_misc handler."""
    base = foreign_rootfs()
    root = base.with_name(base.name + "-configured")
    ready = root.with_name(root.name + ".ready")
    if ready.exists():
        return root
    if base.with_name(base.name + ".no-binfmt").exists():
        return None
    shutil.rmtree(root, ignore_errors=True)
    with vmlib.timed("debootstrap --second-stage for arm64 on the host (qemu-aarch64-static, private binfmt_misc)"):
        sh(["cp", "-a", str(base), str(root)], timeout=900)
        trim_package_lists(root)
        ok, why = _second_stage_on_host(root)
    if not ok:
        log(f"arm64 system: no private binfmt_misc here ({why}); the second stage runs in an arm64 guest instead")
        base.with_name(base.name + ".no-binfmt").write_text(why + "\n")
        shutil.rmtree(root, ignore_errors=True)
        return None
    # The downloaded packages go; image() drops apt's lists (system.drop_package_lists).
    for p in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        p.unlink()
    ready.write_text(why[-500:])
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
    """The configured arm64 system (debootstrap's second stage done on the host by
    configured_rootfs(), or else in an arm64 guest), with the test's guest files and the kernel's
    modules; cached by content. Never changed by a test (System
    boots it through a qcow2 overlay)."""
    if k.arch.name != "arm64":
        raise ValueError("arm64_system.image wants the arm64 kernel")
    base = configured_rootfs() or foreign_rootfs()
    # The system guest's modules (system.GUEST_MODULES); Debian's arm64 kernel lacks i2c-stub (the
    # battery's fuel gauge of test_vm_power.py): the same upstream file built out of tree instead.
    names = list(system.GUEST_MODULES)
    modules = list(modules)
    if "i2c_stub" in names and not vmlib.has_module(k, "i2c_stub"):
        names.remove("i2c_stub")
        modules.append(vmlib.i2c_stub_module(k))
    h = hashlib.sha256()
    for part in [base.name, k.version, system.SYSTEM_INIT, system.FSTAB, system.VM_TEST_UNIT, system.VM_HARDWARE_UNIT,
                 system.VM_HARDWARE, " ".join(system.MASKED_UNITS + MASKED_UNITS), " ".join(system.GUEST_MODULES),
                 SECOND_STAGE, "apt lists dropped"]:
        h.update(part.encode())
    h.update(vmlib.file_hash(*modules).encode())
    out = system.SYSTEM / f"arm64-system-{h.hexdigest()[:16]}.img"
    if out.exists():
        return out
    for old in system.SYSTEM.glob("arm64-system-*.img"):
        old.unlink()  # one at a time (2 GB sparse each)
    started = time.monotonic()
    with vmlib.timed("arm64 system image (copy, guest files, mkfs; the second stage in a guest if not done on the host)"), \
            tempfile.TemporaryDirectory(dir=system.SYSTEM) as tmp:
        root = pathlib.Path(tmp) / "root"
        sh(["cp", "-a", str(base), str(root)], timeout=600)
        if base.name.endswith("-configured"):
            system.drop_package_lists(root)
        else:
            trim_package_lists(root)  # the second stage in the guest reads them, then removes them
        system._write_guest_files(root)
        system_dir = root / "etc" / "systemd" / "system"
        for unit in MASKED_UNITS:
            p = system_dir / unit
            if p.is_symlink() or p.exists():
                p.unlink()
            p.symlink_to("/dev/null")
        system._copy_modules(k, names, modules, root)
        raw = pathlib.Path(tmp) / "root.img"
        sh(["mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", str(root), str(raw), f"{size_mb}M"], timeout=600)
        if base.name.endswith("-configured"):
            os.replace(raw, out)
            log(f"arm64 system image ready in {time.monotonic() - started:.0f} s")
            return out
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
