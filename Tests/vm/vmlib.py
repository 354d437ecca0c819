"""Boot Debian's own kernel in QEMU (TCG, never KVM) and run commands in it: the VM test harness.

A small library (docs/testing.md has its API and how to use it by hand):

    from vmlib import Machine, kernel, build_module, gpio_sim_module
    k = kernel("amd64")                                  # Debian's kernel of linux-image-amd64's ABI
    vm = Machine(k, modules=["i2c-dev", "i2c-stub"], extra=[build_module(k, "Tests/vm/kmod/ssd1306-sim")])
    r = vm.run("modprobe ssd1306-sim && inhost /work/repo/.build/debug/board-vm-checks i2c ...", timeout_s=60)
    assert r.ok, r.describe()

What it does:
- installs what it needs with apt (qemu-system-x86/arm, busybox-static, the kernel headers of
  the ABI, gcc-aarch64-linux-gnu) when it runs as root, else names the missing packages;
- downloads the kernel image (and linux-source, arm64 packages, libgpiod 2 from
  bookworm-backports) with `apt-get download`, arm64 and backports through a private apt
  configuration under .build/vm/apt (the system's sources are not changed);
- caches everything under .build/vm/ (kernel, modules tree, built modules, initramfs images),
  keyed by the kernel's ABI and the sources' hashes: a warm run downloads and builds nothing;
- boots `qemu-system-x86_64 -accel tcg` (or qemu-system-aarch64 -M virt -cpu cortex-a53) with
  a busybox initramfs; the host root is shared read-only over virtio-9p at /host (host-built
  binaries run unchanged with `inhost CMD`), and a per-run directory read-write at /out
  (= /run/vm inside `inhost`), where the script's stdout, stderr and exit status land;
- kills a guest that does not finish within its timeout and reports it as a failure.

Any failure to prepare (no qemu package, no network, a download that is gone) raises
VMUnavailable with the reason: the tests then FAIL with it, they are never skipped.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = REPO / ".build" / "vm"
LOCK_TIMEOUT = ["-o", "DPkg::Lock::Timeout=900"]


class VMUnavailable(Exception):
    """The VM cannot be prepared or started here; the message says why and what to do."""


_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"vm: [{time.monotonic() - _T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- timings
# Where a VM test run's time goes: preparation steps (downloads, builds, images), guests (host
# seconds from QEMU's start to its exit, the guest's own uptime when the test script started =
# its boot), and waits (a lock, a semaphore, a guest that must finish first). Tests/vm/run prints
# the summary at the end (conftest.pytest_terminal_summary) and writes .build/vm/timings.json.

@dataclasses.dataclass
class TimingEntry:
    kind: str  # "step", "guest" or "wait"
    name: str
    start_s: float  # since the session started (vmlib's import)
    seconds: float
    boot_s: float | None = None  # guests: the guest's uptime when its script started
    script_s: float | None = None  # guests: the script's own time (guest uptime at its end - at its start)
    note: str = ""


TIMINGS: list[TimingEntry] = []
_timings_lock = __import__("threading").Lock()


def record_timing(kind: str, name: str, started: float, seconds: float | None = None, **fields) -> TimingEntry:
    """Adds one entry (`started` is a time.monotonic() value)."""
    e = TimingEntry(kind, name, started - _T0, (time.monotonic() - started) if seconds is None else seconds, **fields)
    with _timings_lock:
        TIMINGS.append(e)
    return e


class timed:
    """`with timed("building X"):` records a preparation step (and logs its start). As a
    decorator factory too: `@timed("step")`."""

    def __init__(self, name: str, kind: str = "step", quiet: bool = False) -> None:
        self.name, self.kind, self.quiet = name, kind, quiet

    def __enter__(self):
        self.started = time.monotonic()
        if not self.quiet:
            log(f"{self.name} ...")
        return self

    def __exit__(self, *exc) -> None:
        e = record_timing(self.kind, self.name, self.started, note="failed" if exc[0] else "")
        if not self.quiet:
            log(f"{self.name}: {e.seconds:.1f} s{' (failed)' if exc[0] else ''}")


class waited:
    """`with waited("slot for a system guest"):` records the time spent waiting (only when it
    was more than `min_s`)."""

    def __init__(self, name: str, min_s: float = 0.5) -> None:
        self.name, self.min_s = name, min_s

    def __enter__(self):
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if time.monotonic() - self.started >= self.min_s:
            record_timing("wait", self.name, self.started)


def guest_uptimes(outdir: pathlib.Path) -> tuple[float | None, float | None]:
    """(boot_s, script_s) from the uptime files the guest's init writes around the script."""
    def read(n: str) -> float | None:
        try:
            return float((outdir / n).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    start, end = read("uptime-start"), read("uptime-end")
    return start, (end - start) if start is not None and end is not None else None


def timing_summary(wall_s: float | None = None, json_name: str = "timings.json") -> str:
    """The table Tests/vm/run prints last; also written to .build/vm/timings.json (json_name)."""
    import json
    with _timings_lock:
        entries = sorted(TIMINGS, key=lambda e: e.start_s)
    wall_s = time.monotonic() - _T0 if wall_s is None else wall_s
    lines = [f"VM timings (wall {wall_s:.0f} s since the harness loaded; load average now "
             f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs)"]
    for kind, title in [("step", "preparation (host)"), ("guest", "guests (QEMU start to exit; boot = guest uptime when its script started)"),
                        ("wait", "waits")]:
        group = [e for e in entries if e.kind == kind]
        if not group:
            continue
        lines.append(f"  {title}: {len(group)}, {sum(e.seconds for e in group):.0f} s in all")
        for e in group:
            extra = ""
            if kind == "guest":
                extra = (f"  boot {e.boot_s:5.1f} s" if e.boot_s is not None else "  boot     ? ") + \
                        (f"  script {e.script_s:6.1f} s" if e.script_s is not None else "")
            lines.append(f"    {e.start_s:6.1f} +{e.seconds:6.1f} s  {e.name}{extra}{('  ' + e.note) if e.note else ''}")
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / json_name).write_text(json.dumps({"wall_s": round(wall_s, 1), "loadavg": os.getloadavg(),
                                                        "entries": [dataclasses.asdict(e) for e in entries]}, indent=1))
    except OSError:
        pass
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the cache
# The VM tests prepare and boot guests on several threads (conftest.launcher,
# system_fixtures.Background), so two threads may ask for the same module, image or initramfs at
# once. Every function that fills .build/vm/ runs under a lock of its own (`@serialised`):
# re-entrant within the process (builders call builders) and an flock on .build/vm/.lock-KEY
# across processes. Without it two `make M=...` runs shared one build directory and both failed
# ("fixdep: error opening file ... .o.d"). The locks are per function (and per architecture where
# the function's output is: `per_arch=True`), not one for the whole cache: with one lock the
# installed image's install boot (minutes under TCG) held up every other preparation, and the
# host-root guests could not even build their initramfs while debootstrap ran. Host apt
# (install, update, download) has its own lock, "apt". The locks nest only along the call graph
# (a builder takes the locks of what it calls), and "apt" is a leaf, so they cannot deadlock.


