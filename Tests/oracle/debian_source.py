"""Debian source packages as test data, fetched at test time and cached (never committed).

Some Debian source packages carry real recordings as their own test data (gpsbabel's
reference/track/*.fit, pytrainer's test/imports/sample.fit). This module fetches a source
package's upstream tarball with apt through a *private* apt configuration (its own
sources.list with one deb-src line, its own lists and caches under `.build/debian-src`), so the
system's apt sources and caches are never changed, and extracts the members a test asks for.

    from debian_source import extract
    root = extract("gpsbabel", lambda name: name.endswith(".fit"))   # pathlib.Path
    for fit in root.rglob("*.fit"): ...

- Everything is cached in `.build/debian-src/PACKAGE/` (the downloaded files, and the extracted
  members under `files/`: every call adds the members it selects, so two tests that select
  different members of one package both find theirs); a second call reads the cache without the
  network. Calls from several processes (pytest-xdist's workers) take turns on the cache's
  lock file.
- apt checks the downloaded files against the hashes of the suite's signed Sources index.
- `SourceUnavailable` says why a package could not be had (no apt-get, the archive not
  reachable, no such package in any of the suites tried, no tarball, no matching member);
  a test that needs the data fails with that message (it never skips).

Suites are tried in order (default: sid, then trixie, then bookworm): a suite that does not have
the package, or whose files are gone from the mirror (404), gives way to the next.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
import subprocess
import tarfile
import time
from typing import Callable, Iterable

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("DEBIAN_SOURCE_CACHE", REPO / ".build" / "debian-src"))
MIRROR = "http://deb.debian.org/debian"
SUITES = ("sid", "trixie", "bookworm")
# An index younger than this is not fetched again (apt-get update of one suite's Sources).
LISTS_MAX_AGE_S = 24 * 3600
# Bounds on what is extracted from one tarball.
MEMBERS_MAX = 2_000
MEMBER_BYTES_MAX = 64 * 1024 * 1024
COMMAND_TIMEOUT_S = 600


class SourceUnavailable(Exception):
    """A source package (or the members asked for) cannot be had; the message says why."""


def apt_options(suite: str, cache: pathlib.Path = CACHE) -> list[str]:
    """apt-get options for a private configuration with one deb-src line for `suite`: its own
    sources.list, lists and package caches; the system's sources.list.d is not read."""
    base = cache / "apt" / suite
    for d in (base / "lists" / "partial", base / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    sources = base / "sources.list"
    line = f"deb-src {MIRROR} {suite} main\n"
    if not sources.exists() or sources.read_text() != line:
        sources.write_text(line)
    return ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={base / 'lists'}", "-o", f"Dir::Cache={base / 'cache'}",
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
            "-o", "APT::Get::List-Cleanup=false", "-o", "Acquire::Retries=3"]


