"""What the VM tests run in the guest, built on the host (cached under .build/vm/ and
.build-gpiod2/): the Swift products (libgpiod v1 = Debian 12's, and a second build against
libgpiod 2.x from bookworm-backports), the C shim tests for amd64 and arm64 against both
libgpiod APIs, and the kernel modules. docs/testing.md."""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import vmlib
from vmlib import CACHE, REPO, VMUnavailable, sh

GPIOD2_SCRATCH = REPO / ".build-gpiod2"
TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}


def _unpack(debs_dir: pathlib.Path, prefix: pathlib.Path, arch: str) -> None:
    """Keeps the headers and static libraries of the downloaded -dev packages in a flat prefix
    (include/, lib/ with .a only, so the linker cannot pick up a shared libgpiod instead)."""
    staging = prefix / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    for deb in debs_dir.glob("*.deb"):
        sh(["dpkg-deb", "-x", str(deb), str(staging)])
    (prefix / "include").mkdir(parents=True, exist_ok=True)
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    shutil.copytree(staging / "usr" / "include", prefix / "include", dirs_exist_ok=True)
    for a in (staging / "usr" / "lib" / TRIPLETS[arch]).glob("*.a"):
        shutil.copy(a, prefix / "lib" / a.name)
    shutil.rmtree(staging)


def backports_gpiod2_version(arch: str) -> str:
    policy = vmlib.private_apt().query("policy", f"libgpiod-dev:{arch}")
    versions = re.findall(r"^\s+(?:\*\*\* )?(2\.[^\s]+) \d+", policy, re.M)
    if not versions:
        raise VMUnavailable(f"no libgpiod-dev 2.x for {arch} in bookworm-backports:\n{policy}")
    return versions[0]


def gpiod_prefix(arch: str, api: int) -> pathlib.Path:
    """include/ + lib/ with gpiod.h and libgpiod.a of the requested API (v2: bookworm-backports'
    libgpiod-dev 2.x; arm64 v1: Debian's arm64 libgpiod-dev 1.6) and, for arm64, libi2c."""
    if arch == "amd64" and api == 1:
        vmlib.ensure_packages(["libgpiod-dev", "libi2c-dev"])
        return pathlib.Path("/usr")
    prefix = CACHE / "gpiod" / arch / f"v{api}"
    if (prefix / "ready").exists():
        return prefix
    shutil.rmtree(prefix, ignore_errors=True)
    apt = vmlib.private_apt()
    packages = []
    if api == 2:
        version = backports_gpiod2_version(arch)
        packages.append(f"libgpiod-dev:{arch}={version}")
    else:
        packages.append(f"libgpiod-dev:{arch}=" + re.search(r"(1\.6[^\s]*) 500", apt.query("policy", f"libgpiod-dev:{arch}")).group(1))
    if arch == "arm64":
        packages.append("libi2c-dev:arm64")
    vmlib.log(f"downloading {' '.join(packages)}")
    apt.download(packages, prefix / "debs")
    _unpack(prefix / "debs", prefix, arch)
    shutil.rmtree(prefix / "debs")
    if not (prefix / "lib" / "libgpiod.a").exists():
        raise VMUnavailable(f"no libgpiod.a in {packages}")
    (prefix / "ready").write_text(" ".join(packages))
    return prefix


def shim_tests(arch: str, api: int) -> pathlib.Path:
    """Tests/vm/shimtests/shim_tests.c with both C shims, static, for `arch` against libgpiod
    `api` (1 or 2) and libi2c."""
    prefix = gpiod_prefix(arch, api)
    sources = [REPO / "Sources/CGpiodShim/shim.c", REPO / "Sources/CI2CShim/shim.c", REPO / "Tests/vm/shimtests/shim_tests.c",
               REPO / "Sources/CGpiodShim/include/CGpiodShim.h", REPO / "Sources/CI2CShim/include/CI2CShim.h"]
    digest = vmlib.file_hash(*sources, extra=f"{arch} {api} {prefix}")
    out = CACHE / "shimtests" / f"shim_tests-{arch}-v{api}-{digest}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cc = "gcc" if arch == "amd64" else "aarch64-linux-gnu-gcc"
    includes = ["-I", str(REPO / "Sources/CGpiodShim/include"), "-I", str(REPO / "Sources/CI2CShim/include")]
    libs = ["-Wl,-Bstatic", "-lgpiod", "-li2c"]
    if prefix != pathlib.Path("/usr"):
        includes += ["-I", str(prefix / "include")]
        libs = ["-L", str(prefix / "lib"), *libs]
    cmd = [cc, "-static", "-O1", "-Wall", "-D_GNU_SOURCE", *includes, *[str(s) for s in sources[:3]], *libs, "-o", f"{out}.tmp"]
    vmlib.log(f"building shim tests for {arch}, libgpiod v{api}")
    sh(cmd, timeout=300)
    pathlib.Path(f"{out}.tmp").rename(out)
    return out


def swift_bin_path(scratch: pathlib.Path | None = None) -> pathlib.Path:
    cmd = ["swift", "build", "--show-bin-path"] + (["--scratch-path", str(scratch)] if scratch else [])
    return pathlib.Path(sh(cmd, cwd=REPO).stdout.strip())


def swift_products(products: list[str]) -> pathlib.Path:
    """Builds the products (debug, the default scratch path, Debian's libgpiod 1.6) and
    returns the bin directory. With BIKE_BIN set (scripts/test.sh, which has just built
    everything) the binaries there are used as they are."""
    import os
    given = os.environ.get("BIKE_BIN")
    if given:
        missing = [p for p in products if not (pathlib.Path(given) / p).exists()]
        if missing:
            raise VMUnavailable(f"BIKE_BIN={given} lacks {missing}: run `swift build` first")
        return pathlib.Path(given)
    if not shutil.which("swift"):
        raise VMUnavailable("no swift on PATH")
    for p in products:
        sh(["swift", "build", "--product", p], cwd=REPO, timeout=3600)
    return swift_bin_path()


def swift_gpiod2_checks() -> pathlib.Path:
    """board-vm-checks built a second time, in .build-gpiod2, against libgpiod 2.x (header and
    static library from bookworm-backports): the v2 branch of the shim, compiled and linked.
    Returns the binary."""
    prefix = gpiod_prefix("amd64", 2)
    cmd = ["swift", "build", "--scratch-path", str(GPIOD2_SCRATCH), "--product", "board-vm-checks",
           "-Xcc", f"-I{prefix / 'include'}", "-Xlinker", f"-L{prefix / 'lib'}"]
    vmlib.log("building board-vm-checks against libgpiod 2 (.build-gpiod2)")
    sh(cmd, cwd=REPO, timeout=3600)
    binary = swift_bin_path(GPIOD2_SCRATCH) / "board-vm-checks"
    # The binary must not need a shared libgpiod at run time (v2 is linked statically).
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    if "libgpiod" in ldd:
        raise VMUnavailable(f"{binary} links a shared libgpiod (the v1 one?):\n{ldd}")
    return binary


def modules(k: vmlib.Kernel) -> list[pathlib.Path]:
    """The project's ssd1306-sim and upstream gpio-sim, built for the kernel."""
    return [vmlib.build_module(k, "Tests/vm/kmod/ssd1306-sim"), vmlib.gpio_sim_module(k)]
