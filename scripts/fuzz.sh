#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of outside input (docs/testing.md, "Fuzzing"): libFuzzer
# through Swift's -sanitize=fuzzer, one target per parser (Tests/Fuzz/FuzzTargets: bridge frames,
# serial bridge bytes, gpsd reports, FIT files, config TOML, course files: GPX, TCX, FIT course).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]   each target for SECONDS (default 60), all by default
#   bash scripts/fuzz.sh --merge [TARGET...]     fold what the runs found into the committed corpus
#
# The committed corpus (Tests/Fuzz/Corpus/TARGET) is read, never written: new inputs go to
# .build/fuzz/corpus/TARGET, crashes to .build/fuzz/crashes/ (the run fails, naming them; copy a
# crash into the corpus as its regression test once fixed: `swift test --filter FuzzCorpusTests`
# replays every corpus file). Figures (executions, coverage) are printed per target and appended
# to .build/fuzz/summary.tsv. CI (scripts/test.sh) runs every target for BIKE_FUZZ_SECONDS (30),
# beside the oracle tests at nice 10.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build/fuzz
merge=false
seconds=60
if [ "${1:-}" = "--merge" ]; then merge=true; shift; elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi

echo "fuzz.sh: building bikefuzz with -sanitize=fuzzer (scratch path $scratch)"
# libFuzzer's runtime brings a `main` and SwiftPM links the executable's own: both run the same
# driver (Tests/Fuzz/bikefuzz/BikeFuzz.swift), hence --allow-multiple-definition.
flags=(-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xlinker --allow-multiple-definition)
swift build --scratch-path "$scratch" --product bikefuzz "${flags[@]}" 2>&1 | tail -n 3
bin="$(swift build --scratch-path "$scratch" "${flags[@]}" --show-bin-path)/bikefuzz"
[ -x "$bin" ] || { echo "fuzz.sh: $bin was not built" >&2; exit 1; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(grep -oE 'FuzzTarget\(name: "[a-z0-9-]+"' Tests/Fuzz/FuzzTargets/FuzzTargets.swift | cut -d'"' -f2)
mkdir -p "$scratch/crashes"
# Targets run BIKE_FUZZ_JOBS at a time (default: the CPUs; libFuzzer runs one thread), each for
# SECONDS: the same executions per target as one at a time, in less wall time.
jobs=${BIKE_FUZZ_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: BIKE_FUZZ_JOBS=$jobs: a count of at least 1" >&2; exit 2; }

fuzz_one() {  # fuzz_one TARGET: its run into $scratch/TARGET.log, its exit status into $scratch/TARGET.rc
    local t=$1 rc
    mkdir -p "$scratch/corpus/$t" "Tests/Fuzz/Corpus/$t"
    set +e
    BIKEFUZZ_TARGET=$t "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$scratch/crashes/$t-" "$scratch/corpus/$t" "Tests/Fuzz/Corpus/$t" > "$scratch/$t.log" 2>&1
    rc=$?
    set -e
    echo "$rc" > "$scratch/$t.rc"
}

report() {  # report TARGET: its figures (printed, appended to summary.tsv); fails on a crash
    local t=$1 log=$scratch/$1.log rc runs cov
    rc=$(cat "$scratch/$t.rc" 2>/dev/null || echo "?")
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -oE "cov: [0-9]+" "$log" | tail -n 1 | cut -d' ' -f2)
    printf '%s\t%s\t%s s\t%s executions\tcoverage %s\texit %s\n' "$(date -u +%FT%TZ)" "$t" "$seconds" "${runs:-?}" "${cov:-?}" "$rc" | tee -a "$scratch/summary.tsv"
    if [ "$rc" != 0 ]; then
        echo "fuzz.sh: $t FAILED (exit $rc): see $log; crash inputs:" >&2
        ls "$scratch/crashes/$t-"* >&2 2>/dev/null || true
        grep -E "Fatal error|precondition|ERROR:|SUMMARY" "$log" | head -n 8 >&2 || true
        return 1
    fi
}

status=0
if $merge; then
    for t in "${targets[@]}"; do
        mkdir -p "$scratch/corpus/$t" "Tests/Fuzz/Corpus/$t"
        BIKEFUZZ_TARGET=$t "$bin" -merge=1 "Tests/Fuzz/Corpus/$t" "$scratch/corpus/$t" 2>&1 | grep -E "MERGE-OUTER: [0-9]+ new files" || true
    done
    exit 0
fi
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    for t in "${batch[@]}"; do rm -f "$scratch/$t.rc"; fuzz_one "$t" & done
    wait
    for t in "${batch[@]}"; do report "$t" || status=1; done
done
exit $status
