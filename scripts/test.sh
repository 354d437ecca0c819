#!/usr/bin/env bash
# The test command (README): installs what the tests need, then runs every test.
#   - Swift 6.1 or later on PATH (checked first), python3.
#   - Debian packages: libgpiod-dev, libi2c-dev (board adapters), dosfstools, mtools (USB image),
#     python3-venv, tmux (terminal demo test), libjs-chart.js (companion charts); installed with apt-get when running as root, otherwise named and we stop.
#   - A Python venv in .venv with the independent oracle decoders (Tests/oracle/requirements.txt).
#   - swift build, swift test, then the oracle tests (pytest) against the built binaries.
set -euo pipefail
cd "$(dirname "$0")/.."

# The toolchain first: nothing is installed for a build that cannot run. Package.swift says
# swift-tools-version 6.1.
command -v swift >/dev/null || { echo "test.sh: no swift on PATH: install the Swift 6.1+ toolchain (swift.org/install/linux) and put its usr/bin on PATH" >&2; exit 1; }
swift_version=$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
case "$swift_version" in
    "" | [0-5].* | 6.0) echo "test.sh: Swift ${swift_version:-of unknown version} found; this package needs Swift 6.1 or later: install it from swift.org/install/linux" >&2; exit 1 ;;
esac
command -v python3 >/dev/null || { echo "test.sh: no python3: sudo apt-get install python3 python3-venv" >&2; exit 1; }

