"""A booted Debian 12 with systemd in the VM, installed as a rider installs the board (issue 17).

Built on vmlib (the same Debian kernel, TCG, never KVM):

    from system import installed_image, System
    img = installed_image(k, bin_dir, [ssd1306_ko, gpio_sim_ko])   # cached under .build/vm/system
    vm = System(k, img, data_mb=64)                                 # copy-on-write overlays per run
    r = vm.run("systemctl is-active bikecomputer", timeout_s=120)

- `rootfs()`: `debootstrap --variant=minbase` of bookworm with systemd, udev, python3-venv,
  e2fsprogs, dmsetup, gpiod, i2c-tools, dosfstools, mtools, libjs-chart.js and
  systemd-timesyncd (what install.sh and the units need, since the guest has no network); built
  once from the mirror the system's apt sources name, cached by its package list.
- `bridge_wheels()`: the bridge's pinned wheels (board/bridge/requirements-board.txt) for the
  guest's Python, downloaded on the host with pip (the guest has no network).
- `installed_image()`: the root file system as an ext4 image with the kernel's modules (and the
  project's ssd1306-sim and gpio-sim), the rider's files in /root (the binaries, board/, docs/,
  the wheels), booted once to run `board/install.sh` there as docs/board.md says; cached by the
  content of all of that. The Swift runtime libraries the debug binaries link are put at the
  toolchain's path (a rider's release binary has them inside: --static-swift-stdlib).
- `System`: boots the installed image through a qcow2 overlay (the image is never changed), the
  data partition on its own virtio disk (/dev/vdb, ext4, mounted at /var/lib/bikecomputer like
  a Pi's SD card partition), extra disks for dm-log-writes; the test script runs from the unit
  vm-test.service once the system is up, with /out shared with the host; `kill_when` lets the
  host pull the plug (SIGKILL to QEMU) when the guest asks for it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import vmlib
from vmlib import CACHE, REPO, VMUnavailable, log, sh

SYSTEM = CACHE / "system"
SUITE = "bookworm"
ROOTFS_PACKAGES = ["systemd", "systemd-sysv", "udev", "kmod", "iproute2", "procps", "python3", "python3-venv",
                   "e2fsprogs", "dmsetup", "gpiod", "libgpiod2", "i2c-tools", "libi2c0", "dosfstools", "mtools",
                   "libjs-chart.js", "systemd-timesyncd", "libusb-1.0-0"]
# What the guest's kernel must load: disks and file systems, the test share, the device-mapper
# targets of the storage tests, the simulated hardware's buses.
GUEST_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4", "9pnet_virtio", "9p", "dm_mod", "dm_log_writes",
                 "dm_flakey", "dm_delay", "i2c_dev", "configfs",
                 # The USB drive (test_vm_hardening.py): the gadget on dummy_hcd's UDC, read back
                 # through the same dummy_hcd's host side as a computer would.
                 "dummy_hcd", "libcomposite", "usb_f_mass_storage", "usb_storage", "sd_mod",
                 "i2c_stub"]  # the battery's fuel gauge (test_vm_power.py)
BOOT_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"]
# Units a test boot does not need (they cost seconds under TCG, and a getty on ttyS0 hangs up
# the console the test's log is read from).
MASKED_UNITS = ["getty@tty1.service", "serial-getty@ttyS0.service", "console-getty.service", "apt-daily.timer",
                "apt-daily-upgrade.timer", "dpkg-db-backup.timer", "e2scrub_all.timer", "fstrim.timer",
                "systemd-tmpfiles-clean.timer", "e2scrub_reap.service", "systemd-update-utmp.service",
                "systemd-update-utmp-runlevel.service", "modprobe@drm.service", "sys-kernel-tracing.mount",
                "dev-mqueue.mount", "sys-fs-fuse-connections.mount",
                # systemd-analyze blame in a test boot: 2-8 s each of a 2-vCPU TCG guest's time
                # for nothing the tests use (gettys on tty2-6, EFI pstore, loop, huge pages).
                "getty-static.service", "modprobe@efi_pstore.service", "modprobe@loop.service",
                "dev-hugepages.mount"]
GUEST_PYTHON = "3.11"  # bookworm's python3


@vmlib.serialised
def rootfs() -> pathlib.Path:
    """The debootstrapped tree (read-only input: images are made from copies)."""
    vmlib.ensure_packages(["debootstrap", "qemu-utils", "e2fsprogs", "debian-archive-keyring"])
    key = hashlib.sha256(" ".join([SUITE, *ROOTFS_PACKAGES]).encode()).hexdigest()[:12]
    root = SYSTEM / f"rootfs-{key}"
    if (SYSTEM / f"rootfs-{key}.ready").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    mirror, _ = vmlib.system_mirrors()
    started = time.monotonic()
    with vmlib.timed(f"debootstrap --variant=minbase {SUITE} ({len(ROOTFS_PACKAGES)} packages) from {mirror}"):
        sh(["debootstrap", "--variant=minbase", f"--include={','.join(ROOTFS_PACKAGES)}", SUITE, str(root), mirror],
           timeout=1800)
    # The downloaded packages go; the images made from this tree drop apt's lists
    # (drop_package_lists).
    shutil.rmtree(root / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (root / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (SYSTEM / f"rootfs-{key}.ready").write_text(f"{time.monotonic() - started:.0f} s\n")
    return root


@vmlib.serialised
def bridge_wheels() -> pathlib.Path:
    """The bridge's runtime requirements as wheels for the guest's Python (pinned, no sdists)."""
    req = REPO / "board" / "bridge" / "requirements-board.txt"
    out = SYSTEM / f"wheels-{vmlib.file_hash(req, extra=GUEST_PYTHON)}"
    if (out / "ready").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    pip = REPO / ".venv" / "bin" / "pip"
    cmd = [str(pip)] if pip.exists() else ["python3", "-m", "pip"]
    with vmlib.timed(f"pip download the bridge's wheels for Python {GUEST_PYTHON}"):
        sh([*cmd, "download", "-q", "--only-binary", ":all:", "--python-version", GUEST_PYTHON, "--implementation", "cp",
            "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
            "--no-deps", "-d", str(out), "-r", str(req)], timeout=900)
    (out / "ready").write_text("")
    return out


def runtime_libraries(binaries: list[pathlib.Path]) -> list[pathlib.Path]:
    """The shared libraries the binaries load from outside the system's library directories
    (the Swift toolchain's runtime of a debug build)."""
    libs: set[pathlib.Path] = set()
    for b in binaries:
        out = sh(["ldd", str(b)]).stdout
        for line in out.splitlines():
            if "=>" not in line:
                continue
            path = line.split("=>")[1].split("(")[0].strip()
            if path and not path.startswith(("/lib/", "/usr/lib/", "/lib64/")):
                libs.add(pathlib.Path(path))
    return sorted(libs)


SYSTEM_INIT = r"""#!/bin/busybox sh
# Initramfs of the system VM (Tests/vm/system.py): load the disk and ext4 modules, mount
# /dev/vda and hand over to systemd.
/bin/busybox mkdir -p /proc /sys /dev /newroot /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do [ -n "$m" ] && modprobe $m; done < /etc/vm/modules
n=0
while [ ! -b /dev/vda ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
mount -o rw /dev/vda /newroot || { echo "vm: cannot mount /dev/vda"; poweroff -f; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
"""


@vmlib.serialised(per_arch=True)
def system_initramfs(k: vmlib.Kernel) -> pathlib.Path:
    key = hashlib.sha256("\n".join([SYSTEM_INIT, k.version, *BOOT_MODULES]).encode()).hexdigest()[:16]
    out = SYSTEM / k.version / f"initramfs-{key}.cpio.gz"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = pathlib.Path(tmp)
        (root / "bin").mkdir()
        shutil.copy(vmlib.busybox_binary(k.arch), root / "bin" / "busybox")
        (root / "init").write_text(SYSTEM_INIT)
        (root / "init").chmod(0o755)
        (root / "etc" / "vm").mkdir(parents=True)
        (root / "etc" / "vm" / "modules").write_text("\n".join(BOOT_MODULES) + "\n")
        _copy_modules(k, BOOT_MODULES, [], root)
        sh(f"cd '{root}' && find . | cpio -o -H newc --quiet | gzip -1 > '{out}.tmp'")
        os.replace(f"{out}.tmp", out)
    return out


def _copy_modules(k: vmlib.Kernel, names: list[str], extra: list[pathlib.Path], root: pathlib.Path) -> None:
    mdir = root / "lib" / "modules" / k.version
    for rel in vmlib.module_closure(k, names, None):
        (mdir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(k.modules / rel, mdir / rel)
    for e in extra:
        (mdir / "extra").mkdir(parents=True, exist_ok=True)
        shutil.copy(e, mdir / "extra" / e.name)
    for f in ["modules.builtin", "modules.builtin.modinfo", "modules.order"]:
        if (k.modules / f).exists():
            shutil.copy(k.modules / f, mdir / f)
    sh(["depmod", "-b", str(root), k.version])


# The test's own units in the image (not the project's: those come from install.sh).
VM_TEST_UNIT = """[Unit]
Description=VM test script (/out/cmd.sh from the host)
After=multi-user.target
[Service]
Type=simple
ExecStartPre=/bin/sh -c 'modprobe 9pnet_virtio; modprobe 9p; mkdir -p /out; mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout /out'
ExecStart=/bin/sh -c 'echo "vm-test: running /out/cmd.sh"; cat /proc/uptime > /out/uptime-start; sh /out/cmd.sh > /out/stdout 2> /out/stderr; echo $? > /out/status; cat /proc/uptime > /out/uptime-end; echo "vm-test: exit $(cat /out/status)"; sync; if [ -e /out/clean-poweroff ]; then systemctl poweroff; else systemctl poweroff -ff; fi'
StandardOutput=journal+console
StandardError=journal+console
[Install]
WantedBy=multi-user.target
"""

# The simulated wiring: the SSD1306 on its own I2C adapter, the buttons on a gpio-sim chip
# (gpiochip0, lines 17/27/22 and the buzzer 18 as on a Pi's header), before the app starts.
VM_HARDWARE_UNIT = """[Unit]
Description=VM stand-ins for the board's wiring (ssd1306-sim, gpio-sim)
DefaultDependencies=no
After=systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount
Before=bikecomputer.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vm-hardware
[Install]
WantedBy=multi-user.target
"""

VM_HARDWARE = r"""#!/bin/sh
# Loads the display and GPIO stand-ins and makes the gpio-sim chip (Tests/vm/system.py).
set -u
sysw() { printf '%s' "$2" > "$1"; }
modprobe ssd1306-sim
modprobe gpio-sim-oot
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
G=/sys/kernel/config/gpio-sim/pi
if [ ! -d $G ]; then
    mkdir $G $G/bank0
    sysw $G/bank0/num_lines 32
    sysw $G/live 1
fi
mkdir -p /run/vm-hardware
echo "/dev/$(cat $G/bank0/chip_name)" > /run/vm-hardware/chip
echo "/sys/devices/platform/$(cat $G/dev_name)/$(cat $G/bank0/chip_name)" > /run/vm-hardware/sim
cat /sys/kernel/debug/ssd1306-sim/adapter > /run/vm-hardware/i2c-bus
"""


def _write_guest_files(root: pathlib.Path) -> None:
    (root / "etc" / "hostname").write_text("bike\n")
    (root / "etc" / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 bike\n")
    (root / "etc" / "fstab").write_text(FSTAB)
    sh(["chroot", str(root), "passwd", "-d", "root"], check=False)
    system_dir = root / "etc" / "systemd" / "system"
    (system_dir / "vm-test.service").write_text(VM_TEST_UNIT)
    (system_dir / "vm-hardware.service").write_text(VM_HARDWARE_UNIT)
    wants = system_dir / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit in ["vm-test.service", "vm-hardware.service"]:
        link = wants / unit
        if not link.is_symlink():
            link.symlink_to(f"/etc/systemd/system/{unit}")
    for unit in MASKED_UNITS:
        p = system_dir / unit
        if p.is_symlink() or p.exists():
            p.unlink()
        p.symlink_to("/dev/null")
    sbin = root / "usr" / "local" / "sbin"
    sbin.mkdir(parents=True, exist_ok=True)
    (sbin / "vm-hardware").write_text(VM_HARDWARE)
    (sbin / "vm-hardware").chmod(0o755)
    # A Pi's boot partition holds config.txt; install.sh --boot-config appends to it.
    (root / "boot" / "firmware").mkdir(parents=True, exist_ok=True)
    (root / "boot" / "firmware" / "config.txt").write_text("# Raspberry Pi config.txt (VM stand-in)\n")
    # The journal stays in memory (a Pi's default is persistent; it does not matter here).
    (root / "etc" / "systemd" / "journald.conf.d").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "systemd" / "journald.conf.d" / "vm.conf").write_text("[Journal]\nStorage=volatile\n")


# The data partition on its own disk, as docs/board.md recommends for a card: mounted before the
# app starts, and a card whose partition does not mount does not stop the boot (nofail).
FSTAB = ("/dev/vda / ext4 defaults 0 1\n"
         "/dev/vdb /var/lib/bikecomputer ext4 defaults,nofail,x-systemd.device-timeout=60s,"
         "x-systemd.before=bikecomputer.service 0 2\n")

RIDER_DOCS = ["board.md", "config.md", "companion.md", "power.md"]  # what install.sh copies to the board
RIDER_DIR = "/root"  # where the rider copied the binaries and board/ (docs/board.md §3-4)


def install_command() -> str:
    """What the rider types (docs/board.md §4), with the wheels for a board without network."""
    return (f"cd {RIDER_DIR} && board/install.sh --binary ./bikecomputer --companion ./bikecompanion "
            f"--bridge-wheels ./wheels --boot-config")


def drop_package_lists(root: pathlib.Path) -> None:
    """An image's copy of the tree (amd64's installed system, arm64's system) without apt's
    package lists (debootstrap leaves bookworm's, 50 MB) and caches: the guest has no network, so
    they could only offer downloads it cannot make. apt in the guest (`apt install ./x.deb`,
    install.sh's `apt-get install`) then resolves against the installed packages alone, as on a
    rider's board whose dependencies are installed, and a missing one fails at once instead of
    being looked for on a mirror. Each apt run under TCG reads a cache of the installed packages
    instead of bookworm's 60,000: on arm64 `apt-get -s install ./x.deb` took 2.0 s against 7.8 s
    (16 s for the first, which made the cache), and the package test's install, upgrade and purge
    104 s against 131 s (stop 47, docs/testing.md)."""
    for d in ("var/lib/apt/lists", "var/cache/apt"):
        for p in (root / d).iterdir() if (root / d).is_dir() else ():
            if p.is_file() and p.name != "lock":
                p.unlink()
    left = [p.name for p in (root / "var/lib/apt/lists").glob("*") if p.is_file() and p.name != "lock"]
    assert not left, f"package lists left in {root}: {left}"


@vmlib.serialised(per_arch=True)
def installed_image(k: vmlib.Kernel, bin_dir: pathlib.Path, modules: list[pathlib.Path],
                    size_mb: int = 2048) -> pathlib.Path:
    """The root file system image with the project installed by board/install.sh, cached by the
    content of the rootfs key, the binaries, board/, the docs it copies, the wheels and modules."""
    base = rootfs()
    wheels = bridge_wheels()
    binaries = [bin_dir / "bikecomputer", bin_dir / "bikecompanion"]
    for b in binaries:
        if not b.exists():
            raise VMUnavailable(f"{b} is missing: swift build --product {b.name}")
    libs = runtime_libraries(binaries)
    h = hashlib.sha256()
    for part in [base.name, k.version, SYSTEM_INIT, FSTAB, VM_TEST_UNIT, VM_HARDWARE_UNIT, VM_HARDWARE, install_command(),
                 " ".join(MASKED_UNITS), " ".join(GUEST_MODULES), "apt lists dropped"]:
        h.update(part.encode())
    h.update(vmlib.file_hash(REPO / "board", *[REPO / "docs" / d for d in RIDER_DOCS], wheels, *binaries, *modules,
                             *libs).encode())
    image = SYSTEM / f"installed-{h.hexdigest()[:16]}.img"
    if image.exists():
        return image
    for old in SYSTEM.glob("installed-*.img"):
        old.unlink()  # one installed image at a time (2 GB sparse each)
    log("making the installed system image")
    started = time.monotonic()
    with vmlib.timed("installed system image (all)"), tempfile.TemporaryDirectory(dir=SYSTEM) as tmp:
        root = pathlib.Path(tmp) / "root"
        sh(["cp", "-a", str(base), str(root)], timeout=600)
        drop_package_lists(root)
        _write_guest_files(root)
        _copy_modules(k, GUEST_MODULES, modules, root)
        for lib in libs:
            dest = root / str(lib).lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(lib, dest)
        rider = root / RIDER_DIR.lstrip("/")
        for b in binaries:
            shutil.copy(b, rider / b.name)
        shutil.copytree(REPO / "board", rider / "board", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (rider / "docs").mkdir()
        for d in RIDER_DOCS:
            if (REPO / "docs" / d).exists():
                shutil.copy(REPO / "docs" / d, rider / "docs" / d)
        shutil.copytree(wheels, rider / "wheels", ignore=shutil.ignore_patterns("ready"))
        raw = pathlib.Path(tmp) / "root.img"
        sh(["mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", str(root), str(raw), f"{size_mb}M"], timeout=600)
        data = pathlib.Path(tmp) / "data.img"
        make_data_disk(data, 64)
        # First boot: the rider's install, then a clean power-off.
        vm = System(k, raw, overlay=False)
        r = vm.run(f"set -e\n{install_command()}\ntouch /out/clean-poweroff\n", timeout_s=600, data_image=data,
                   name="install")
        (SYSTEM / "install.log").write_text(r.describe())
        if not r.ok:
            raise VMUnavailable(f"board/install.sh failed in the VM:\n{r.describe()}")
        os.replace(raw, image)
    log(f"installed image ready in {time.monotonic() - started:.0f} s")
    return image


def make_data_disk(path: pathlib.Path, size_mb: int, fs: bool = True) -> pathlib.Path:
    """A sparse disk image; with `fs` an ext4 file system (the data partition)."""
    path.unlink(missing_ok=True)
    with open(path, "wb") as f:
        f.truncate(size_mb * 1024 * 1024)
    if fs:
        sh(["mkfs.ext4", "-q", "-F", "-L", "bikedata", str(path)])
    return path


# The 2-core machine runs every VM test's guests side by side (conftest.launcher). The
# system guests are the heavy ones: at most this many boot at once, and they wait for the
# lighter guests that share the host root (test_vm_hardware, test_vm_run, ...) to finish, so
# those keep their short timeouts.
SYSTEM_GUESTS_MAX = 3
# Which waiting guest gets a free slot: the longest first, so the others finish in its shadow
# (script seconds at load ~17, docs/testing.md "Timings": the storage faults ~330 s; the
# dm-log-writes ride ~80 s, then the host's sweep of its log ~100 s, so early; the power cut's
# two boots, whose second boot comes back for a slot at once; the system ride and the latency
# ~120 s; the clock ~60 s). The power-cut loops boot again and again (the package's on arm64:
# 60-172 s a cut). The hardening checks (87-127 s) came last while unnamed here and were the
# stage's tail (stop 44's CI: from 548 s to 636 s); replaying that CI's guest times through this
# scheduler, ranking them anywhere before the latency guest ends the system guests 24 s sooner.
# Unknown names come last, in arrival order.
SLOT_PRIORITY = ["powercut-loop", "package-powercut-loop", "faults", "logwrites", "hardening", "power-cut", "system-ride",
                 "latency", "clock", "power-off", "boot-timing"]
SLOT_GATHER_S = 1.0
# The guests that measure how quickly the unit answers (button to page, boot to ride) run at the
# host's own priority; every other system guest's QEMU runs this much nicer, so that a guest
# sharing the 2 cores with a measuring one takes its CPU only when the measuring one leaves it
# idle. Stop 37's CI failed on the latency guest's presses: 1.2 s for a page on the stalling card
# while the plain card's slowest had been 0.17-0.58 s, both in TCG guests sharing the cores with
# the storage-fault and power-cut guests at equal priority (their handlers that never touch the
# card took 0.8 s turns). Niceness only orders the guests; none waits for another.
MEASURING_GUESTS = {"latency", "boot-timing"}
OTHER_GUESTS_NICE = 5
# A measuring guest also takes this many of the SYSTEM_GUESTS_MAX slots, so at most one other
# system guest runs beside it. Stop 38's CI failed on the latency guest's dating: 5 of 113 presses
# unanswered within 3 s, in loop turns of up to 3.2 s while two other system guests (4 vCPUs at
# nice 5) shared the 2 cores with its 2; a 2-vCPU TCG guest whose vCPU waits for a descheduled
# sibling stalls as a whole. Re-run here, the app's thread waited in the kernel in 0-5 of
# 2,268-3,781 samples of the dating (runnable 83 % of the time: the debug build's CPU, most of it
# the test's own load), so the stalls were the host's, not the card's (docs/performance.md).
MEASURING_GUEST_SLOTS = 2


# A guest waits at most this long for a slot (the longest guest, the storage faults, took 378 s
# at load 24; three of them before it would be ~20 min): then it fails, naming the holders.
SLOT_WAIT_S = 2400


class _Slots:
    """A counting semaphore that hands a free slot to the waiting guest of highest priority."""

    def __init__(self, n: int) -> None:
        self.size = n
        self.free = n
        self.cond = threading.Condition()
        self.waiting: list[tuple[int, int]] = []  # (rank, arrival)
        self.holders: list[str] = []
        self.arrivals = 0

    def weight(self, name: str) -> int:
        """The slots `name` takes: a measuring guest's MEASURING_GUEST_SLOTS (never more than there are)."""
        return min(self.size, MEASURING_GUEST_SLOTS) if name in MEASURING_GUESTS else 1

    def acquire(self, name: str, wait_s: float | None = None) -> None:
        """Takes a slot (a measuring guest: MEASURING_GUEST_SLOTS); raises VMUnavailable (naming
        the guests that hold the slots) when none came free within `wait_s` (SLOT_WAIT_S)."""
        wait_s = SLOT_WAIT_S if wait_s is None else wait_s
        need = self.weight(name)
        rank = SLOT_PRIORITY.index(name) if name in SLOT_PRIORITY else len(SLOT_PRIORITY)
        deadline = time.monotonic() + wait_s
        with self.cond:
            me = (rank, self.arrivals)
            self.arrivals += 1
            self.waiting.append(me)
            # The guests come for slots together (once the image is ready, or the host-root
            # guests have finished: polled every 0.5 s): let them all arrive before ranking.
            self.cond.wait(min(SLOT_GATHER_S, wait_s))
            while not (self.free >= need and min(self.waiting) == me):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.waiting.remove(me)
                    self.cond.notify_all()
                    raise VMUnavailable(f"{name}: no system guest slot came free within {wait_s:.0f} s "
                                        f"(held by {', '.join(self.holders) or 'nobody'}; {len(self.waiting)} other guests waiting)")
                self.cond.wait(min(left, 60))
            self.waiting.remove(me)
            self.free -= need
            self.holders.append(name)
            self.cond.notify_all()

    def release(self, name: str = "") -> None:
        with self.cond:
            self.free += self.weight(name)
            if name in self.holders:
                self.holders.remove(name)
            self.cond.notify_all()


_slots = _Slots(SYSTEM_GUESTS_MAX)
OTHER_GUESTS_WAIT_S = 900


def other_guests_running() -> bool:
    """Whether a guest of the host-root harness (vmlib.Machine) that this test run started is
    still running (only this process's: another user's QEMU on a shared machine is not waited for)."""
    return vmlib.host_root_guests_running() > 0


# conftest's `guests` fixture clears this while it launches every selected test module's guests,
# so that no system guest boots before the host-root guests it must wait for have started. Every
# host-root guest (the BLE ride's too) is started by a launcher there, so what a system guest
# waits for never depends on which test file pytest runs first: the BLE guest used to start from
# its module's own fixture, and the system guests waited for that fixture; with the test files
# named in an order that put test_vm_system.py first (pytest Tests/vm/test_vm_system.py ...
# test_vm_ble.py), the main thread waited for the system guests, which waited for a fixture only
# the main thread could run: 900 s per system boot, one after another, all threads asleep
# (Tests/vm/test_harness_order.py runs that order).
launching_done = threading.Event()
launching_done.set()


def wait_for_other_guests() -> None:
    """Until this run's host-root guests have finished: at most OTHER_GUESTS_WAIT_S in all, then
    the system guest boots anyway (and says so)."""
    deadline = time.monotonic() + OTHER_GUESTS_WAIT_S
    if not launching_done.wait(OTHER_GUESTS_WAIT_S):
        log(f"system guest: the other guests' launch did not finish within {OTHER_GUESTS_WAIT_S} s; booting anyway")
    while other_guests_running() and time.monotonic() < deadline:
        time.sleep(0.5)
    if other_guests_running():
        log(f"system guest: {vmlib.host_root_guests_running()} host-root guests still run after {OTHER_GUESTS_WAIT_S} s; booting anyway")


@dataclasses.dataclass
class Disk:
    path: pathlib.Path
    fmt: str = "raw"


class System:
    """Boots the installed image (through a qcow2 overlay unless overlay=False) with systemd."""

    def __init__(self, k: vmlib.Kernel, image: pathlib.Path, overlay: bool = True, memory_mb: int = 768,
                 smp: int = 2) -> None:
        self.kernel = k
        self.image = image
        self.overlay = overlay
        self.memory_mb = memory_mb
        self.smp = smp
        self.initrd = system_initramfs(k)

    def new_root(self, outdir: pathlib.Path) -> Disk:
        if not self.overlay:
            return Disk(self.image)
        disk = outdir / "root.qcow2"
        if not disk.exists():
            sh(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(self.image), "-F", "raw", str(disk)])
        return Disk(disk, "qcow2")

    def command(self, outdir: pathlib.Path, root: Disk, disks: list[Disk], append: str, rtc: str | None = None) -> list[str]:
        a = self.kernel.arch
        cmd = [a.qemu, *a.machine, "-m", str(self.memory_mb), "-smp", str(self.smp), "-nodefaults", "-no-user-config",
               "-display", "none", "-no-reboot", "-kernel", str(self.kernel.boot_image), "-initrd", str(self.initrd),
               "-append", f"{a.boot_args} panic=-1 quiet loglevel=4 systemd.show_status=error {append}".strip(),
               "-serial", f"file:{outdir / 'console.log'}",
               "-virtfs", f"local,path={outdir},mount_tag=vmout,security_model=none,multidevs=remap"]
        for d in [root, *disks]:
            cmd += ["-drive", f"file={d.path},format={d.fmt},if=virtio,cache=writeback"]
        if rtc:
            cmd += ["-rtc", f"base={rtc}"]  # the time the board's clock starts at (no RTC of its own)
        return cmd

    def run(self, script: str, timeout_s: float = 180, data_image: pathlib.Path | None = None,
            disks: list[Disk] = (), name: str = "system", outdir: pathlib.Path | None = None,
            kill_when: str | None = None, append: str = "", env: dict[str, str] | None = None,
            rtc: str | None = None, kill_after_s: float | None = None) -> vmlib.Result:
        """Boots, runs `script` (sh, as root, from vm-test.service once multi-user is reached),
        powers off. `data_image` is /dev/vdb (the data partition), `disks` follow as vdc, vdd...
        With `kill_when` (a file name in /out), QEMU is killed (SIGKILL: a power cut) as soon as
        the guest creates that file; the result's `status` is then None. `kill_after_s` pulls the
        plug that long after QEMU started (a cut during the boot). Pass the same `outdir`
        again to boot the same root overlay a second time (after a power cut)."""
        if not shutil.which(self.kernel.arch.qemu):
            raise VMUnavailable(f"{self.kernel.arch.qemu} is not installed")
        with vmlib.waited(f"{name}: for the host-root guests to finish"):
            wait_for_other_guests()
        with vmlib.waited(f"{name}: for a system guest slot"):
            _slots.acquire(name)
        try:
            return self._run(script, timeout_s, data_image, disks, name, outdir, kill_when, append, env, rtc, kill_after_s)
        finally:
            _slots.release(name)

    def _run(self, script, timeout_s, data_image, disks, name, outdir, kill_when, append, env, rtc, kill_after_s=None) -> vmlib.Result:
        if outdir is None:
            runs = CACHE / "runs"
            runs.mkdir(parents=True, exist_ok=True)
            outdir = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=runs))
            outdir.chmod(0o777)
        for f in ["status", "stdout", "stderr", "console.log", kill_when or "-"]:
            (outdir / f).unlink(missing_ok=True)
        exports = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in (env or {}).items())
        (outdir / "cmd.sh").write_text(f"{exports}{script}\n")
        root = self.new_root(outdir)
        all_disks = ([Disk(data_image)] if data_image else []) + list(disks)
        cmd = self.command(outdir, root, all_disks, append, rtc)
        if name not in MEASURING_GUESTS:
            cmd = ["nice", "-n", str(OTHER_GUESTS_NICE), *cmd]
        started = time.monotonic()
        timed_out = False
        killed = False
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        deadline = started + timeout_s
        while proc.poll() is None:
            if time.monotonic() > deadline:
                timed_out = True
                break
            if kill_when and (outdir / kill_when).exists():
                killed = True
                break
            if kill_after_s is not None and time.monotonic() - started >= kill_after_s:
                killed = True
                break
            time.sleep(0.02)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        _, qemu_err = proc.communicate()
        seconds = time.monotonic() - started
        read = lambda n: (outdir / n).read_text(errors="replace") if (outdir / n).exists() else ""
        status_text = read("status").strip()
        status = int(status_text) if status_text and not killed else None
        console_text = read("console.log")
        if qemu_err:
            console_text += "\n--- qemu stderr\n" + qemu_err.decode(errors="replace")
        boot, script_s = vmlib.guest_uptimes(outdir)
        vmlib.record_timing("guest", f"{outdir.name}{' (2nd boot)' if self.overlay and (outdir / 'booted-once').exists() else ''}",
                            started, seconds, boot_s=boot, script_s=script_s,
                            note="timed out" if timed_out else "power cut" if killed else "")
        (outdir / "booted-once").write_text("")
        r = vmlib.Result(status, read("stdout"), read("stderr"), console_text, seconds, timed_out, outdir, cmd)
        r.killed = killed  # type: ignore[attr-defined]
        return r
