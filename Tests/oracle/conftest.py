"""Shared fixtures for the oracle tests: the built binaries and the shared fixtures."""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def bin_path() -> pathlib.Path:
    env = os.environ.get("BIKE_BIN")
    if env:
        return pathlib.Path(env)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, check=True)
    return pathlib.Path(out.stdout.strip())


@pytest.fixture(scope="session")
def bikecomputer() -> pathlib.Path:
    p = bin_path() / "bikecomputer"
    assert p.exists(), f"{p} not built: run swift build first"
    return p


@pytest.fixture(scope="session")
def bikesim() -> pathlib.Path:
    p = bin_path() / "bikesim"
    assert p.exists(), f"{p} not built: run swift build first"
    return p


@pytest.fixture(scope="session")
def shared() -> pathlib.Path:
    return SHARED