# tmux: the terminal demo's test; libjs-chart.js: the companion page's charts.
apt_packages=(libgpiod-dev libi2c-dev dosfstools mtools python3-venv tmux libjs-chart.js)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "test.sh: installing Debian packages: ${missing[*]}"
        apt-get update -qq >/dev/null || { echo "test.sh: apt-get update failed" >&2; exit 1; }
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null \
            || { echo "test.sh: could not install ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2; exit 1; }
    elif ! command -v apt-get >/dev/null; then
        echo "test.sh: missing packages (Debian names): ${missing[*]}; no apt-get here: install their equivalents with this system's package manager" >&2
        exit 1
    else
        echo "test.sh: missing Debian packages: ${missing[*]}" >&2
        echo "         install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi


# Oracle tools in a venv (created once, refreshed when requirements change).
req=Tests/oracle/requirements.txt
if [ ! -x .venv/bin/python ] || ! cmp -s "$req" .venv/requirements.installed; then
    echo "test.sh: setting up the Python venv for the oracle tools (.venv)"
    python3 -m venv .venv || { echo "test.sh: python3 -m venv failed: sudo apt-get install python3-venv" >&2; exit 1; }
    .venv/bin/pip install -q --upgrade pip >/dev/null
    .venv/bin/pip install -q -r "$req"
    cp "$req" .venv/requirements.installed
fi

# --- Fetched ahead, in the background of the build (a session of its own; the oracle stage waits
# for it): Chromium for the companion's browser test (that test fails, saying so, without it), and
# what the oracle tests otherwise fetch on first use (Tests/oracle/prefetch.py: gpsd from apt and
# its regression logs, Debian source tarballs, an sdist). In the CI of 3191afc (stop 50) they cost
# the stage before the build 16 s (Chromium) and the oracle stage ~70 s (the gpsd tests' set-up). A
# failure here only costs time: a test fetches what is missing itself. Log: .build/prefetch.log.
mkdir -p .build
prefetch() {
    if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "test.sh: installing chromium for the companion's browser test"
        local apt=(apt-get -o DPkg::Lock::Timeout=900)
        # Without its recommends (17 packages, not 95: 9.7 s and 13 CPU-s against 15.8 s and 19,
        # the downloads cached), with which the browser test passes the same.
        local install=(install -y -qq --no-install-recommends chromium)
        { DEBIAN_FRONTEND=noninteractive "${apt[@]}" "${install[@]}" \
            || { "${apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${apt[@]}" "${install[@]}"; }; } >/dev/null 2>&1 \
            || echo "test.sh: could not install chromium; the companion browser test will fail (install it: sudo apt-get install chromium)"
    fi
    .venv/bin/python Tests/oracle/prefetch.py
}
PREFETCH_TIMEOUT_S=1800
setsid timeout "$PREFETCH_TIMEOUT_S" bash -c "$(declare -f prefetch); prefetch" < /dev/null > .build/prefetch.log 2>&1 &
prefetch_pid=$!
trap '[ -z "$prefetch_pid" ] || kill -- -"$prefetch_pid" 2>/dev/null || true' EXIT  # the whole trap below
prefetch_wait() {
    local status=0 waited=$SECONDS
    wait "$prefetch_pid" || status=$?
    echo "test.sh: fetched ahead (chromium, Tests/oracle/prefetch.py): status $status$([ "$status" = 124 ] && echo " (timed out after $PREFETCH_TIMEOUT_S s)"), waited for it $((SECONDS - waited)) s (log: .build/prefetch.log):"
    sed 's/^/    /' .build/prefetch.log
    prefetch_pid=
}

# Each stage's wall time and how busy the machine's CPUs were during it (all processes, the
# background builds included, from /proc/stat): where CI's time goes (docs/testing.md "Timings").
stage_name= stage_at=0 stage_busy=0 stage_total=0
cpu_ticks() { awk '/^cpu /{ busy = $2 + $3 + $4 + $7 + $8; print busy, busy + $5 + $6 }' /proc/stat; }
stage() {  # stage "NAME": ends the previous stage (its line), starts NAME; no argument: ends it
    local now busy total
    now=$SECONDS
    read -r busy total < <(cpu_ticks)
    if [ -n "$stage_name" ] && [ "$total" -gt "$stage_total" ]; then
        echo "test.sh: [stage] $stage_name: $((now - stage_at)) s, CPUs $(( 100 * (busy - stage_busy) / (total - stage_total) ))% busy ($(nproc) CPUs)"
    fi
    stage_name=${1:-} stage_at=$now stage_busy=$busy stage_total=$total
    [ -z "$stage_name" ] || echo "test.sh: $stage_name"
}

echo "test.sh: module graph (Package.swift = the imports = the module headers)"
python3 scripts/check-imports.py || { echo "test.sh: scripts/check-imports.py failed: fix Package.swift or the imports (docs/architecture.md)" >&2; exit 1; }

# --- The VM tests' inputs, prepared in the background while the Swift package builds and its
# tests run (docs/testing.md, "Timings"): Debian's kernels, the modules, debootstrap's root file
# system, the C shim tests and the BLE rig first (stage host); once the release build is done, the
# installed system image (board/install.sh of .build/test-bin booted in a guest), the libgpiod 2
# build and the arm64 system (stage image). Tests/vm/run below finds them cached; a step that
# failed here fails the VM test that needs it, with the reason. Logs: .build/vm-prepare-{host,image}.log.
#
# Each background job runs in a session of its own (setsid: the trap below kills it by its process
# group). Linux's autogroup scheduling (sched_autogroup_enabled: on here, and by default on
# Debian's kernels) shares the CPUs fairly between sessions, whatever a process's nice: so the
# cross build's "nice 10" below gives it an equal share beside this script's session, not a small
# one. Tried in stop 46 and not kept: the cross build and the arm64 system at a low priority
# (their sessions' autogroup at nice 10). `swift test` then took 412 s (629 s) and the oracle
# stage 514 s (667 s), but the deferred work ran beside the VM guests, whose TCG work it slowed
# by more than it gained (the amd64 guests 2,159 guest-s against 1,707, their stage 834 s against
# 677 s; the arm64 stage 600 s): 3,036 s in all against stop 45's 2,893 s, though on a slower
# day (docs/testing.md, "Timings": not yet a same-day comparison).
VM_PREPARE_TIMEOUT_S=3600
vm_prepare() {  # vm_prepare STAGE [BIKE_BIN]: runs in the background, in a session of its own
    BIKE_BIN="${2:-}" setsid timeout "$VM_PREPARE_TIMEOUT_S" .venv/bin/python Tests/vm/builds.py prepare "$1" \
        < /dev/null > ".build/vm-prepare-$1.log" 2>&1 &
    vm_prepare_pid=$!
    vm_prepare_stage=$1
}
vm_prepare_wait() {
    local status=0 vm_prepare_waited=$SECONDS
    wait "$vm_prepare_pid" || status=$?
    echo "test.sh: VM preparation ($vm_prepare_stage): status $status$([ "$status" = 124 ] && echo " (timed out after $VM_PREPARE_TIMEOUT_S s)"), waited for it $((SECONDS - vm_prepare_waited)) s;" \
         "$(grep -o "prepare $vm_prepare_stage: .*" ".build/vm-prepare-$vm_prepare_stage.log" | tail -n 1) (log: .build/vm-prepare-$vm_prepare_stage.log)"
    [ "$status" = 0 ] || tail -n 30 ".build/vm-prepare-$vm_prepare_stage.log" >&2
    vm_prepare_pid=
}
vm_prepare_pid=
# --- The board's release (issue 26, docs/releasing.md): the aarch64 executables and the Debian
# package from Debian's Swift in a sid chroot (scripts/release-arm64.sh, cached under .build/arm64).
# Its chroot, sysroot and downloads are prepared in the background of the x86 build; the cross
# build runs in the background of the tests once the x86 build is done; the VM tests use it.
# Each stage is bounded (timeout) and says what it waited for. Logs: .build/arm64-{prepare,release}.log.
arm64_pid=
arm64_stage=
arm64_start() {  # arm64_start STAGE TIMEOUT_S [ARGS]: release-arm64.sh in the background, in a session of its own
    arm64_stage=$1
    # nice: within its session (see above), for its own processes' order only.
    setsid nice -n 10 timeout "$2" bash scripts/release-arm64.sh ${3:-} < /dev/null > ".build/arm64-$1.log" 2>&1 &
    arm64_pid=$!
}
arm64_wait() {
    local status=0 waited=$SECONDS
    wait "$arm64_pid" || status=$?
    echo "test.sh: the arm64 release ($arm64_stage): status $status$([ "$status" = 124 ] && echo ' (timed out)'), waited for it" \
         "$((SECONDS - waited)) s; $(grep -E 'release-arm64: (\[|error)' ".build/arm64-$arm64_stage.log" | tail -n 1) (log: .build/arm64-$arm64_stage.log)"
    if [ "$status" != 0 ]; then
        tail -n 30 ".build/arm64-$arm64_stage.log" >&2
        # The VM tests that need the release fail with this, instead of building it again.
        export BIKE_ARM64_RELEASE_ERROR="bash scripts/release-arm64.sh ($arm64_stage) failed in scripts/test.sh with status $status: $(grep 'release-arm64: error' ".build/arm64-$arm64_stage.log" | tail -n 1) (log: .build/arm64-$arm64_stage.log)"
    fi
    arm64_pid=
    return "$status"
}
trap 'for g in "$vm_prepare_pid" "$arm64_pid" "$prefetch_pid"; do [ -z "$g" ] || kill -- -"$g" 2>/dev/null || true; done' EXIT
vm_prepare host
if [ "$(id -u)" = 0 ] && [ "$(uname -m)" = x86_64 ]; then
    arm64_start prepare 3600 prepare
else
    export BIKE_ARM64_RELEASE_ERROR="the arm64 release needs root on x86_64 (debootstrap, chroot): run scripts/test.sh as root"
    echo "test.sh: $BIKE_ARM64_RELEASE_ERROR; its VM tests will fail with this reason" >&2
fi

stage "building"
swift build 2>&1 | tail -n 3
vm_prepare_wait
arm64_ok=no
if [ -n "$arm64_pid" ]; then
    arm64_wait && arm64_start release 5400 && arm64_ok=started
fi

stage "the release build"
# The programs the oracle and VM tests run, in .build/test-bin (BIKE_BIN): the optimized build
# (swift build -c release) of those that replay and run rides, as the board's is; the debug build
# of the companion (its release build, SwiftNIO's, costs 250 CPU-s more; CPU is what bounds CI)
# and of the VM tests' own tools (board-vm-checks, screen-oracle). The allocation tests needed
# the release build already (240 CPU-s); on it the oracle suite took ~215 CPU-s against the debug
# build's 440 (stop 46), and the VM guests, which run `bikecomputer` under TCG, less too (stop 48,
# docs/testing.md "Timings"). It is built here, before `swift test`, because the installed
# system image (stage image, in the background of the tests) is made from it.
release_products=(bikecomputer bikesim bikebench journal-bench bikefuzz)
for p in "${release_products[@]}"; do
    swift build -c release --product "$p" > .build/release-build.log 2>&1 || {
        tail -n 40 .build/release-build.log >&2
        echo "test.sh: swift build -c release --product $p failed (log: .build/release-build.log)" >&2
        exit 1
    }
done
# Hard links, not symbolic ones: `bikecomputer companion` runs the bikecompanion beside its own
# /proc/self/exe, which a symbolic link resolves into the release directory. release-products
# names the release build's programs (Tests/oracle/release_build.py finds them there).
test_bin="$PWD/.build/test-bin"
rm -rf "$test_bin"
mkdir -p "$test_bin"
release_bin="$(swift build -c release --show-bin-path)"
debug_bin="$(swift build --show-bin-path)"
for p in "${release_products[@]}"; do
    ln "$release_bin/$p" "$test_bin/$p"
done
for p in bikecompanion board-vm-checks screen-oracle; do
    ln "$debug_bin/$p" "$test_bin/$p"
done
echo "${release_products[*]}" > "$test_bin/release-products"
echo "test.sh: .build/test-bin holds the release build of $(cat "$test_bin/release-products") and the debug build of bikecompanion, board-vm-checks and screen-oracle"
vm_prepare image "$test_bin"
stage "swift test"
swift test 2>&1 | tee .build/swift-test.log | grep -E "error:|✘|Test run with|Executed [0-9]+ tests" || true
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo "test.sh: swift test failed (full log: .build/swift-test.log)" >&2
    grep -E "error|failed|✘" .build/swift-test.log | head -n 60 >&2 || true
    exit "$status"
fi

stage "oracle tests (pytest), on the release build, beside the same answers on both CPUs, the fuzzing and the bridge tests"
# The same answers on both CPUs (Tests/vm/test_arm64_same_answers.py: the aarch64 bikesim under
# qemu-user beside the x86_64 one, no guest, no timing) needs the arm64 release, done by now in CI
# (stop 47's: 8 s before this stage's tests began). It ran alone between the amd64 and the arm64
# guests: 60 s of one busy core out of two. Here it takes CPU the oracle tests leave idle (the
# stage was 75 % busy), at nice 10 in this session, so that their timing tests keep the CPUs
# they need. (Beside the arm64 guests at a low priority, stop 46, it had slowed them.)
prefetch_wait
if [ "$arm64_ok" = started ] && arm64_wait; then
    export BIKE_ARM64_RELEASE="$PWD/.build/release-arm64"
fi
same_answers=Tests/vm/test_arm64_same_answers.py
BIKE_BIN="$test_bin" nice -n 10 .venv/bin/python -m pytest -q -p no:cacheprovider -rA "$same_answers" > .build/vm-same-answers.log 2>&1 &
same_answers_pid=$!
# --- Coverage-guided fuzzing (docs/testing.md, "Fuzzing", issue 27): libFuzzer on every parser of
# outside input, BIKE_FUZZ_SECONDS each from the committed corpus; a crash fails the run. Its
# build (bikefuzz with -sanitize=fuzzer, .build/fuzz), then the targets two at a time, at nice 10
# beside the oracle tests (stop 49): in a stage of their own they kept the 2 CPUs busy for 122 s
# of CI (20 s a target) while the oracle stage left 46 % of them idle (stop 48's CI). A time-boxed
# fuzzer at a low priority tries fewer inputs when the oracle tests want the CPUs: at 30 s a
# target here, stop 49's CI counted 31-57 % of the executions of 20 s in a stage of their own
# (bridge frames 124,642 against 235,858; TOML 11,356 against 36,028), the coverage within 2 %,
# and the fuzzing was done ~160 s before the oracle tests. At 45 s (the CI of 3191afc) it ended
# with them, 0 s after; with the oracle tests' fetching moved ahead (stop 50) their stage is shorter, so
# 30 s. CI's log prints each target's executions (docs/testing.md, "Timings", "Stop 49", "Stop 50").
nice -n 10 bash scripts/fuzz.sh "${BIKE_FUZZ_SECONDS:-30}" < /dev/null > .build/fuzz.log 2>&1 &
fuzz_pid=$!
# --- The sensor bridge's own tests (board/bridge/tests: framing, replay, faked radios).
# The installed system around it (board/install.sh, the units, power cuts, storage faults, the
# clock) is tested in the VM below (Tests/vm/test_vm_system.py and the rest of issue 17's files).
# They mostly wait on sockets and timeouts (29 s at 6 % of the CPUs), at this session's own
# priority, so that their timeouts keep the CPU they need.
.venv/bin/python -m pytest -q -p no:cacheprovider board/bridge/tests > .build/bridge-tests.log 2>&1 &
bridge_pid=$!
# In BIKE_ORACLE_WORKERS (2) workers, each test file in one (its module fixtures are its own): on
# its own the suite kept 2 CPUs 41 % busy (905 s); in two, 60-70 % (404 s warm, 556 s with the x86
# release build cold). Three were faster alone (386 s) but not in CI, where the arm64 cross build
# shares the CPUs (stop 44: 687 s at 94 % against two workers' 630 s at 84 %, and the arm64
# release 222 s later). Ports, run directories and the caches it fills (debian-src, pypi-sdist,
# SwiftPM's release build) are safe to share. The release build is .build/test-bin (above).
oracle_status=0
BIKE_BIN="$test_bin" .venv/bin/python -m pytest -q -n "${BIKE_ORACLE_WORKERS:-2}" --dist loadfile --durations=15 Tests/oracle || oracle_status=$?
oracle_done=$SECONDS
same_answers_status=0
wait "$same_answers_pid" || same_answers_status=$?
echo "test.sh: $same_answers beside the oracle tests: status $same_answers_status (log: .build/vm-same-answers.log):"
grep -E "passed|failed|error" .build/vm-same-answers.log | tail -n 3 || true
[ "$same_answers_status" = 0 ] || tail -n 40 .build/vm-same-answers.log >&2
bridge_status=0
wait "$bridge_pid" || bridge_status=$?
echo "test.sh: bridge tests (log: .build/bridge-tests.log):"
tail -n 15 .build/bridge-tests.log
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
echo "test.sh: the fuzzing (scripts/fuzz.sh, ${BIKE_FUZZ_SECONDS:-30} s a target) beside the oracle tests: status $fuzz_status, done $((SECONDS - oracle_done)) s after them (log: .build/fuzz.log):"
grep -vE "^\[[0-9]+/[0-9]+\]" .build/fuzz.log | tail -n 20
[ "$oracle_status" = 0 ] || exit "$oracle_status"
[ "$bridge_status" = 0 ] || { echo "test.sh: the bridge tests failed (status $bridge_status): .build/bridge-tests.log" >&2; exit "$bridge_status"; }
[ "$fuzz_status" = 0 ] || { echo "test.sh: the fuzzing failed (status $fuzz_status; log: .build/fuzz.log)" >&2; exit "$fuzz_status"; }

# --- The board on a real kernel (docs/testing.md): Debian's own kernel booted in QEMU (TCG)
# with the project's simulated SSD1306, i2c-stub and gpio-sim; BoardHardware and the C shims
# against libgpiod v1 and v2, `bikecomputer run` end to end, the shims on arm64. Installs what
# it needs (qemu, busybox-static, kernel headers, the arm64 cross compiler), caches under
# .build/vm and .build-gpiod2, and fails with the reason when it cannot run.
vm_prepare_wait
# The arm64 guests (the aarch64 release on Debian's arm64 kernel, the package) run after the
# others, in their own pytest. (Run beside them, one pytest each, the two sets of guests loaded the
# 2-core machine to 8 and the timing bounds of the amd64 tests failed: stop 34.) The same answers
# on both CPUs ran beside the oracle tests (above); its status counts here.
arm64_tests="arm64 or package"
stage "VM tests (Tests/vm/run), the arm64 ones (-k '$arm64_tests') last"
vm_started=$SECONDS
vm_status=0
BIKE_BIN="$test_bin" bash Tests/vm/run --deselect "$same_answers" -k "not ($arm64_tests)" || vm_status=$?
echo "test.sh: the VM tests but the arm64 ones took $((SECONDS - vm_started)) s (status $vm_status)"
arm64_started=$SECONDS
arm64_vm_status=0
BIKE_BIN="$test_bin" bash Tests/vm/run --deselect "$same_answers" -k "$arm64_tests" || arm64_vm_status=$?
echo "test.sh: the arm64 VM tests took $((SECONDS - arm64_started)) s (status $arm64_vm_status)"
echo "test.sh: VM tests took $((SECONDS - vm_started)) s"
stage
[ "$vm_status" = 0 ] && [ "$arm64_vm_status" = 0 ] && [ "$same_answers_status" = 0 ] || exit 1
