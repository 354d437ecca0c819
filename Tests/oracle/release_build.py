"""The optimized x86_64 build that the allocation tests measure (a debug build allocates in
unspecialized generic code and closure contexts, and proves nothing about the device's build).

`release_binary(product)` takes BIKE_BIN's PRODUCT when it is the release build (a release
directory, or named in its `release-products`: scripts/test.sh's .build/test-bin), else runs
`swift build -c release --product PRODUCT`: from a clean clone that
compiles the release configuration of the modules (a few minutes on 2 cores: in CI, inside the
first allocation test that needs it), afterwards an incremental build of seconds. Two pytest
workers asking at once are serialised by SwiftPM's own lock on .build; the second finds the
first's result. (Built instead in the background of `swift test`, in its own scratch path, it
cost `swift test` more than it saved here: stop 45, docs/testing.md "Timings".)"""
import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1800


def release_binary(product: str) -> pathlib.Path:
    given = os.environ.get("BIKE_BIN")
    if given:
        # scripts/test.sh's .build/test-bin names the programs it holds from the release build.
        marker = pathlib.Path(given) / "release-products"
        if marker.is_file() and product in marker.read_text().split():
            return pathlib.Path(given) / product
        if "release" in pathlib.Path(given).parts and (pathlib.Path(given) / product).is_file():
            return pathlib.Path(given) / product
    try:
        r = subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=REPO,
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"swift build -c release --product {product} did not finish within {BUILD_TIMEOUT_S} s") from None
    assert r.returncode == 0, f"swift build -c release --product {product} failed:\n" + r.stdout[-3000:] + r.stderr[-3000:]
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO,
                         capture_output=True, text=True, check=True, timeout=300).stdout.strip()
    binary = pathlib.Path(out) / product
    assert binary.is_file(), f"{binary}: not built by swift build -c release --product {product}"
    return binary
