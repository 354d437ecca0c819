"""The optimized x86_64 build that the allocation tests measure (a debug build allocates in
unspecialized generic code and closure contexts, and proves nothing about the device's build).

`release_binary(product)` runs `swift build -c release --product PRODUCT`: from a clean clone that
compiles the release configuration of the modules (minutes on 2 cores), afterwards an incremental
build of seconds. BIKE_RELEASE_SCRATCH names the scratch path (scripts/test.sh builds both
products there in the background of `swift test`; while that build runs, SwiftPM's lock on the
scratch path makes this one wait for it, then find everything built)."""
import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
# The background build in CI starts ~10 min before the first test that needs it and is itself
# bounded (timeout 3600 in scripts/test.sh); a cold build alone takes ~5 min on 2 cores.
BUILD_TIMEOUT_S = 3600


def release_binary(product: str) -> pathlib.Path:
    scratch = os.environ.get("BIKE_RELEASE_SCRATCH")
    where = ["--scratch-path", scratch] if scratch else []
    try:
        r = subprocess.run(["swift", "build", "-c", "release", *where, "--product", product], cwd=REPO,
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"swift build -c release --product {product} did not finish within {BUILD_TIMEOUT_S} s"
                             + (f" (scratch path {scratch}: see .build/x86-release.log)" if scratch else "")) from None
    assert r.returncode == 0, (f"swift build -c release --product {product} failed"
                               + (f" (scratch path {scratch})" if scratch else "") + ":\n" + r.stdout[-3000:] + r.stderr[-3000:])
    out = subprocess.run(["swift", "build", "-c", "release", *where, "--show-bin-path"], cwd=REPO,
                         capture_output=True, text=True, check=True, timeout=300).stdout.strip()
    binary = pathlib.Path(out) / product
    assert binary.is_file(), f"{binary}: not built by swift build -c release --product {product}"
    return binary
