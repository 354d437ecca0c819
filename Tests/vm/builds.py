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


@vmlib.serialised(per_arch=True)
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
    with vmlib.timed(f"downloading {' '.join(packages)}"):
        apt.download(packages, prefix / "debs")
        _unpack(prefix / "debs", prefix, arch)
    shutil.rmtree(prefix / "debs")
    if not (prefix / "lib" / "libgpiod.a").exists():
        raise VMUnavailable(f"no libgpiod.a in {packages}")
    (prefix / "ready").write_text(" ".join(packages))
    return prefix


@vmlib.serialised(per_arch=True)
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
    with vmlib.timed(f"building shim tests for {arch}, libgpiod v{api}"):
        sh(cmd, timeout=300)
    pathlib.Path(f"{out}.tmp").rename(out)
    return out


def swift_bin_path(scratch: pathlib.Path | None = None) -> pathlib.Path:
    cmd = ["swift", "build", "--show-bin-path"] + (["--scratch-path", str(scratch)] if scratch else [])
    return pathlib.Path(sh(cmd, cwd=REPO).stdout.strip())


@vmlib.serialised
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
        with vmlib.timed(f"swift build --product {p}"):
            sh(["swift", "build", "--product", p], cwd=REPO, timeout=3600)
    return swift_bin_path()


@vmlib.serialised
def swift_gpiod2_checks() -> pathlib.Path:
    """board-vm-checks built a second time, in .build-gpiod2, against libgpiod 2.x (header and
    static library from bookworm-backports): the v2 branch of the shim, compiled and linked.
    Returns the binary."""
    prefix = gpiod_prefix("amd64", 2)
    cmd = ["swift", "build", "--scratch-path", str(GPIOD2_SCRATCH), "--product", "board-vm-checks",
           "-Xcc", f"-I{prefix / 'include'}", "-Xlinker", f"-L{prefix / 'lib'}"]
    with vmlib.timed("swift build board-vm-checks against libgpiod 2 (.build-gpiod2)"):
        sh(cmd, cwd=REPO, timeout=3600)
    binary = swift_bin_path(GPIOD2_SCRATCH) / "board-vm-checks"
    # The binary must not need a shared libgpiod at run time (v2 is linked statically).
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    if "libgpiod" in ldd:
        raise VMUnavailable(f"{binary} links a shared libgpiod (the v1 one?):\n{ldd}")
    return binary


ARM64_RELEASE = REPO / ".build" / "release-arm64"


@vmlib.serialised
def arm64_release() -> pathlib.Path:
    """The board's release (static aarch64 bikecomputer, bikecompanion, bikesim and the Debian
    package) from `bash scripts/release-arm64.sh`, which builds only what changed. With
    BIKE_ARM64_RELEASE set (scripts/test.sh, which has just run it) that directory is used as it
    is."""
    import os
    if os.environ.get("BIKE_ARM64_RELEASE_ERROR"):
        raise VMUnavailable(os.environ["BIKE_ARM64_RELEASE_ERROR"])
    given = os.environ.get("BIKE_ARM64_RELEASE")
    if given:
        out = pathlib.Path(given)
    else:
        out = ARM64_RELEASE
        with vmlib.timed("bash scripts/release-arm64.sh (the aarch64 release; builds what changed)"):
            r = subprocess.run(["bash", "scripts/release-arm64.sh"], cwd=REPO, capture_output=True, text=True, timeout=5400)
        if r.returncode != 0:
            raise VMUnavailable(f"bash scripts/release-arm64.sh failed ({r.returncode}):\n{(r.stdout + r.stderr)[-4000:]}")
    missing = [p for p in ["bikecomputer", "bikecompanion", "bikesim"] if not (out / p).exists()]
    if missing or not list(out.glob("bikecomputer_*_arm64.deb")):
        raise VMUnavailable(f"{out} lacks {missing or 'the .deb'}: run bash scripts/release-arm64.sh")
    return out


def arm64_deb(release: pathlib.Path) -> pathlib.Path:
    debs = sorted(release.glob("bikecomputer_*_arm64.deb"))
    if len(debs) != 1:
        raise VMUnavailable(f"{release} has {len(debs)} bikecomputer_*_arm64.deb, not one: run bash scripts/release-arm64.sh")
    return debs[0]


