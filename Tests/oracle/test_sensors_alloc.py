"""No heap allocation per sensor frame: the Sensors sources (with the RideModel files they use)
are compiled -O into a small driver that runs 800 000 frames (good and bad ones, rear radars'
ANT+ pages and Varia notifications among them) through
BridgeFrame.parse and DataSource.handle. A malloc counter interposed with LD_PRELOAD must read the
same before and after the loop."""
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

COUNTER_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
unsigned long bench_malloc_count = 0;
static void *(*real_malloc)(size_t) = 0;
void *malloc(size_t n) {
    if (!real_malloc) real_malloc = dlsym(RTLD_NEXT, "malloc");
    bench_malloc_count++;
    return real_malloc(n);
}
"""

DRIVER = r"""
import Glibc
func bench() {
let hrm = SourceIdentity.ant(deviceNumber: 1, deviceType: 120, transmissionType: 1)
let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)
let csc = SourceIdentity.ant(deviceNumber: 2, deviceType: 121, transmissionType: 1)
let antRadar = SourceIdentity.ant(deviceNumber: 3, deviceType: 40, transmissionType: 5)
let varia = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:33:44")!)
var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(hrm), PairedSensor(csc, priority: 1),
                                                      PairedSensor(pm, provides: .all), PairedSensor(antRadar, priority: 2),
                                                      PairedSensor(varia, priority: 3)]))
var frames: [[UInt8]] = []
for k in 0..<1000 {
    let t = UInt16(truncatingIfNeeded: k * 512), w = UInt32(k * 2), c = UInt16(truncatingIfNeeded: k)
    let hr: [UInt8] = [UInt8(k % 8 < 4 ? 4 : 0x84), 0xff, 0, 0, UInt8(t & 0xff), UInt8(t >> 8), UInt8(k & 0xff), 72]
    var cps: [UInt8] = [0x31, 0, 200, 0, 100]
    cps += [UInt8(w & 0xff), UInt8((w >> 8) & 0xff), UInt8((w >> 16) & 0xff), UInt8(w >> 24), UInt8(t & 0xff), UInt8(t >> 8),
            UInt8(c & 0xff), UInt8(c >> 8), UInt8(t & 0xff), UInt8(t >> 8)]
    let sc: [UInt8] = [UInt8(t & 0xff), UInt8(t >> 8), UInt8(c & 0xff), UInt8(c >> 8), UInt8(t & 0xff), UInt8(t >> 8), UInt8(w & 0xff), UInt8((w >> 8) & 0xff)]
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(hrm, profileCode: 120, Payload(hr)!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(pm, profileCode: 0x2A63, Payload(cps)!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(csc, profileCode: 121, Payload(sc)!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(pm, profileCode: 0x2A63, Payload([0x30, 0])!)).encoded().bytes)
    frames.append(Array(frames[frames.count - 1].dropLast()))
    // Rear radars (issue 29): ANT+ pages 48/49 with three and two vehicles closing in, a Varia's
    // whole frame, a fragment pair and a clear road (the first two vehicles' ranges from k).
    let r = UInt32(60 - k % 60), rb = UInt32(63 - k % 40)
    let ranges = r | (r + 1) << 6 | (r + 2) << 12
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(antRadar, profileCode: 40, Payload([48, 0x25, 0x04, UInt8(ranges & 0xff), UInt8((ranges >> 8) & 0xff),
                                                                                                 UInt8(ranges >> 16), 0x43, 0x02])!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(antRadar, profileCode: 40, Payload([49, 0x05, 0, UInt8(rb & 0xff), UInt8(rb >> 2), 0, 0x11, 0])!)).encoded().bytes)
    let seq = UInt8((k % 16) << 4)
    let v = UInt8(130 - k % 120)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(varia, profileCode: 0x3203, Payload(k % 3 == 0 ? [seq | 2] : [seq | 2, 0xe3, v, 0, 0xe4, v &+ 20, 40])!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(varia, profileCode: 0x3203, Payload([seq, 0xe5, v &+ 5, 0])!)).encoded().bytes)
    frames.append(BridgeFrame(bridgeTimeUs: UInt64(k), .data(varia, profileCode: 0x3203, Payload([seq | 2, 0xe6, v &+ 9, 0, 0x00])!)).encoded().bytes)
}
let counter = dlsym(dlopen(nil, RTLD_NOW), "bench_malloc_count")!.assumingMemoryBound(to: UInt.self)
var samples = 0, pictures = 0
func pass(_ round: Int) {
    for (i, f) in frames.enumerated() {
        let at = MonotonicInstant(milliseconds: Int64(round * 1000 + i / 10) * 250)
        let parsed: Result<BridgeFrame, DecodeError> = f.withUnsafeBytes { b in
            do throws(DecodeError) { return .success(try BridgeFrame.parse(b)) } catch { return .failure(error) }
        }
        switch parsed {
        case .success(let frame): ds.handle(frame, at: at) {
            if case .sample = $0 { samples += 1 }
            if case .radar = $0 { pictures += 1 }
        }
        case .failure(let e): ds.count(e.kind)
        }
        if i % 100 == 0 { ds.tick(at: at) { _ in } }
    }
}
pass(0)
let before = counter.pointee
for r in 1...80 { pass(r) }
let after = counter.pointee
print("frames \(80 * frames.count) samples \(samples) pictures \(pictures) bad \(ds.status.bad.total) mallocs_before \(before) mallocs_during \(after - before)")
}
bench()
"""


def test_no_heap_allocation_per_frame():
    if shutil.which("swiftc") is None or shutil.which("cc") is None:
        pytest.fail("cannot run: needs swiftc (the Swift toolchain) and cc (apt-get install gcc) on PATH")
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        sources = [REPO / "Sources/RideModel/Quantity.swift", REPO / "Sources/RideModel/Time.swift",
                   REPO / "Sources/RideModel/SensorVocabulary.swift", REPO / "Sources/RideModel/GpsStatus.swift",
                   REPO / "Sources/RideModel/Radar.swift"]
        # The decoders and the data source, without the files that need the Positioning module
        # (and through it swift-numerics): the GPS path's own allocation guards are
        # test_run_alloc.py (bikecomputer run with GPS) and bikebench --guard --gps.
        sources += sorted(s for s in (REPO / "Sources/Sensors").glob("*.swift")
                          if not re.search(r"(?m)^import Positioning$", s.read_text())
                          and "PositionInputs" not in s.read_text())
        for s in sources:
            (d / s.name).write_text(re.sub(r"(?m)^import RideModel\n", "", s.read_text()))
        (d / "main.swift").write_text(DRIVER)
        (d / "count.c").write_text(COUNTER_C)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "count.c", "-o", "libcount.so", "-ldl"], cwd=d, check=True)
        swift = sorted(p.name for p in d.glob("*.swift"))
        r = subprocess.run(["swiftc", "-O", "-swift-version", "6", *swift, "-o", "driver"], cwd=d,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["./driver"], cwd=d, env={"LD_PRELOAD": str(d / "libcount.so")},
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        fields = dict(zip(r.stdout.split()[0::2], map(int, r.stdout.split()[1::2])))
        assert fields["mallocs_before"] > 0, "the malloc counter is not interposed"
        assert fields["samples"] > 100_000 and fields["bad"] > 100_000, r.stdout
        assert fields["pictures"] > 100_000, "the radar frames reached the app as pictures: " + r.stdout
        assert fields["mallocs_during"] == 0, r.stdout