def run(cmd: list[str], cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              env=dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C"))
    except FileNotFoundError as e:
        raise SourceUnavailable(f"{cmd[0]} not found ({e}): Debian's apt is needed to fetch source packages")
    except subprocess.TimeoutExpired:
        raise SourceUnavailable(f"{' '.join(cmd[:4])}… took longer than {COMMAND_TIMEOUT_S} s (is {MIRROR} reachable?)")


def update(suite: str, cache: pathlib.Path = CACHE) -> list[str]:
    """Fetches `suite`'s Sources index into the private lists (at most once a day); returns the
    apt options."""
    opts = apt_options(suite, cache)
    lists = cache / "apt" / suite / "lists"
    stamp = lists / ".updated"
    fresh = stamp.exists() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE_S and any(lists.glob("*Sources*"))
    if not fresh:
        r = run(["apt-get", *opts, "update", "-qq"])
        if r.returncode != 0 or not any(lists.glob("*Sources*")):
            raise SourceUnavailable(f"apt-get update of deb-src {MIRROR} {suite} failed "
                                    f"(exit {r.returncode}): {(r.stderr or r.stdout).strip()[-1500:]}")
        stamp.touch()
    return opts


def tarballs(directory: pathlib.Path, package: str) -> list[pathlib.Path]:
    """The upstream tarball(s) apt downloaded: PACKAGE_VERSION.orig.tar.* (or a native
    PACKAGE_VERSION.tar.*), without the Debian packaging tarball and signatures."""
    out = []
    for p in sorted(directory.glob(f"{package}_*.tar.*")):
        if p.name.endswith((".asc", ".sig")) or ".debian.tar." in p.name:
            continue
        out.append(p)
    return out


def source_tarball(package: str, suites: Iterable[str] = SUITES, cache: pathlib.Path = CACHE) -> pathlib.Path:
    """The upstream tarball of `package` (cached), from the first suite that has it."""
    download = cache / package / "download"
    have = tarballs(download, package) if download.is_dir() else []
    if have:
        return have[-1]
    reasons = []
    for suite in suites:
        try:
            opts = update(suite, cache)
        except SourceUnavailable as e:
            reasons.append(str(e))
            continue
        work = cache / package / f"partial-{suite}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        os.chmod(work, 0o777)  # apt downloads as _apt where it can
        # --tar-only: the tarballs, not the .dsc (the mirror may not serve every file of a source
        # package; the upstream tarball is what the tests read).
        r = run(["apt-get", *opts, "source", "--download-only", "--tar-only", "-qq", package], cwd=work)
        found = tarballs(work, package)
        if r.returncode == 0 and found:
            verify(found, package, opts)
            download.mkdir(parents=True, exist_ok=True)
            for p in work.iterdir():
                shutil.move(str(p), download / p.name)
            shutil.rmtree(work, ignore_errors=True)
            (cache / package / "suite").write_text(suite + "\n")
            return tarballs(download, package)[-1]
        reasons.append(f"{suite}: apt-get source --download-only {package} failed (exit {r.returncode}): "
                       f"{(r.stderr or r.stdout).strip()[-800:] or 'no tarball downloaded'}")
        shutil.rmtree(work, ignore_errors=True)
    raise SourceUnavailable(f"Debian source package {package} could not be fetched:\n  " + "\n  ".join(reasons))


def verify(files: list[pathlib.Path], package: str, opts: list[str]) -> None:
    """Checks each file's SHA-256 against the suite's (signed) Sources index, as apt did."""
    import hashlib
    r = run(["apt-cache", *opts, "showsrc", "--only-source", package])
    sums = {}
    block = False
    for line in r.stdout.splitlines():
        if line.startswith("Checksums-Sha256:"):
            block = True
            continue
        if block and line.startswith(" "):
            parts = line.split()
            if len(parts) == 3:
                sums[parts[2]] = parts[0]
            continue
        block = False
    for f in files:
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        if sums.get(f.name) != digest:
            raise SourceUnavailable(f"{f.name}: SHA-256 {digest} is not the one in the Sources index "
                                    f"({sums.get(f.name, 'not listed')})")


def version(package: str, cache: pathlib.Path = CACHE) -> str | None:
    """The upstream version of the cached tarball (PACKAGE_VERSION.orig.tar.xz), if any."""
    download = cache / package / "download"
    have = tarballs(download, package) if download.is_dir() else []
    if not have:
        return None
    return have[-1].name[len(package) + 1:].split(".orig.tar.")[0].split(".tar.")[0]


@contextlib.contextmanager
def locked(cache: pathlib.Path):
    """One process at a time fetches or extracts into `cache` (an flock on its .lock: here the
    suites' private apt lists are shared by every package; pypi_sdist locks its own cache)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def extract(package: str, select: Callable[[str], bool], suites: Iterable[str] = SUITES,
            cache: pathlib.Path = CACHE) -> pathlib.Path:
    """Extracts the regular files of `package`'s upstream tarball whose path (without the
    tarball's top directory) `select` accepts into .build/debian-src/PACKAGE/files/ and returns
    that directory (which may hold members other calls selected too: it only grows while the
    tarball stays the same). Raises SourceUnavailable when nothing matches."""
    with locked(cache):
        return _extract(package, select, suites, cache)


def _extract(package: str, select: Callable[[str], bool], suites: Iterable[str], cache: pathlib.Path) -> pathlib.Path:
    tarball = source_tarball(package, suites, cache)
    out = cache / package / "files"
    stamp = out / f".from-{tarball.name}"
    index = out / f".selected-{tarball.name}"  # every member extracted so far, one per line
    if not stamp.exists():  # nothing yet, or from another tarball
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
    have = set(index.read_text().splitlines()) if index.exists() else set()
    if stamp.exists() and any(select(n) for n in have):
        # Once a call's selection was extracted it is there whole: a selection is a test's fixed set.
        return out
    count = 0
    try:
        with tarfile.open(tarball) as tf:
            for m in tf:
                if not m.isfile():
                    continue
                parts = pathlib.PurePosixPath(m.name).parts
                if len(parts) < 2 or ".." in parts:
                    continue
                rel = "/".join(parts[1:])
                if not select(rel):
                    continue
                if m.size > MEMBER_BYTES_MAX:
                    raise SourceUnavailable(f"{tarball.name}: {rel} is {m.size} bytes (limit {MEMBER_BYTES_MAX})")
                count += 1
                if count > MEMBERS_MAX:
                    raise SourceUnavailable(f"{tarball.name}: more than {MEMBERS_MAX} members selected")
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                assert src is not None
                with src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                have.add(rel)
    except (tarfile.TarError, OSError) as e:
        raise SourceUnavailable(f"{tarball}: cannot be read ({e}); delete {cache / package} to fetch it again")
    if count == 0:
        raise SourceUnavailable(f"{tarball.name} holds no member the test asked for")
    index.write_text("".join(f"{n}\n" for n in sorted(have)))
    stamp.touch()
    return out


def provenance(package: str, cache: pathlib.Path = CACHE) -> str:
    """'PACKAGE VERSION (SUITE)' of the cached source, for messages and reports."""
    suite_file = cache / package / "suite"
    suite = suite_file.read_text().strip() if suite_file.exists() else "?"
    return f"{package} {version(package, cache) or '?'} ({suite})"