@vmlib.serialised(per_arch=True)
def modules(k: vmlib.Kernel) -> list[pathlib.Path]:
    """The project's ssd1306-sim and memlcd-sim and upstream gpio-sim, built for the kernel."""
    return [vmlib.build_module(k, "Tests/vm/kmod/ssd1306-sim"), vmlib.gpio_sim_module(k),
            vmlib.build_module(k, "Tests/vm/kmod/memlcd-sim")]


# ------------------------------------------------------------------------------ ahead of the tests
# scripts/test.sh prepares the VM tests' inputs in the background while it builds and tests the
# Swift package (they take minutes on a clean machine: downloads, debootstrap, the install boot),
# then runs Tests/vm/run, which finds them cached. Stage "host" needs no Swift binary; stage
# "image" needs the built products (BIKE_BIN). Each step's failure is reported and the next goes
# on: the VM tests then fail with the reason when they need what is missing.

def prepare(stage: str) -> int:
    import sys
    import traceback
    import system

    def step(what: str, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported; the VM tests fail with it
            failed.append(what)
            vmlib.log(f"prepare: {what} failed: {e}")
            traceback.print_exc(file=sys.stderr)

    failed: list[str] = []
    started = __import__("time").monotonic()
    if stage == "host":
        k = {}
        step("the amd64 kernel", lambda: k.setdefault("amd64", vmlib.kernel("amd64")))
        # The system image's rootfs first: the longest step (debootstrap) and on the critical path.
        step("the system rootfs (debootstrap)", system.rootfs)
        step("the bridge's wheels for the guest", system.bridge_wheels)
        if "amd64" in k:
            step("the amd64 modules", modules, k["amd64"])
            step("the system initramfs", system.system_initramfs, k["amd64"])
        step("the C shim tests (amd64, v1)", shim_tests, "amd64", 1)
        step("the C shim tests (amd64, v2)", shim_tests, "amd64", 2)
        step("the arm64 kernel", lambda: k.setdefault("arm64", vmlib.kernel("arm64")))
        if "arm64" in k:
            step("the arm64 modules", modules, k["arm64"])
            step("busybox for arm64", vmlib.busybox_binary, vmlib.ARCHES["arm64"])
        step("the C shim tests (arm64, v1)", shim_tests, "arm64", 1)
        step("the C shim tests (arm64, v2)", shim_tests, "arm64", 2)
        step("libgpiod 2 (amd64) for the second board-vm-checks build", gpiod_prefix, "amd64", 2)
        step("the BLE test's host packages, btvirt and the bridge's venv", _prepare_ble)
    elif stage == "image":
        k = {"amd64": vmlib.kernel("amd64")}
        bin_dir = swift_products(["bikecomputer", "bikecompanion"])
        step("the installed system image (install.sh in a guest)", system.installed_image, k["amd64"], bin_dir, modules(k["amd64"]))
        step("board-vm-checks against libgpiod 2", swift_gpiod2_checks)
        # The arm64 Debian system needs no Swift binary, but its second stage (debootstrap under
        # qemu-aarch64-static, ~5.5 min) in stage host held `scripts/test.sh` for ~200 s after the
        # build (stop 34's CI); here it runs beside `swift test` and the oracle tests, and the
        # arm64 VM tests, which need it, run last.
        step("the arm64 kernel", lambda: k.setdefault("arm64", vmlib.kernel("arm64")))
        if "arm64" in k:
            step("the arm64 Debian system (debootstrap, its second stage under qemu-aarch64-static)", _arm64_system, k["arm64"])
    else:
        raise SystemExit(f"builds.py prepare: stage is host or image, not {stage}")
    vmlib.log(f"prepare {stage}: {'done' if not failed else 'FAILED: ' + ', '.join(failed)} in "
              f"{__import__('time').monotonic() - started:.0f} s")
    print(vmlib.timing_summary(json_name=f"timings-prepare-{stage}.json"), file=sys.stderr)
    return 1 if failed else 0


def _arm64_system(k: vmlib.Kernel) -> None:
    import arm64_system
    arm64_system.image(k, modules(k))


def _prepare_ble() -> None:
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "ble"))
    import btvirt
    import test_vm_ble
    with vmlib.cache_lock("ble"):
        vmlib.ensure_packages(test_vm_ble.HOST_PACKAGES)
        btvirt.build()
        test_vm_ble.bridge_venv()


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "prepare":
        raise SystemExit("usage: python3 Tests/vm/builds.py prepare host|image   (image: BIKE_BIN=the bin dir)")
    sys.exit(prepare(sys.argv[2]))
