// FuzzTargets: one entry per parser of outside input for the coverage-guided fuzzer (`bikefuzz`,
// docs/testing.md "Fuzzing"): each takes any bytes, must never crash, and checks what must hold of
// what it parsed (round trips). The corpus replay in `swift test` (FuzzCorpusTests) runs the same.
// Must not import: AppCore, BoardIO, BoardWiring, Device, Foundation.
import Configuration
import CourseImport
import Navigation
import Positioning
import RideFiles
import RideModel
import Sensors

/// A parser under fuzzing: its name (the corpus directory `Tests/Fuzz/Corpus/<name>`) and its
/// entry. Adding a target is one line in `all`.
public struct FuzzTarget: Sendable {
    public let name: String
    public let run: @Sendable (UnsafeRawBufferPointer) -> Void

    /// Every target.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "bridge-frame", run: bridgeFrame),
        FuzzTarget(name: "serial-bridge", run: serialBridge),
        FuzzTarget(name: "gpsd-report", run: gpsdReport),
        FuzzTarget(name: "fit", run: fit),
        FuzzTarget(name: "toml", run: toml),
        FuzzTarget(name: "gpx", run: courseFile),
        FuzzTarget(name: "tcx", run: courseFile),
        FuzzTarget(name: "fit-course", run: courseFile),
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// The sensors every bridge-input target pairs: the addresses the corpus's frames use.
let pairedSensors: [PairedSensor] = [
    PairedSensor(.ble(BLEAddress("C0:FF:EE:00:00:01")!)),
    PairedSensor(.ble(BLEAddress("C0:FF:EE:00:00:02")!)),
    PairedSensor(.ble(BLEAddress("C0:FF:EE:00:00:03")!)),
    PairedSensor(.ant(deviceNumber: 12345, deviceType: 120, transmissionType: 0)),
    PairedSensor(.ant(deviceNumber: 12346, deviceType: 11, transmissionType: 0)),
    PairedSensor(.ant(deviceNumber: 12347, deviceType: 121, transmissionType: 0)),
]

/// A frame that parses encodes to bytes that parse to the same frame; then the whole input path
/// (data source, decoders) takes it.
@Sendable func bridgeFrame(_ data: UnsafeRawBufferPointer) {
    if let frame = try? BridgeFrame.parse(data) {
        let again = frame.encoded().withBytes { try? BridgeFrame.parse($0) }
        precondition(again == frame, "a parsed frame does not survive encoding: \(frame)")
    }
    var inputs = SensorInputs(DataSourceConfiguration(sensors: pairedSensors))
    var events = 0
    inputs.start(at: MonotonicInstant(milliseconds: 0)) { _ in events += 1 }
    // The same packet twice, a second apart: a decoder's second reading (event counts, rollovers).
    for t: Int64 in [1_000, 2_000] {
        inputs.receive(.bridgePacket(data, truncated: false), at: MonotonicInstant(milliseconds: t)) { e in
            if case .sample(let s) = e { precondition(s.value.isFinite, "a decoder emitted \(s.value)") }
            events += 1
        }
    }
}

/// Bytes from a serial bridge in two chunks split at the first byte's value: the deframer's
/// state across reads, then every frame through the data source.
@Sendable func serialBridge(_ data: UnsafeRawBufferPointer) {
    var inputs = SensorInputs(DataSourceConfiguration(sensors: pairedSensors))
    inputs.start(at: MonotonicInstant(milliseconds: 0)) { _ in }
    let split = data.isEmpty ? 0 : min(data.count, Int(data[0]))
    var t: Int64 = 1_000
    for part in [UnsafeRawBufferPointer(rebasing: data[0..<split]), UnsafeRawBufferPointer(rebasing: data[split...])] {
        inputs.receive(.serialBytes(part), at: MonotonicInstant(milliseconds: t)) { e in
            if case .sample(let s) = e { precondition(s.value.isFinite, "a decoder emitted \(s.value)") }
        }
        t += 1_000
    }
}

/// A gpsd line: parsed alone, then through the GPS input path (fix rules, odometer).
@Sendable func gpsdReport(_ data: UnsafeRawBufferPointer) {
    if let r = try? GpsdReport.parse(data) { _ = r }
    var inputs = SensorInputs(DataSourceConfiguration(sensors: [PairedSensor(.onboard(.gnss))]))
    inputs.start(at: MonotonicInstant(milliseconds: 0)) { _ in }
    for t: Int64 in [1_000, 2_000] {
        inputs.receive(.gpsdLine(data), at: MonotonicInstant(milliseconds: t)) { e in
            if case .sample(let s) = e { precondition(s.value.isFinite, "the GPS input emitted \(s.value)") }
        }
    }
}

/// A FIT file: read strictly and with recovery, then as an activity (what replay and
/// `rides show` do with a file from another unit).
@Sendable func fit(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    // A small limit: a fuzzer's input is small, and the limit's own path gets reached.
    if let f = try? FITFile(bytes: bytes, messagesMax: 4_096) { _ = FITActivity(f) }
    if let f = try? FITFile(bytes: bytes, recover: true, messagesMax: 4_096) {
        precondition(f.messages.count <= 4_096, "more messages than the limit")
        _ = FITActivity(f)
    }
}

/// A config file: what the reader accepts loads, every string it read is written back by the
/// one writer and read again unchanged, and an accepted config renders to TOML that loads and
/// renders the same again.
@Sendable func toml(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    let (doc, errors) = TOMLDocument.parse(bytes: bytes)
    if errors.isEmpty {
        for table in doc.tables {
            for e in table.entries { checkStrings(e.value) }
        }
    }
    if case .success(let config) = ConfigLoader.load(bytes: bytes) {
        let rendered = config.renderTOML()
        guard case .success(let again) = ConfigLoader.load(text: rendered) else {
            preconditionFailure("the rendered config does not load:\n\(rendered)")
        }
        precondition(again.renderTOML() == rendered, "the rendered config loads to another config")
    }
}

func checkStrings(_ v: TOMLValue) {
    switch v {
    case .string(let s):
        let (doc, errors) = TOMLDocument.parse("k = " + TOMLDocument.quoted(s) + "\n")
        guard errors.isEmpty, case .string(let back)? = doc.tables.first?.entries.first?.value else {
            preconditionFailure("a string the reader took is not read back from its quoted form: \(Array(s.unicodeScalars))")
        }
        precondition(Array(back.unicodeScalars) == Array(s.unicodeScalars), "a string changed through quoting")
    case .array(let items):
        for i in items { checkStrings(i) }
    default:
        break
    }
}

/// A course file (GPX, TCX or FIT course: the readers pick by content, so the three targets share
/// this entry and differ by their corpus): imported as `bikecomputer courses import` does; a
/// course it accepts survives the compact file unchanged, and a follower riding its own points
/// stays on it, its distance along within the course.
@Sendable func courseFile(_ data: UnsafeRawBufferPointer) {
    guard let (course, report) = try? CourseImport.course(from: Array(data), fileName: "fuzz.gpx") else { return }
    precondition(report.pointsKept == course.pointCount && course.pointCount >= 2, "the report's points are not the course's")
    let bytes = CourseCodec.encode(course)
    guard let back = try? CourseCodec.decode(bytes) else { preconditionFailure("an imported course's file does not decode: \(course)") }
    precondition(back.name == course.name && back.latDeg == course.latDeg && back.lonDeg == course.lonDeg
                 && back.alongM == course.alongM && back.cues == course.cues && back.climbs == course.climbs,
                 "an imported course changes through its file: \(course)")
    precondition(CourseCodec.encode(back) == bytes, "a decoded course encodes to other bytes")
    var follower = CourseFollower(course: course)
    let stride = max(1, course.pointCount / 64)
    var t: Int64 = 0
    for i in Swift.stride(from: 0, to: course.pointCount, by: stride) {
        t += 1_000
        _ = follower.update(NavigationFix(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i], atMs: t))
        if let along = follower.alongM {
            precondition(along >= 0 && along <= course.lengthM + 1e-6, "along \(along) outside a course of \(course.lengthM) m")
        }
    }
}
