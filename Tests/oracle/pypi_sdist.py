"""Source distributions from PyPI as test data, fetched at test time and cached (never committed).

Some projects ship real files in their sdists (gpxpy's test_files/ holds GPX tracks and routes
written by others). `extract(name, version, select)` downloads the sdist with pip (`pip download
--no-binary :all: --no-deps`; pip checks what it downloads), caches it in
`.build/pypi-sdist/NAME-VERSION/` and extracts the members `select` accepts. `SourceUnavailable`
says why it could not be had; a test that needs the data fails with that message (never skips).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tarfile
from typing import Callable

from debian_source import locked

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("PYPI_SDIST_CACHE", REPO / ".build" / "pypi-sdist"))
MEMBERS_MAX = 2_000
MEMBER_BYTES_MAX = 32 * 1024 * 1024


class SourceUnavailable(Exception):
    pass


def extract(name: str, version: str, select: Callable[[str], bool]) -> pathlib.Path:
    """The directory holding the selected members of NAME==VERSION's sdist (relative paths kept).
    One process at a time downloads or extracts (the oracle tests run in two workers)."""
    with locked(CACHE):
        return _extract(name, version, select)


def download(name: str, version: str) -> pathlib.Path:
    """NAME==VERSION's sdist, downloaded once into the cache (Tests/oracle/prefetch.py fetches it
    ahead of the tests)."""
    with locked(CACHE):
        return _download(name, version)


def _download(name: str, version: str) -> pathlib.Path:
    base = CACHE / f"{name}-{version}"
    base.mkdir(parents=True, exist_ok=True)
    archives = list(base.glob("*.tar.gz"))
    if not archives:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                            "--dest", str(base), f"{name}=={version}"], capture_output=True, text=True, timeout=600)
        archives = list(base.glob("*.tar.gz"))
        if r.returncode != 0 or not archives:
            raise SourceUnavailable(f"pip download {name}=={version} failed (is PyPI reachable?): {r.stderr.strip()[-400:]}")
    return archives[0]


def _extract(name: str, version: str, select: Callable[[str], bool]) -> pathlib.Path:
    base = CACHE / f"{name}-{version}"
    files = base / "files"
    done = base / ".extracted"
    if done.exists():
        return files
    archive = _download(name, version)
    files.mkdir(exist_ok=True)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        if len(members) > MEMBERS_MAX:
            raise SourceUnavailable(f"{archive.name}: {len(members)} members, more than {MEMBERS_MAX}")
        for m in members:
            if not m.isfile() or m.size > MEMBER_BYTES_MAX or not select(m.name):
                continue
            rel = pathlib.PurePosixPath(m.name)
            if rel.is_absolute() or ".." in rel.parts:
                continue
            out = files / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(m).read())
    done.touch()
    return files
