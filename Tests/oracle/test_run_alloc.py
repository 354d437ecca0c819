"""Heap allocations per sensor frame in the real `bikecomputer run` process: a malloc/realloc
counter is interposed with LD_PRELOAD and reports its count on SIGUSR1. Two rates of the same
ride (1× and 4× the frames) are compared, so everything that does not depend on frames (the
1 Hz tick, the journal's group commit) cancels out.

As a test: frames from sensors that are not paired go through the whole board path (socket,
epoll, `BridgeLink`, frame parsing, the data source) and must not allocate. As a script, the
figures for paired sensors with and without the display (docs/performance.md):

    BIKE_BIN=.build/release python Tests/oracle/test_run_alloc.py
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from release_build import release_binary  # noqa: E402
from test_run import write_config  # noqa: E402
from test_run_latency import VaryingBridge  # noqa: E402

COUNTER_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
static unsigned long count = 0;
static void *(*real_malloc)(size_t) = 0;
static void *(*real_realloc)(void *, size_t) = 0;
void *malloc(size_t n) { if (!real_malloc) real_malloc = dlsym(RTLD_NEXT, "malloc"); count++; return real_malloc(n); }
void *realloc(void *p, size_t n) { if (!real_realloc) real_realloc = dlsym(RTLD_NEXT, "realloc"); count++; return real_realloc(p, n); }
static void report(int s) {
    char buf[48], tmp[24]; unsigned long c = count; int n = 13, k = 0;
    (void)s;
    do { tmp[k++] = '0' + c % 10; c /= 10; } while (c);
    memcpy(buf, "MALLOC_COUNT=", 13);
    while (k) buf[n++] = tmp[--k];
    buf[n++] = '\n';
    write(2, buf, n);
}
__attribute__((constructor)) static void init(void) {
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = report; sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, 0);
}
"""


def build_counter(directory: pathlib.Path) -> pathlib.Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("cannot run: no C compiler for the malloc counter (apt-get install gcc)")
    src = directory / "count.c"
    src.write_text(COUNTER_C)
    lib = directory / "libcount.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"], check=True)
    return lib


def allocations_per_frame(binary, run_dir: pathlib.Path, paired: bool, display: bool, window_s: float = 6.0) -> float:
    lib = build_counter(run_dir)
    cfg = write_config(run_dir)
    if not paired:
        text = cfg.read_text()
        cfg.write_text(text[:text.index("[[sensor]]")])
    err_path = run_dir / "alloc-stderr.log"
    err = open(err_path, "w")
    args = [str(binary), "run", "--no-buttons", "--data-dir", str(run_dir / "data"), "--config", str(cfg),
            "--ride-active-file", str(run_dir / "ride-active")]
    args += ["--measure-latency", "3600"] if display else ["--no-display"]
    proc = subprocess.Popen(args, stderr=err, stdout=subprocess.DEVNULL, env=dict(os.environ, LD_PRELOAD=str(lib)))
    bridge = VaryingBridge(run_dir / "bridge.sock")
    control = run_dir / "control.sock"

    def ctl(*w):
        return subprocess.run([str(binary), "ctl", "--socket", str(control), *w], capture_output=True, text=True, timeout=10)

    def count():
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        err.flush()
        return int(re.findall(r"MALLOC_COUNT=(\d+)", err_path.read_text())[-1]), bridge.frames_sent

    try:
        for _ in range(400):
            if control.exists():
                break
            time.sleep(0.05)
        bridge.start()
        ctl("start")
        time.sleep(4.5)
        ctl("page")
        time.sleep(2)
        windows = []
        for period in (0.25, 0.0625, 0.25, 0.0625):
            bridge.period_s = period
            time.sleep(0.6)
            c0, f0 = count()
            time.sleep(window_s)
            c1, f1 = count()
            windows.append((period, c1 - c0, f1 - f0))
    finally:
        bridge.stop()
        proc.kill()
        proc.wait(timeout=10)
        err.close()
    slow = [w for w in windows if w[0] == 0.25]
    fast = [w for w in windows if w[0] != 0.25]
    extra_allocs = sum(w[1] for w in fast) - sum(w[1] for w in slow)
    extra_frames = sum(w[2] for w in fast) - sum(w[2] for w in slow)
    assert extra_frames > 100, windows
    return extra_allocs / extra_frames


def optimized_binary(bikecomputer) -> pathlib.Path:
    """Allocation counts mean something only in an optimized build (a debug build allocates in
    unspecialized generic code): BIKE_BIN if it is a release build, else the package's release
    build, built (incrementally: the perf guard has built most of it already) when needed."""
    return release_binary("bikecomputer")


REPO = pathlib.Path(__file__).resolve().parents[2]


def test_the_board_transport_path_allocates_nothing_per_frame(bikecomputer):
    bikecomputer = optimized_binary(bikecomputer)
    run_dir = pathlib.Path(f"/tmp/bcalloc-{os.getpid()}")
    run_dir.mkdir(exist_ok=True)
    try:
        per_frame = allocations_per_frame(bikecomputer, run_dir, paired=False, display=False)
    finally:
        subprocess.run(["rm", "-rf", str(run_dir)])
    print(f"allocations per unpaired frame: {per_frame:.3f}")
    # Socket receive, epoll dispatch, BridgeLink, frame parsing, the data source: no allocation.
    # (A few allocations anywhere in a window would still pass: < 0.05 per frame.)
    assert per_frame < 0.05


if __name__ == "__main__":
    binary = pathlib.Path(os.environ.get("BIKE_BIN", ".build/release")) / "bikecomputer"
    for paired, display in ((False, False), (True, False), (True, True)):
        d = pathlib.Path(f"/tmp/bcalloc-{os.getpid()}-{int(paired)}{int(display)}")
        d.mkdir(exist_ok=True)
        try:
            r = allocations_per_frame(binary, d, paired, display, window_s=10.0)
        finally:
            subprocess.run(["rm", "-rf", str(d)])
        print(f"paired={paired} display={display}: {r:.2f} allocations per frame")