class _KeyLock:
    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0  # only changed by the thread that holds rlock
        self.fd = -1


_key_locks: dict[str, _KeyLock] = {}
_key_locks_guard = threading.Lock()


# The longest a thread waits for a cache lock (the install boot holds its image's lock for
# minutes: 404 s at load ~20): then it fails, naming the holder, instead of hanging.
LOCK_WAIT_S = 3600


def _lock_holder(path: pathlib.Path) -> str:
    try:
        return path.read_text().strip() or "an unknown process"
    except OSError:
        return "an unknown process"


@contextlib.contextmanager
def cache_lock(key: str = "cache", wait_s: float | None = None):
    """Holds the lock `key` (in this process and, through an flock, across processes). Waits at
    most `wait_s` (LOCK_WAIT_S), logging every minute who holds it; then raises VMUnavailable
    naming the holder (the lock file says which process took it, and since when)."""
    wait_s = LOCK_WAIT_S if wait_s is None else wait_s
    with _key_locks_guard:
        kl = _key_locks.setdefault(key, _KeyLock())
    started = time.monotonic()
    if not kl.rlock.acquire(timeout=wait_s):
        raise VMUnavailable(f"the .build/vm lock {key}: held by another thread of this process; waited for it for {wait_s:.0f} s")
    try:
        if kl.depth == 0:
            CACHE.mkdir(parents=True, exist_ok=True)
            path = CACHE / f".lock-{key}"
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
            next_note = started + 60
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now - started >= wait_s:
                        os.close(fd)
                        raise VMUnavailable(f"the .build/vm lock {key}: held by {_lock_holder(path)}; "
                                            f"waited for it for {wait_s:.0f} s") from None
                    if now >= next_note:
                        log(f"waiting for the .build/vm lock {key} ({now - started:.0f} s so far), held by {_lock_holder(path)}")
                        next_note += 60
                    time.sleep(0.2)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"process {os.getpid()} ({' '.join(sys.argv)[:160]}) since {time.strftime('%H:%M:%S')}\n".encode(), 0)
            kl.fd = fd
            if time.monotonic() - started > 0.5:
                record_timing("wait", f"the .build/vm lock {key}", started)
        kl.depth += 1
        try:
            yield
        finally:
            kl.depth -= 1
            if kl.depth == 0:
                os.close(kl.fd)
                kl.fd = -1
    finally:
        kl.rlock.release()


def _arch_of(value) -> str:
    """The architecture a builder's first argument names (a Kernel, an Arch or "amd64")."""
    if isinstance(value, Kernel):
        return value.arch.name
    if isinstance(value, Arch):
        return value.name
    return str(value)


def serialised(fn=None, *, per_arch: bool = False):
    """Decorator: fn fills the cache; it runs under its own cache_lock (named after it, and
    with `per_arch=True` after the architecture its first argument names)."""
    def decorate(fn):
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = name
            if per_arch:
                first = args[0] if args else next(iter(kwargs.values()), "amd64")
                key = f"{name}-{_arch_of(first)}"
            with cache_lock(key):
                return fn(*args, **kwargs)
        return wrapper
    return decorate(fn) if fn is not None else decorate


