import Glibc

/// A very small check harness: each check prints one line; the process exits 1 on any failure.
enum Checks {
    nonisolated(unsafe) static var failures = 0
    nonisolated(unsafe) static var passed = 0

    static func check(_ condition: Bool, _ name: String, _ detail: @autoclosure () -> String = "") {
        if condition {
            passed += 1
            print("ok \(name)")
        } else {
            failures += 1
            print("FAIL \(name): \(detail())")
        }
    }

    static func fail(_ name: String, _ detail: String) { check(false, name, detail) }

    static func finish() -> Never {
        print("\(passed) passed, \(failures) failed")
        exit(failures == 0 ? 0 : 1)
    }

    static func usage(_ what: String) -> Never {
        let text = Array("board-vm-checks: expected \(what) (see Tests/vm/BoardVMChecks/main.swift)\n".utf8)
        _ = text.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}

/// `--name value` pairs.
struct Options {
    var values: [String: String] = [:]

    init(_ arguments: [String]) {
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            guard a.hasPrefix("--"), i + 1 < arguments.count else { Checks.usage("--name value pairs, got \(a)") }
            values[String(a.dropFirst(2))] = arguments[i + 1]
            i += 2
        }
    }

    func string(_ name: String) -> String {
        guard let v = values[name] else { Checks.usage("--\(name)") }
        return v
    }

    func int(_ name: String) -> Int {
        guard let v = optionalInt(name) else { Checks.usage("--\(name) NUMBER") }
        return v
    }

    func optionalInt(_ name: String) -> Int? {
        guard let v = values[name] else { return nil }
        if v.hasPrefix("0x") { return Int(v.dropFirst(2), radix: 16) }
        return Int(v)
    }
}

/// sysfs, configfs and debugfs files: read whole, written with one open/write (never
/// write-to-temp-and-rename, which these file systems refuse).
enum SysFile {
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    static func text(_ path: String) -> String {
        guard let bytes = read(path) else { return "<cannot read \(path): \(String(cString: strerror(errno)))>" }
        var s = String(decoding: bytes, as: UTF8.self)
        while s.last == "\n" { s.removeLast() }
        return s
    }

    @discardableResult
    static func write(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            print("cannot open \(path) for writing: \(String(cString: strerror(errno)))")
            return false
        }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count { print("write \(text) to \(path): \(String(cString: strerror(errno)))") }
        return n == bytes.count
    }
}

func hex(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef")
    var s = ""
    for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 15)]) }
    return s
}

/// A small deterministic generator (the checks print their seed, so a failure can be replayed).
struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}
