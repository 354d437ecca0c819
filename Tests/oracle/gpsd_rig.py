"""gpsd for real in the tests: Debian's gpsd and gpsfake feeding NMEA or receiver logs, a fake
gpsd for garbage, and gpsd's own regression logs from its Debian source package.

- `ensure_gpsd()` installs gpsd, gpsd-clients and python3-gps with apt (lock timeout) when
  running as root, else raises GpsdUnavailable naming the packages.
- `Gpsfake(log, port)` runs `gpsfake -1 -c CYCLE -P PORT LOG` (its own gpsd on 127.0.0.1:PORT);
  it waits for the first client before feeding, and does not exit at the end of the log, so it
  is bounded and stopped by the rig.
- `regression_logs()` fetches gpsd's source package (`apt-get source --download-only` through a
  private apt configuration with deb-src lines, the system's sources untouched) once into
  .build/gpsd-src and extracts test/daemon/*.log and their .chk (gpsd's expected JSON output).
- `FakeGpsd(port, lines)` is a TCP server that sends whatever lines it is given (gpsd cannot be
  made to send garbage).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import tarfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = REPO / ".build" / "gpsd-src"
PACKAGES = ["gpsd", "gpsd-clients", "python3-gps"]


class GpsdUnavailable(Exception):
    """gpsd cannot be prepared here; the message says why and what to do."""


def installed(package: str) -> bool:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def ensure_gpsd() -> None:
    missing = [p for p in PACKAGES if not installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise GpsdUnavailable(f"missing Debian packages {' '.join(missing)}: sudo apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    lock = ["-o", "DPkg::Lock::Timeout=900"]
    # Without the recommends: 60 packages, not 68 (28 s and 31 CPU-s against 38 s and 41, the
    # downloads cached); gpsd, gpsfake and the tests need none of them.
    install = ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *missing]
    r = subprocess.run(install, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        subprocess.run(["apt-get", *lock, "update", "-qq"], capture_output=True, text=True, env=env)
        r = subprocess.run(install, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise GpsdUnavailable(f"apt-get install --no-install-recommends {' '.join(missing)} failed:\n{r.stderr[-2000:]}")
    # Debian starts gpsd.socket on install; the tests run their own gpsd instances.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gpsfake:
    """gpsfake with its own gpsd on 127.0.0.1:`port`, replaying `log` once."""

    def __init__(self, log: pathlib.Path, port: int, cycle_s: float = 0.01, extra: list[str] | None = None):
        ensure_gpsd()
        self.port = port
        self.log = log
        cmd = ["gpsfake", "-1", "-q", "-c", str(cycle_s), "-P", str(port), *(extra or []), str(log)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.wait_listening()

    def wait_listening(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise GpsdUnavailable(f"gpsfake exited ({self.proc.returncode}): {self.proc.stderr.read()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    pass
                # That probe was a client: gpsfake starts feeding only for a watching client,
                # so the probe does not consume the log.
                return
            except OSError:
                time.sleep(0.05)
        raise GpsdUnavailable(f"gpsd (from gpsfake) did not listen on 127.0.0.1:{self.port} within {timeout_s} s")

    def stop(self) -> None:
        """Stops gpsfake and its gpsd (the whole process group)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)


class FakeGpsd:
    """A TCP server on 127.0.0.1:`port` that sends `lines` (bytes, each with its line end) to
    every client after the client's first line (the WATCH command), then keeps the connection
    open until stopped."""

    def __init__(self, port: int, lines: list[bytes], pause_s: float = 0.0):
        self.port = port
        self.lines = lines
        self.pause_s = pause_s
        self.watch_commands: list[bytes] = []
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(4)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        self.server.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    self.watch_commands.append(conn.recv(4096))
                    for line in self.lines:
                        conn.sendall(line)
                        if self.pause_s:
                            time.sleep(self.pause_s)
                    while not self.stopped.wait(0.1):
                        pass
                except OSError:
                    pass

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.server.close()


def private_apt_source() -> list[str]:
    """apt options for a private configuration with deb-src lines of the system's mirrors."""
    apt_dir = CACHE / "apt"
    (apt_dir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    mirrors = []
    for f in [pathlib.Path("/etc/apt/sources.list.d/debian.sources")]:
        if f.exists():
            uris, suites = None, None
            for block in f.read_text().split("\n\n"):
                fields = {}
                for line in block.splitlines():
                    if ":" in line and not line.startswith("#"):
                        k, v = line.split(":", 1)
                        fields[k.strip()] = v.strip()
                if fields.get("Types", "").startswith("deb") and "URIs" in fields:
                    for suite in fields.get("Suites", "").split():
                        mirrors.append(f"deb-src {fields['URIs']} {suite} {fields.get('Components', 'main')}")
    if not mirrors and pathlib.Path("/etc/apt/sources.list").exists():
        for line in pathlib.Path("/etc/apt/sources.list").read_text().splitlines():
            if line.startswith("deb "):
                mirrors.append("deb-src " + line[4:])
    if not mirrors:
        mirrors = ["deb-src http://deb.debian.org/debian bookworm main"]
    sources = apt_dir / "sources.list"
    sources.write_text("\n".join(mirrors) + "\n")
    return ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt_dir / 'lists'}"]


def regression_logs() -> pathlib.Path:
    """The directory of gpsd's test/daemon logs (and .chk files) of the installed gpsd's source."""
    ensure_gpsd()
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "gpsd"], capture_output=True, text=True).stdout.strip()
    upstream = version.split("-")[0].split(":")[-1]
    out = CACHE / f"gpsd-{upstream}" / "test" / "daemon"
    if out.is_dir() and any(out.glob("*.log.chk")):
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    opts = private_apt_source()
    r = subprocess.run(["apt-get", *opts, "update", "-qq"], capture_output=True, text=True)
    if r.returncode != 0:
        raise GpsdUnavailable(f"apt-get update (deb-src) failed:\n{r.stderr[-2000:]}")
    dl = CACHE / "download"
    dl.mkdir(exist_ok=True)
    r = subprocess.run(["apt-get", *opts, "source", "--download-only", f"gpsd={version}"], cwd=dl, capture_output=True, text=True)
    if r.returncode != 0:
        r = subprocess.run(["apt-get", *opts, "source", "--download-only", "gpsd"], cwd=dl, capture_output=True, text=True)
    if r.returncode != 0:
        raise GpsdUnavailable(f"apt-get source --download-only gpsd failed:\n{r.stderr[-2000:]}")
    tarballs = sorted(dl.glob("gpsd_*.orig.tar.*"))
    if not tarballs:
        raise GpsdUnavailable(f"no gpsd orig tarball in {dl}: {sorted(p.name for p in dl.iterdir())}")
    with tarfile.open(tarballs[-1]) as tf:
        members = [m for m in tf.getmembers() if "/test/daemon/" in m.name and m.isfile()]
        root = members[0].name.split("/")[0]
        tf.extractall(CACHE, members=members)
    extracted = CACHE / root / "test" / "daemon"
    if extracted != out:
        out.parent.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(extracted), str(out))
    return out
