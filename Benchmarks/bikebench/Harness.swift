// Small measuring tools for bikebench: a monotonic clock, percentiles, the allocation counter,
// and the figures table (text or JSON).
import CMallocCounter
import Control
import Device
import Glibc

enum Clock {
    @inline(__always) static func ns() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

enum Allocations {
    @inline(__always) static var count: UInt64 { bench_allocations() }
    static var bytes: UInt64 { bench_allocated_bytes() }
    static var isCounting: Bool { bench_counter_is_interposed() != 0 }
}

/// p50/p99/max of a sample of durations (ns).
struct Percentiles {
    var p50: Int64 = 0, p99: Int64 = 0, max: Int64 = 0, mean: Double = 0
    init(_ values: [Int64]) {
        guard !values.isEmpty else { return }
        let s = values.sorted()
        p50 = s[(s.count - 1) / 2]
        p99 = s[Swift.min(s.count - 1, Int((Double(s.count) * 0.99).rounded(.up)) - 1)]
        max = s[s.count - 1]
        mean = Double(s.reduce(0, +)) / Double(s.count)
    }
}

/// One reported figure: a key for JSON, a label for people, the value with its unit, the
/// target it is held to (if any) and whether it met it.
struct Figure {
    var key: String
    var label: String
    var value: Double
    var unit: String
    var decimals: Int
    var target: String?
    var met: Bool?
    var note: String?
}

final class Report {
    private(set) var figures: [Figure] = []
    var notes: [String] = []

    func add(_ key: String, _ label: String, _ value: Double, _ unit: String, decimals: Int = 0,
             target: String? = nil, met: Bool? = nil, note: String? = nil) {
        figures.append(Figure(key: key, label: label, value: value, unit: unit, decimals: decimals, target: target, met: met, note: note))
    }

    static func format(_ v: Double, _ decimals: Int) -> String {
        if !v.isFinite { return "null" }
        if decimals == 0 { return String(Int64(v.rounded())) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (v * scale).rounded() / scale
        let whole = Int64(r.magnitude.rounded(.down))
        var frac = String(Int64(((r.magnitude - Double(whole)) * scale).rounded()))
        while frac.count < decimals { frac = "0" + frac }
        return (r < 0 ? "-" : "") + "\(whole).\(frac)"
    }

    func printText() {
        for f in figures {
            var line = "  \(f.label): \(Self.format(f.value, f.decimals)) \(f.unit)"
            if let t = f.target { line += "   [target \(t): \(f.met == true ? "met" : f.met == false ? "MISSED" : "-")]" }
            if let n = f.note { line += "   (\(n))" }
            print(line)
        }
        for n in notes { print("  note: \(n)") }
    }

    func printJSON(machine: String, date: String) {
        var s = "{\n  \"machine\": \(JSONWriter.quote(machine)),\n  \"date\": \(JSONWriter.quote(date)),\n  \"figures\": {\n"
        for (i, f) in figures.enumerated() {
            s += "    \(JSONWriter.quote(f.key)): {\"value\": \(Self.format(f.value, f.decimals)), \"unit\": \(JSONWriter.quote(f.unit))"
            if let t = f.target { s += ", \"target\": \(JSONWriter.quote(t))" }
            if let m = f.met { s += ", \"met\": \(m)" }
            if let n = f.note { s += ", \"note\": \(JSONWriter.quote(n))" }
            s += "}" + (i + 1 < figures.count ? ",\n" : "\n")
        }
        s += "  },\n  \"notes\": [" + notes.map(JSONWriter.quote).joined(separator: ", ") + "]\n}"
        print(s)
    }
}

/// Reads a whole small file (machine description), or nil.
func readSmallFile(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
        if out.count > 1 << 20 { break }
    }
    return String(decoding: out, as: UTF8.self)
}

/// "AMD EPYC, 2 CPUs" from /proc/cpuinfo.
func machineDescription() -> String {
    let info = readSmallFile("/proc/cpuinfo") ?? ""
    var model = "unknown CPU"
    var cpus = 0
    for line in info.split(separator: "\n") {
        if line.hasPrefix("model name"), let c = line.firstIndex(of: ":") {
            model = String(line[line.index(after: c)...].drop(while: { $0 == " " }))
        }
        if line.hasPrefix("processor") { cpus += 1 }
    }
    return "\(model), \(cpus) CPUs"
}

func utcDate() -> String {
    var t = time(nil)
    var tmv = tm()
    gmtime_r(&t, &tmv)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return "\(tmv.tm_year + 1900)-\(two(tmv.tm_mon + 1))-\(two(tmv.tm_mday)) \(two(tmv.tm_hour)):\(two(tmv.tm_min)) UTC"
}

/// Runs a command through the shell; returns its exit status and standard output.
func shell(_ command: String) -> (status: Int32, output: String) {
    guard let p = popen(command, "r") else { return (-1, "") }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buf, 1, buf.count, p)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    let status = pclose(p)
    return ((status >> 8) & 0xff, String(decoding: out, as: UTF8.self))
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

func executableDirectory() -> String {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { return "." }
    let path = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return String(path[..<slash])
}

func writeFile(_ path: String, _ bytes: [UInt8]) -> Bool {
    guard let f = fopen(path, "w") else { return false }
    defer { fclose(f) }
    return bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) } == bytes.count
}

/// A line on standard error.
func printError(_ s: String) {
    var line = Array((s + "\n").utf8)
    _ = line.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