def sh(cmd: list[str] | str, *, cwd=None, env=None, check=True, quiet=True, timeout=None) -> subprocess.CompletedProcess:
    """Runs a command; on failure raises VMUnavailable with its output."""
    shell = isinstance(cmd, str)
    r = subprocess.run(cmd, shell=shell, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        shown = cmd if shell else " ".join(str(c) for c in cmd)
        raise VMUnavailable(f"`{shown}` failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    if not quiet:
        sys.stderr.write(r.stdout + r.stderr)
    return r


def file_hash(*paths: pathlib.Path | str, extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        p = pathlib.Path(p)
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------------- packages

def installed(package: str) -> bool:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


_updated = False


def apt_update() -> None:
    global _updated
    if _updated:
        return
    with cache_lock("apt"), timed("apt-get update"):
        sh(["apt-get", *LOCK_TIMEOUT, "update", "-qq"], timeout=900)
    _updated = True


def ensure_packages(packages: list[str]) -> None:
    """Installs missing Debian packages (as root), else raises with the command to run."""
    missing = [p for p in packages if not installed(p)]
    if not missing:
        return
    with cache_lock("apt"):  # another thread may have installed them meanwhile
        missing = [p for p in packages if not installed(p)]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise VMUnavailable(f"missing Debian packages {' '.join(missing)}: install them with "
                            f"`sudo apt-get install {' '.join(missing)}` (the VM tests need them)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", *LOCK_TIMEOUT, "install", "-y", "-qq", "--no-install-recommends", *missing]
    with cache_lock("apt"), timed(f"apt-get install {' '.join(missing)}"):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            apt_update()
            sh(cmd, env=env, timeout=1800)


def apt_download(apt: list[str], packages: list[str], dest: pathlib.Path) -> None:
    """`apt-get download` into dest (as root apt warns it cannot drop privileges: harmless)."""
    dest.mkdir(parents=True, exist_ok=True)
    with cache_lock("apt"):
        r = subprocess.run(["apt-get", *apt, "download", *packages], cwd=dest, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise VMUnavailable(f"apt-get download {' '.join(packages)} failed:\n{r.stderr[-2000:]}")


def system_mirrors() -> tuple[str, str]:
    """The Debian and Debian-security mirrors the system's apt sources name (deb.debian.org if none)."""
    text = ""
    for p in [pathlib.Path("/etc/apt/sources.list"), *sorted(pathlib.Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text += p.read_text() + "\n"
        except OSError:
            pass
    urls = re.findall(r"(https?://[^\s\]]+)", text)
    main = next((u for u in urls if re.search(r"/debian/?$", u)), "http://deb.debian.org/debian")
    security = next((u for u in urls if re.search(r"/debian-security/?$", u)), "http://deb.debian.org/debian-security")
    return main.rstrip("/"), security.rstrip("/")


class PrivateApt:
    """apt with its own sources (bookworm, -updates, -security, -backports; amd64 and arm64) and
    lists under .build/vm/apt: the system's sources and dpkg architectures stay as they are."""

    def __init__(self) -> None:
        self.root = CACHE / "apt"
        self.lists = self.root / "lists"
        main, security = system_mirrors()
        key = "/usr/share/keyrings/debian-archive-keyring.gpg"
        opts = f"arch=amd64,arm64 signed-by={key}"
        self.sources_text = (f"deb [{opts}] {main} bookworm main\n"
                             f"deb [{opts}] {main} bookworm-updates main\n"
                             f"deb [{opts}] {security} bookworm-security main\n"
                             f"deb [{opts}] {main} bookworm-backports main\n")
        self.options = ["-o", f"Dir::Etc::SourceList={self.root / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
                        "-o", f"Dir::State::Lists={self.lists}", "-o", f"Dir::Cache={self.root / 'cache'}",
                        "-o", "APT::Architectures::=arm64", "-o", "Acquire::Languages=none"]

    def update(self, max_age_s: float = 86_400) -> None:
        stamp = self.root / "updated"
        sources = self.root / "sources.list"
        fresh = stamp.exists() and time.time() - stamp.stat().st_mtime < max_age_s and sources.exists() \
            and sources.read_text() == self.sources_text
        if fresh:
            return
        (self.lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        sources.write_text(self.sources_text)
        with timed("apt-get update (private arm64 + backports configuration)"):
            sh(["apt-get", *self.options, "update", "-qq"], timeout=900)
        stamp.write_text(time.ctime())

    def query(self, *args: str) -> str:
        return sh(["apt-cache", *self.options, *args]).stdout

    def download(self, packages: list[str], dest: pathlib.Path) -> None:
        apt_download(self.options, packages, dest)


# ---------------------------------------------------------------------------------- kernels

@dataclasses.dataclass(frozen=True)
class Arch:
    name: str
    qemu: str
    qemu_package: str
    machine: tuple[str, ...]
    console: str
    cross: str | None  # CROSS_COMPILE prefix
    kernel_arch: str  # ARCH= for kbuild
    cmdline: str = ""  # more of the kernel's command line, for every guest of this architecture

    @property
    def boot_args(self) -> str:
        """The start of every guest's kernel command line: the console, then `cmdline`."""
        return f"console={self.console} {self.cmdline}".strip()


# kpti=0 on arm64: Debian's arm64 kernel turns on kernel page-table isolation whenever KASLR is in
# effect ("forced ON by KASLR"; QEMU's virt machine hands it a KASLR seed), though a Cortex-A53
# needs none (meltdown: "Not affected"). Under TCG every entry to and exit from the kernel then
# switches translation tables, and QEMU, whose TLB has no ASID tags, flushes its TLB each time:
# 1,500 fork+exec of /bin/true in a busybox guest took 17-19 CPU-s of qemu with it and 9-13 CPU-s
# without (stop 50, docs/testing.md "Timings"). It changes nothing the project's programs see.
# (amd64: QEMU's qemu64 CPU is an AMD one, for which the kernel isolates nothing; mitigations=off
# measured no different there.)


ARCHES = {
    "amd64": Arch("amd64", "qemu-system-x86_64", "qemu-system-x86", ("-M", "pc", "-accel", "tcg"), "ttyS0", None, "x86"),
    "arm64": Arch("arm64", "qemu-system-aarch64", "qemu-system-arm", ("-M", "virt", "-cpu", "cortex-a53", "-accel", "tcg"),
                  "ttyAMA0", "aarch64-linux-gnu-", "arm64", "kpti=0"),
}


@dataclasses.dataclass(frozen=True)
class Kernel:
    arch: Arch
    version: str  # uname -r, e.g. 6.1.0-56-amd64
    package_version: str  # e.g. 6.1.192-2
    root: pathlib.Path  # the extracted image package (boot/, lib/modules/VERSION/)
    headers: pathlib.Path  # the kbuild directory to build modules against

    @property
    def image(self) -> pathlib.Path:
        return self.root / "boot" / f"vmlinuz-{self.version}"

    @property
    def modules(self) -> pathlib.Path:
        return self.root / "lib" / "modules" / self.version

    @property
    def boot_image(self) -> pathlib.Path:
        """What QEMU boots: the uncompressed kernel (amd64: the ELF vmlinux out of the xz'd
        bzImage, which QEMU starts through its PVH note; arm64: the gunzipped Image). Under TCG
        that saves the decompression, 2-8 s a boot on a loaded machine."""
        out = self.root / "boot" / f"vmlinux-{self.version}"
        if out.exists():
            return out
        started = time.monotonic()
        data = self.image.read_bytes()
        if self.arch.name == "amd64":
            import lzma
            start = data.find(b"\xfd7zXZ\x00")
            if start < 0:
                return self.image
            raw = lzma.LZMADecompressor().decompress(data[start:])
            if raw[:4] != b"\x7fELF":
                return self.image
        else:
            import gzip
            if data[:2] != b"\x1f\x8b":
                return self.image
            raw = gzip.decompress(data)
        out.with_suffix(".tmp").write_bytes(raw)
        os.replace(out.with_suffix(".tmp"), out)
        record_timing("step", f"uncompressed kernel image ({self.arch.name})", started)
        return out


_private_apt: PrivateApt | None = None


@serialised
def private_apt() -> PrivateApt:
    global _private_apt
    if _private_apt is None:
        _private_apt = PrivateApt()
        _private_apt.update()
    return _private_apt


def host_tools(arch: str) -> None:
    a = ARCHES[arch]
    packages = [a.qemu_package, "busybox-static", "cpio", "kmod", "xz-utils", "make", "gcc", "libc6-dev"]
    if a.cross:
        packages += ["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"]
    ensure_packages(packages)


def resolve_abi(arch: str) -> tuple[str, str]:
    """(image package name, version) that linux-image-<flavour> depends on right now."""
    if arch == "amd64":
        out = sh(["apt-cache", "depends", "linux-image-amd64"], check=False).stdout
        if "linux-image-6" not in out:
            apt_update()
            out = sh(["apt-cache", "depends", "linux-image-amd64"]).stdout
        name = re.search(r"Depends: (linux-image-[0-9][^\s:]*)", out).group(1)
        policy = sh(["apt-cache", "policy", name]).stdout
    else:
        apt = private_apt()
        out = apt.query("depends", "linux-image-arm64:arm64")
        name = re.search(r"Depends: (linux-image-[0-9][^\s:]*)", out).group(1)
        policy = apt.query("policy", f"{name}:arm64")
    version = re.search(r"Candidate: (\S+)", policy).group(1)
    if version == "(none)":
        raise VMUnavailable(f"{name} has no candidate version in apt's lists")
    return name, version


@serialised(per_arch=True)
def kernel(arch: str = "amd64") -> Kernel:
    """Debian's kernel of the ABI linux-image-<arch> points at, extracted and depmod'ed under
    .build/vm/<arch>/<version>/ (downloaded once), with the headers to build modules."""
    if arch not in ARCHES:
        raise ValueError(f"arch is amd64 or arm64, not {arch}")
    a = ARCHES[arch]
    host_tools(arch)
    name, package_version = resolve_abi(arch)
    version = name.removeprefix("linux-image-")
    base = CACHE / arch / version
    root = base / "image"
    # The host builds modules with the amd64 headers package (it brings linux-headers-ABI-common
    # and linux-kbuild, which the arm64 headers use too).
    abi = version.rsplit("-", 1)[0]
    series = ".".join(package_version.split(".")[:2])  # 6.1
    ensure_packages([f"linux-headers-{abi}-amd64"] if arch == "amd64" else [f"linux-headers-{abi}-common", f"linux-kbuild-{series}"])
    if arch == "amd64":
        headers = pathlib.Path(f"/usr/src/linux-headers-{version}")
    else:
        headers = base / "headers" / "usr" / "src" / f"linux-headers-{version}"
        kbuild = base / "headers" / "usr" / "lib" / f"linux-kbuild-{series}"
        if not (base / "headers.ready").exists():
            dl = base / "downloads"
            started = time.monotonic()
            private_apt().download([f"linux-headers-{version}:arm64={package_version}"], dl)
            shutil.rmtree(base / "headers", ignore_errors=True)
            for deb in dl.glob("linux-headers-*.deb"):
                sh(["dpkg-deb", "-x", str(deb), str(base / "headers")])
            # The arm64 headers link to the kbuild tools relatively: point them at the host's.
            kbuild.parent.mkdir(parents=True, exist_ok=True)
            host_kbuild = pathlib.Path("/usr/lib") / kbuild.name
            if not host_kbuild.exists():
                raise VMUnavailable(f"{host_kbuild} is missing (package {kbuild.name})")
            if kbuild.is_symlink() or kbuild.exists():
                kbuild.unlink()
            kbuild.symlink_to(host_kbuild)
            (base / "headers.ready").write_text(package_version)
            record_timing("step", f"arm64 kernel headers {version}", started)
    if not (base / "image.ready").exists():
        dl = base / "downloads"
        with timed(f"downloading and extracting {name} {package_version} ({arch})"):
            if arch == "amd64":
                apt_download([], [f"{name}={package_version}"], dl)
            else:
                private_apt().download([f"{name}:arm64={package_version}"], dl)
            shutil.rmtree(root, ignore_errors=True)
            deb = next(dl.glob(f"{name}_*.deb"))
            sh(["dpkg-deb", "-x", str(deb), str(root)])
            sh(["depmod", "-b", str(root), version])
        deb.unlink()  # 60-70 MB; the extracted tree is what is used
        (base / "image.ready").write_text(package_version)
    k = Kernel(a, version, package_version, root, headers)
    if not k.image.exists():
        raise VMUnavailable(f"{k.image} missing after extraction")
    return k


@serialised(per_arch=True)
def build_module(k: Kernel, source: pathlib.Path | str, patch=None) -> pathlib.Path:
    """Builds an out-of-tree module (a directory with a Kbuild file and sources) against the
    kernel's headers; cached by the sources' hash. Returns the .ko path."""
    source = pathlib.Path(source)
    if not source.is_absolute():
        source = REPO / source
    digest = file_hash(source, extra=k.version)
    out = CACHE / k.arch.name / k.version / "modules" / f"{source.name}-{digest}"
    kos = sorted(out.glob("*.ko")) if out.exists() else []
    if kos and (out / "built").exists():
        return kos[0]
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out)
    if patch:
        patch(out)
    cmd = ["make", "-s", "-C", str(k.headers), f"M={out}", "modules"]
    if k.arch.cross:
        cmd += [f"ARCH={k.arch.kernel_arch}", f"CROSS_COMPILE={k.arch.cross}"]
    with timed(f"building {source.name} for {k.version}"):
        sh(cmd, timeout=600)
    kos = sorted(out.glob("*.ko"))
    if not kos:
        raise VMUnavailable(f"building {source} produced no .ko")
    (out / "built").write_text("")
    return kos[0]


GPIO_SIM_FILES = ["drivers/gpio/gpio-sim.c", "drivers/gpio/gpiolib.h", "kernel/irq/irq_sim.c"]


@serialised
def linux_source_files(k: Kernel, files: list[str]) -> pathlib.Path:
    """Extracts `files` from Debian's linux-source package of the kernel's version into
    .build/vm/src/<version>/ (fetched at test time, never committed). The other modules' files
    come out in the same pass: each pass decompresses the whole archive (16-22 s), and the amd64
    and arm64 kernels share one version, so arm64's i2c-stub needs no second one."""
    series = ".".join(k.package_version.split(".")[:2])  # 6.1
    dest = CACHE / "src" / k.package_version
    if all((dest / f).exists() for f in files):
        return dest
    files = list(dict.fromkeys([*files, *GPIO_SIM_FILES, *I2C_STUB_FILES]))
    dl = CACHE / "src" / "downloads"
    package = f"linux-source-{series}"
    with timed(f"downloading {package} {k.package_version}"):
        try:
            apt_download([], [f"{package}={k.package_version}"], dl)
        except VMUnavailable:
            apt_update()
            apt_download([], [f"{package}={k.package_version}"], dl)
    deb = next(dl.glob(f"{package}_{k.package_version.replace(':', '%3a')}_all.deb"))
    dest.mkdir(parents=True, exist_ok=True)
    members = " ".join(f"linux-source-{series}/{f}" for f in files)
    with timed(f"extracting {len(files)} files from {package}"):
        sh(f"dpkg-deb --fsys-tarfile '{deb}' | tar -xO ./usr/src/linux-source-{series}.tar.xz | "
           f"tar -xJ -C '{dest}' --strip-components=1 {members}", timeout=900)
    deb.unlink()
    missing = [f for f in files if not (dest / f).exists()]
    if missing:
        raise VMUnavailable(f"linux-source {k.package_version} lacks {missing}")
    return dest


@serialised
def gpio_sim_module(k: Kernel) -> pathlib.Path:
    """Upstream gpio-sim built out of tree from Debian's linux-source of the kernel's version.
    Debian's kernels do not ship it; irq_sim is not built in either, and irq_to_desc is not
    exported, so irq_sim.c comes along with a one-line change."""
    src = linux_source_files(k, GPIO_SIM_FILES)
    staging = CACHE / "src" / f"gpio-sim-oot-{k.package_version}"
    if not (staging / "Kbuild").exists():
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for f in GPIO_SIM_FILES:
            shutil.copy(src / f, staging / pathlib.Path(f).name)
        irq = staging / "irq_sim.c"
        text = irq.read_text()
        patched = text.replace("handle_simple_irq(irq_to_desc(irqnum));", "generic_handle_irq(irqnum);")
        if patched == text:
            raise VMUnavailable("irq_sim.c no longer calls handle_simple_irq(irq_to_desc(irqnum)): update the patch in vmlib.gpio_sim_module")
        irq.write_text(patched)
        (staging / "Kbuild").write_text("obj-m := gpio-sim-oot.o\ngpio-sim-oot-y := gpio-sim.o irq_sim.o\n")
    return build_module(k, staging)


I2C_STUB_FILES = ["drivers/i2c/i2c-stub.c"]


@serialised(per_arch=True)
def i2c_stub_module(k: Kernel) -> pathlib.Path:
    """Upstream i2c-stub built out of tree from Debian's linux-source of the kernel's version,
    for a kernel that does not ship it (Debian's arm64 one); loadable by name, with parameters."""
    src = linux_source_files(k, I2C_STUB_FILES)
    staging = CACHE / "src" / f"i2c-stub-oot-{k.package_version}"
    if not (staging / "Kbuild").exists():
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        shutil.copy(src / I2C_STUB_FILES[0], staging / "i2c-stub.c")
        (staging / "Kbuild").write_text("obj-m := i2c-stub.o\n")
    return build_module(k, staging)


def has_module(k: Kernel, name: str) -> bool:
    """Whether the kernel ships module `name` (built in or in modules.dep)."""
    key = name.replace("-", "_")
    return any(pathlib.Path(line.partition(":")[0]).name.split(".ko")[0].replace("-", "_") == key
               for f in ("modules.dep", "modules.builtin") if (k.modules / f).exists()
               for line in (k.modules / f).read_text().splitlines())


# ---------------------------------------------------------------------------------- initramfs

INIT = r"""#!/bin/busybox sh
# The test VM's /init (Tests/vm/vmlib.py): mounts, modules, the host root over 9p, then
# /out/cmd.sh; its stdout, stderr and exit status go to /out; then power off.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin /host /out
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
echo "vm: init on $(uname -r) $(uname -m)"
while read -r m; do [ -n "$m" ] && { modprobe $m || echo "vm: modprobe $m failed"; }; done < /etc/vm/modules
grep -q configfs /proc/filesystems && mount -t configfs configfs /sys/kernel/config
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout /out; then
    echo "vm: cannot mount the output share"; poweroff -f
fi
if [ -f /etc/vm/hostroot ]; then
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro hostroot /host || echo "vm: cannot mount the host root"
    # Host paths under /tmp or /run the run needs (a clone in /tmp, say; /out/keep lists them)
    # stay visible through the tmpfs mounts below: held aside, then bound back.
    i=0
    for p in $(cat /out/keep 2>/dev/null); do mkdir -p /keep/$i && mount -o bind "/host$p" /keep/$i; i=$((i+1)); done
    mount -t tmpfs tmpfs /host/run
    mount -t tmpfs tmpfs /host/tmp
    i=0
    for p in $(cat /out/keep 2>/dev/null); do mkdir -p "/host$p" && mount -o bind /keep/$i "/host$p"; i=$((i+1)); done
    mount -o rbind /dev /host/dev
    mount -o rbind /proc /host/proc
    mount -o rbind /sys /host/sys
    mkdir -p /host/run/vm /host/run/vm-home
    mount -o bind /out /host/run/vm
fi
export HOME=/tmp PATH=/sbin:/bin:/usr/sbin:/usr/bin
. /etc/vm/env
cd /
echo "vm: running /out/cmd.sh"
cat /proc/uptime > /out/uptime-start
sh /out/cmd.sh > /out/stdout 2> /out/stderr
echo $? > /out/status
cat /proc/uptime > /out/uptime-end
echo "vm: exit status $(cat /out/status)"
sync
poweroff -f
"""

GUEST_HELPERS = r"""# Helpers for /out/cmd.sh (sourced first; see docs/testing.md).
# inhost CMD ARGS...: run a host program in the host root (read-only), with /run and /tmp on
# tmpfs, /run/vm = this run's output directory, cwd = the repository, the run's env passed on.
inhost() {
    chroot /host /usr/bin/env -i HOME=/run/vm-home TMPDIR=/tmp LANG=C.UTF-8 SWIFT_BACKTRACE=interactive=no \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin @HOST_ENV@ \
        /bin/sh -c 'cd "$0" && exec "$@"' @CWD@ "$@"
}
# sysw FILE VALUE: write a sysfs/configfs/debugfs file with one open/write.
sysw() { printf '%s' "$2" > "$1"; }
"""


@serialised(per_arch=True)
def busybox_binary(arch: Arch) -> pathlib.Path:
    if arch.name == "amd64":
        return pathlib.Path("/bin/busybox")
    dest = CACHE / "arm64" / "busybox"
    binary = dest / "bin" / "busybox"
    if not binary.exists():
        with timed("busybox-static:arm64"):
            private_apt().download(["busybox-static:arm64"], dest / "downloads")
            deb = next((dest / "downloads").glob("busybox-static_*.deb"))
            sh(["dpkg-deb", "-x", str(deb), str(dest)])
    return binary


def module_closure(k: Kernel, names: list[str], extra_dir: pathlib.Path | None) -> list[pathlib.Path]:
    """The module files `names` need (modules.dep), relative to lib/modules/VERSION."""
    dep_text = (k.modules / "modules.dep").read_text()
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in dep_text.splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
        stem = pathlib.Path(path).name.split(".ko")[0]
        by_name[stem.replace("-", "_")] = path
    builtin = set()
    b = k.modules / "modules.builtin"
    if b.exists():
        builtin = {pathlib.Path(l).name.split(".ko")[0].replace("-", "_") for l in b.read_text().split()}
    need: list[str] = []

    def add(path: str) -> None:
        if path in need:
            return
        for d in deps.get(path, []):
            add(d)
        need.append(path)

    for n in names:
        key = n.replace("-", "_")
        if key in builtin:
            continue
        if key not in by_name:
            raise VMUnavailable(f"module {n} is not in {k.version}")
        add(by_name[key])
    return [pathlib.Path(p) for p in need]


@serialised(per_arch=True)
def initramfs(k: Kernel, modules: list[str], extra: list[pathlib.Path] = (), host_root: bool = True,
              files: dict[str, pathlib.Path] | None = None, init: str | None = None) -> pathlib.Path:
    """A gzip'ed newc cpio: busybox, /init (INIT, or your own script), the modules (with what
    they depend on) and the extra .ko files (loadable with modprobe by name), and `files`
    (guest path -> host file), cached by content."""
    files = files or {}
    init = INIT if init is None else init
    busybox = busybox_binary(k.arch)
    extra = [pathlib.Path(e) for e in extra]
    key = hashlib.sha256("\n".join([init, k.version, *modules, str(host_root), str(busybox)]).encode())
    for e in extra:
        key.update(e.read_bytes())
    for g, h in sorted(files.items()):
        key.update(g.encode())
        key.update(pathlib.Path(h).read_bytes())
    out = CACHE / k.arch.name / k.version / "initramfs" / f"{key.hexdigest()[:16]}.cpio.gz"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with timed(f"initramfs {out.name} ({k.arch.name})", quiet=True), tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = pathlib.Path(tmp) / "root"
        (root / "bin").mkdir(parents=True)
        shutil.copy(busybox, root / "bin" / "busybox")
        (root / "init").write_text(init)
        (root / "init").chmod(0o755)
        (root / "etc" / "vm").mkdir(parents=True)
        mdir = root / "lib" / "modules" / k.version
        own = {e.name.split(".ko")[0].replace("-", "_") for e in extra}  # loaded by name from extra/
        for rel in module_closure(k, [m.split()[0] for m in modules if m.split()[0].replace("-", "_") not in own], None):
            (mdir / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(k.modules / rel, mdir / rel)
        for e in extra:
            (mdir / "extra").mkdir(parents=True, exist_ok=True)
            shutil.copy(e, mdir / "extra" / e.name)
        for f in ["modules.builtin", "modules.builtin.modinfo", "modules.order"]:
            if (k.modules / f).exists():
                shutil.copy(k.modules / f, mdir / f)
        sh(["depmod", "-b", str(root), k.version])
        (root / "etc" / "vm" / "modules").write_text("\n".join(modules) + "\n")
        if host_root:
            (root / "etc" / "vm" / "hostroot").write_text("")
        (root / "etc" / "vm" / "env").write_text("")
        for g, h in files.items():
            target = root / g.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(h, target)
        sh(f"cd '{root}' && find . | cpio -o -H newc --quiet | gzip -1 > '{out}.tmp'")
        os.replace(f"{out}.tmp", out)
    return out


# ---------------------------------------------------------------------------------- machines

@dataclasses.dataclass
class Result:
    status: int | None  # the script's exit status; None when the guest never reported one
    stdout: str
    stderr: str
    console: str
    seconds: float
    timed_out: bool
    outdir: pathlib.Path
    command: list[str]

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.timed_out

    def file(self, name: str) -> bytes:
        return (self.outdir / name).read_bytes()

    def describe(self) -> str:
        """For assertion messages: why it failed, the output, the console's tail."""
        why = ("the guest did not finish within its timeout and was killed" if self.timed_out else
               "the guest never reported an exit status (it crashed or powered off early)" if self.status is None else
               f"exit status {self.status}")
        console = "\n".join(self.console.splitlines()[-40:])
        return (f"{why} after {self.seconds:.1f} s\n--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-4000:]}"
                f"\n--- console (last 40 lines; whole: {self.outdir / 'console.log'})\n{console}\n"
                f"--- by hand: {' '.join(self.command)}")


class Machine:
    """One kind of guest: a kernel, the modules to load at boot (`"name"` or `"name param=v"`),
    extra .ko files, whether the host root is shared, memory, CPUs, kernel command line
    additions, extra QEMU arguments (disks: `["-drive", "file=IMG,if=virtio,format=raw"]`),
    extra files in the initramfs, and optionally your own /init (it must leave the script's
    results in the `vmout` 9p share and power off, as INIT does). `run(script)` boots it once,
    runs the script and powers off; `start(script)` does the same in the background."""

    def __init__(self, k: Kernel, modules: list[str] = (), extra: list[pathlib.Path] = (), host_root: bool = True,
                 memory_mb: int = 512, smp: int = 1, append: str = "", qemu_args: list[str] = (),
                 files: dict[str, pathlib.Path] | None = None, init: str | None = None) -> None:
        self.kernel = k
        base = ["virtio_pci", "9pnet_virtio", "9p", "configfs"]
        self.modules = [*base, *modules]
        self.extra = list(extra)
        self.host_root = host_root
        self.memory_mb = memory_mb
        self.smp = smp
        self.append = append
        self.qemu_args = list(qemu_args)
        self.initrd = initramfs(k, self.modules, self.extra, host_root, files, init)

    def command(self, outdir: pathlib.Path, console: str | None) -> list[str]:
        a = self.kernel.arch
        cmd = [a.qemu, *a.machine, "-m", str(self.memory_mb), "-smp", str(self.smp), "-nodefaults", "-no-user-config",
               "-display", "none", "-no-reboot", "-kernel", str(self.kernel.boot_image), "-initrd", str(self.initrd),
               "-append", f"{a.boot_args} panic=-1 quiet loglevel=4 {self.append}".strip(),
               "-serial", f"file:{console}" if console else "stdio",
               "-virtfs", f"local,path={outdir},mount_tag=vmout,security_model=none,multidevs=remap"]
        if self.host_root:
            cmd += ["-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"]
        return cmd + self.qemu_args

    def run(self, script: str, timeout_s: float = 120, env: dict[str, str] | None = None, name: str = "run",
            console_to_stdout: bool = False) -> Result:
        """Boots, runs `script` (busybox sh, with the helpers `inhost` and `sysw`), powers off.
        `env` is exported to the script and to `inhost` programs. A guest still running after
        `timeout_s` is killed: the result says so and `ok` is false."""
        return self.start(script, timeout_s, env, name, console_to_stdout).wait()

    def start(self, script: str, timeout_s: float = 120, env: dict[str, str] | None = None, name: str = "run",
              console_to_stdout: bool = False, interactive: bool = False) -> "GuestRun":
        """Like `run`, but returns at once: several guests can run side by side; `wait()`
        gives the Result."""
        if not shutil.which(self.kernel.arch.qemu):
            raise VMUnavailable(f"{self.kernel.arch.qemu} is not installed (package {self.kernel.arch.qemu_package})")
        runs = CACHE / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        outdir = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=runs))
        outdir.chmod(0o777)
        import shlex
        env = dict(env or {})
        for k in env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"not an environment variable name: {k!r}")
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        helpers = GUEST_HELPERS.replace("@HOST_ENV@", " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())) \
                               .replace("@CWD@", shlex.quote(str(REPO)))
        (outdir / "cmd.sh").write_text(f"{exports}{helpers}\n{script}\n")
        (outdir / "keep").write_text("".join(f"{p}\n" for p in hidden_host_paths([str(REPO), *env.values()])))
        console = None if console_to_stdout else outdir / "console.log"
        cmd = self.command(outdir, str(console) if console else None)
        log(f"starting guest {outdir.name} ({self.kernel.arch.name})")
        return GuestRun(cmd, outdir, timeout_s, console_to_stdout, interactive)


def hidden_host_paths(candidates: list[str]) -> list[str]:
    """The existing host directories among `candidates` (the repository, path-valued env) that
    lie under /tmp or /run, which the guest covers with tmpfs: its init binds them back. A CI
    clone in /tmp would otherwise vanish in the guest ("can't cd to /tmp/...")."""
    dirs = set()
    for c in candidates:
        if not c.startswith("/") or any(ch.isspace() for ch in c):
            continue
        p = pathlib.Path(c)
        if not p.exists():
            continue
        d = (p if p.is_dir() else p.parent).resolve()
        if d.parts[1:2] in (("tmp",), ("run",)) and len(d.parts) > 2:
            dirs.add(str(d))
    kept: list[str] = []
    for d in sorted(dirs, key=len):
        if not any(d == k or d.startswith(k + "/") for k in kept):
            kept.append(d)
    return kept


_host_root_runs: set = set()
_host_root_lock = threading.Lock()


def host_root_guests_running() -> int:
    """How many guests sharing the host root (Machine with host_root=True) this process runs."""
    with _host_root_lock:
        return len(_host_root_runs)


class GuestRun:
    """A guest that was started. A watcher thread kills it at its deadline (whether or not
    anybody is waiting yet); `wait()` returns its Result."""

    def __init__(self, cmd: list[str], outdir: pathlib.Path, timeout_s: float, console_to_stdout: bool,
                 interactive: bool = False) -> None:
        import threading
        self.cmd, self.outdir, self.timeout_s = cmd, outdir, timeout_s
        self.host_root = any("mount_tag=hostroot" in c for c in cmd)
        self.started = time.monotonic()
        self.timing: TimingEntry | None = None
        self.proc = subprocess.Popen(cmd, stdin=None if interactive else subprocess.DEVNULL,
                                     stdout=None if console_to_stdout else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        if self.host_root:
            with _host_root_lock:
                _host_root_runs.add(self)
        self.timed_out = False
        self.qemu_err = b""
        self.seconds = 0.0
        self.result: Result | None = None
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        try:
            _, self.qemu_err = self.proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.proc.kill()
            _, self.qemu_err = self.proc.communicate()
        self.seconds = time.monotonic() - self.started
        with _host_root_lock:
            _host_root_runs.discard(self)
        boot, script = guest_uptimes(self.outdir)
        self.timing = record_timing("guest", self.outdir.name, self.started, self.seconds, boot_s=boot, script_s=script,
                                    note="timed out" if self.timed_out else "")

    def wait(self) -> Result:
        if self.result:
            return self.result
        # The watcher kills QEMU at the deadline; a QEMU that does not die within a minute more
        # is reported, not waited for.
        self.watcher.join(max(0.0, self.started + self.timeout_s - time.monotonic()) + 60)
        if self.watcher.is_alive():
            raise VMUnavailable(f"guest {self.outdir.name}: QEMU (pid {self.proc.pid}) still runs 60 s after its "
                                f"{self.timeout_s:.0f} s timeout and the kill")
        outdir = self.outdir
        log(f"guest {outdir.name} {'timed out' if self.timed_out else 'finished'} after {self.seconds:.1f} s")
        status_file = outdir / "status"
        text = status_file.read_text().strip() if status_file.exists() else ""
        status = int(text) if text else None
        read = lambda n: (outdir / n).read_text(errors="replace") if (outdir / n).exists() else ""
        console_text = read("console.log")
        if self.qemu_err:
            console_text += "\n--- qemu stderr\n" + self.qemu_err.decode(errors="replace")
        self.result = Result(status, read("stdout"), read("stderr"), console_text, self.seconds, self.timed_out, outdir, self.cmd)
        return self.result


def prune_runs(keep: int = 40) -> None:
    """Keeps the newest `keep` run directories under .build/vm/runs."""
    runs = CACHE / "runs"
    if not runs.exists():
        return
    dirs = sorted((d for d in runs.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
    for d in dirs[:-keep]:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------- by hand

def main(argv: list[str]) -> int:
    """python3 Tests/vm/vmlib.py [--arch arm64] [--modules a,b] [--ko PATH]... [--timeout S] SCRIPT

    Boots the guest with the console on this terminal and runs SCRIPT (busybox sh; `inhost CMD`
    runs a host program). Example:
        python3 Tests/vm/vmlib.py --modules i2c-dev,i2c-stub 'i2cdetect -l; ls /dev/i2c-*'
    """
    import argparse
    p = argparse.ArgumentParser(description=main.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", default="amd64", choices=sorted(ARCHES))
    p.add_argument("--modules", default="", help="comma-separated modules to load at boot (name or 'name param=value')")
    p.add_argument("--ko", action="append", default=[], help="an extra .ko (or a module source dir with a Kbuild file)")
    p.add_argument("--gpio-sim", action="store_true", help="also build and add gpio-sim")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--shell", action="store_true", help="an interactive shell on the console (after SCRIPT, if given); exit ends the guest")
    p.add_argument("script", nargs="?", default="")
    a = p.parse_args(argv)
    try:
        k = kernel(a.arch)
        extra = [build_module(k, x) if pathlib.Path(x).is_dir() else pathlib.Path(x) for x in a.ko]
        if a.gpio_sim:
            extra.append(gpio_sim_module(k))
        vm = Machine(k, modules=[m for m in a.modules.split(",") if m], extra=extra, host_root=a.arch == "amd64")
        print("vm:", " ".join(vm.command(pathlib.Path("OUTDIR"), None)), file=sys.stderr)
        script = a.script
        if a.shell:
            tty = "/dev/ttyS0" if a.arch == "amd64" else "/dev/ttyAMA0"
            script += f"\necho 'vm: shell (inhost CMD runs a host program; exit powers off)'\nsetsid cttyhack sh -i <{tty} >{tty} 2>&1\n"
        r = vm.start(script, timeout_s=a.timeout if not a.shell else 24 * 3600, console_to_stdout=True, name="byhand",
                     interactive=a.shell).wait()
    except VMUnavailable as e:
        print(f"vm: unavailable: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    print(f"vm: {'timed out' if r.timed_out else f'exit status {r.status}'} after {r.seconds:.1f} s; output in {r.outdir}",
          file=sys.stderr)
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
