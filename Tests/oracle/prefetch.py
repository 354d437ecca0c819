"""Fetches ahead what the oracle tests would otherwise fetch when they first need it, so that the
oracle stage of scripts/test.sh does not wait on apt or the network: scripts/test.sh runs this
in the background of the Swift build (docs/testing.md, "Timings").

- gpsd and gpsd-clients (apt) and gpsd's regression logs from its source package (gpsd_rig);
- the upstream tarballs of the Debian source packages the real recordings and gpsbabel's
  courses come from (debian_source, the suites test_real_recordings names);
- gpxpy's sdist from PyPI (pypi_sdist), whose test files the course tests import.

It calls the tests' own functions into their own caches under .build/, so a test finds the
result in place. Nothing here is needed: a test fetches what is missing itself, and fails with the
reason if it still cannot. One line per item with its time; exit status 1 if any failed.

    .venv/bin/python Tests/oracle/prefetch.py
"""
from __future__ import annotations

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import debian_source  # noqa: E402
import gpsd_rig  # noqa: E402
import pypi_sdist  # noqa: E402
from test_course_import import GPXPY  # noqa: E402
from test_real_recordings import SOURCES, SUITES  # noqa: E402


def debian_tarball(package: str) -> pathlib.Path:
    with debian_source.locked(debian_source.CACHE):  # as debian_source.extract holds it
        return debian_source.source_tarball(package, SUITES)


def main() -> int:
    items = [("gpsd (apt) and its regression logs", gpsd_rig.regression_logs)]
    for package in SOURCES:  # gpsbabel's courses (test_course_import) come from the same tarball
        items.append((f"Debian source {package}", lambda p=package: debian_tarball(p)))
    items.append((f"PyPI sdist {GPXPY[0]}=={GPXPY[1]}", lambda: pypi_sdist.download(*GPXPY)))
    failed = 0
    for what, fetch in items:
        started = time.monotonic()
        try:
            got = fetch()
            print(f"prefetch: {what}: {got} ({time.monotonic() - started:.0f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - reported; the test that needs it fetches again
            failed += 1
            print(f"prefetch: {what}: FAILED after {time.monotonic() - started:.0f} s: {e}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
