import RideModel

/// Pairing and forgetting sensors in the config file's text: a `[[sensor]]` block is appended or
/// removed, and every other byte of the file (comments, blank lines, the order of everything,
/// keys the rider wrote by hand) stays as it was. Pure text work; writing the file atomically is
/// the caller's (the app and `bikecomputer sensors` both go through `SensorPairing`).
///
/// A block is its header line (`[[sensor]]`), the lines up to the next table header, less the
/// blank and comment lines just before that header (they belong to what follows), plus the
/// comment lines directly above the header (no blank line between: they describe the sensor).
public enum SensorPairing {
    /// The config file may pair at most this many sensors (the data source's limit).
    public static let pairedMax = 8

    /// A sensor as the bridge knows it: a BLE address or an ANT+ device number and type.
    public enum Identity: Sendable, Hashable, CustomStringConvertible {
        case ble(address: String)
        case ant(deviceNumber: Int, deviceType: Int)

        public var description: String {
            switch self {
            case .ble(let a): "ble:\(a.uppercased())"
            case let .ant(n, t): "ant:\(n)/\(t)"
            }
        }

        /// A sensor id as `bikecomputer sensors` prints it and a rider types it:
        /// "ble:C0:FF:EE:00:11:22[/random]" or "ant:12345/11[/0]" (also "ant:12345:11"); the
        /// transport word in any case. Nil for anything else.
        public init?(parsing id: String) {
            let lower = id.lowercased()
            if lower.hasPrefix("ble:") {
                let address = String(id.dropFirst(4).split(separator: "/").first ?? "")
                guard SensorPairing.isAddress(address) else { return nil }
                self = .ble(address: address.uppercased())
            } else if lower.hasPrefix("ant:") {
                let parts = id.dropFirst(4).split(whereSeparator: { $0 == "/" || $0 == ":" })
                guard parts.count >= 2, let n = Int(parts[0]), let t = Int(parts[1]), (1...65_535).contains(n), (1...255).contains(t) else { return nil }
                self = .ant(deviceNumber: n, deviceType: t)
            } else {
                return nil
            }
        }

        /// What a rider is told when an id does not parse.
        public static let usage = "a sensor id like ble:C0:FF:EE:00:11:22 or ant:12345/11"
    }

    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case syntax(line: Int, String)
        case alreadyPaired(Identity, line: Int)
        case notPaired(Identity)
        case full(Int)
        case invalidAddress(String)

        public var description: String {
            switch self {
            case let .syntax(line, m): "the config file has an error on line \(line) (\(m)); fix it before pairing"
            case let .alreadyPaired(id, line): "\(id) is already paired (line \(line))"
            case .notPaired(let id): "\(id) is not paired"
            case .full(let n): "\(n) sensors are paired, the most the bike computer takes: forget one first"
            case .invalidAddress(let a): "\(a) is not a Bluetooth address like C0:FF:EE:00:11:22"
            }
        }
    }

    /// A `[[sensor]]` block in the text: its identity (nil when it names none) and its lines
    /// (1-based, inclusive, leading comments included).
    public struct Block: Sendable, Hashable {
        public var identity: Identity?
        public var role: String?
        public var name: String?
        public var headerLine: Int
        public var firstLine: Int
        public var lastLine: Int
    }

    /// The ANT+ device type a role implies when the block gives none.
    static func antType(_ role: String?) -> Int? { role.flatMap(SensorKind.init(rawValue:)).map { Int($0.antDeviceType) } }

    /// The `[[sensor]]` blocks of `text`, in file order.
    public static func blocks(in text: String) throws(Failure) -> [Block] {
        let (doc, errors) = TOMLDocument.parse(text)
        if let e = errors.first { throw .syntax(line: e.line, e.message) }
        let lines = split(text)
        var out: [Block] = []
        let headers = doc.tables.filter { $0.line > 1 || $0.name != "" }.map(\.line).sorted()
        for table in doc.tables where table.name == "sensor" && table.isArrayElement {
            let next = headers.first { $0 > table.line } ?? lines.count + 1
            var last = next - 1
            while last > table.line, isBlankOrComment(lines[last - 1]) { last -= 1 }
            var first = table.line
            while first > 1, isComment(lines[first - 2]) { first -= 1 }
            var values: [String: TOMLValue] = [:]
            for e in table.entries { values[e.key] = e.value }
            out.append(Block(identity: identity(values), role: string(values["role"]), name: string(values["name"]),
                             headerLine: table.line, firstLine: first, lastLine: last))
        }
        return out
    }

    /// The text with a new `[[sensor]]` block for the sensor appended (after the last sensor
    /// block, or at the end of the file). `comment` goes on a line above it.
    public static func pairing(_ identity: Identity, role: SensorKind, name: String? = nil, comment: String? = nil,
                               in text: String) throws(Failure) -> String {
        if case .ble(let a) = identity, !isAddress(a) { throw .invalidAddress(a) }
        let existing = try blocks(in: text)
        if let b = existing.first(where: { $0.identity == identity }) { throw .alreadyPaired(identity, line: b.headerLine) }
        if existing.count >= pairedMax { throw .full(existing.count) }
        var block: [String] = []
        if let comment { block.append("# " + String(String.UnicodeScalarView(comment.unicodeScalars.filter { !TOMLParser.isControl($0) }))) }
        block.append("[[sensor]]")
        switch identity {
        case .ble(let a):
            block.append("transport = \"ble\"")
            block.append("role = \"\(role)\"")
            block.append("ble_address = \"\(a.uppercased())\"")
        case let .ant(n, t):
            block.append("transport = \"ant\"")
            block.append("role = \"\(role)\"")
            block.append("ant_device_number = \(n)")
            if Int(role.antDeviceType) != t { block.append("ant_device_type = \(t)") }
        }
        if let name, !name.isEmpty { block.append("name = \"\(quoted(String(name.prefix(32))))\"") }
        var lines = split(text)
        let endsWithNewline = text.isEmpty || text.hasSuffix("\n")
        if let last = existing.last {
            lines.insert(contentsOf: [""] + block, at: last.lastLine)
        } else {
            if let l = lines.last, !l.trimmed.isEmpty { lines.append("") }
            lines += block
        }
        return join(lines, endsWithNewline: endsWithNewline || existing.last == nil)
    }

    /// The text without the sensor's block (and the blank line it leaves, if any).
    public static func forgetting(_ identity: Identity, in text: String) throws(Failure) -> String {
        guard let b = try blocks(in: text).first(where: { $0.identity == identity }) else { throw .notPaired(identity) }
        var lines = split(text)
        var first = b.firstLine
        var last = b.lastLine
        // One blank line around the block goes with it, so no double blank line is left.
        if last < lines.count, lines[last].trimmed.isEmpty { last += 1 } else if first > 1, lines[first - 2].trimmed.isEmpty { first -= 1 }
        lines.removeSubrange((first - 1)..<last)
        return join(lines, endsWithNewline: text.hasSuffix("\n"))
    }

    // MARK: Helpers

    static func identity(_ v: [String: TOMLValue]) -> Identity? {
        switch string(v["transport"]) {
        case "ble":
            guard let a = string(v["ble_address"]), isAddress(a) else { return nil }
            return .ble(address: a.uppercased())
        case "ant":
            guard case .integer(let n)? = v["ant_device_number"] else { return nil }
            var type = antType(string(v["role"]))
            if case .integer(let t)? = v["ant_device_type"] { type = Int(t) }
            guard let type else { return nil }
            return .ant(deviceNumber: Int(n), deviceType: type)
        default:
            return nil
        }
    }

    static func string(_ v: TOMLValue?) -> String? {
        if case .string(let s)? = v { s } else { nil }
    }

    public static func isAddress(_ a: String) -> Bool {
        let parts = a.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    /// The inside of the TOML basic string that reads back as `s` (`TOMLDocument.quoted`).
    static func quoted(_ s: String) -> String {
        String(TOMLDocument.quoted(s).dropFirst().dropLast())
    }

    static func split(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if text.hasSuffix("\n") { lines.removeLast() }
        return lines
    }

    static func join(_ lines: [String], endsWithNewline: Bool) -> String {
        lines.joined(separator: "\n") + (endsWithNewline && !lines.isEmpty ? "\n" : "")
    }

    static func isComment(_ line: String) -> Bool { line.trimmed.hasPrefix("#") }
    static func isBlankOrComment(_ line: String) -> Bool { let t = line.trimmed; return t.isEmpty || t.hasPrefix("#") }
}

extension String {
    var trimmed: Substring {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s.removeLast() }
        return s
    }
}

// MARK: A pairing change, checked

extension SensorPairing {
    /// What pairing does to the config file: one block added, or one removed.
    public enum Change: Sendable, Hashable, CustomStringConvertible {
        case pair(Identity, kind: SensorKind, name: String?, comment: String)
        case forget(Identity)

        /// What was done, for the rider and the log ("paired ant:12345/11 as power").
        public var description: String {
            switch self {
            case let .pair(id, kind, _, _): "paired \(id) as \(kind)"
            case .forget(let id): "forgot \(id)"
            }
        }
    }

    /// Why a change was not made; nothing is written then.
    public enum ChangeFailure: Error, Sendable, Hashable, CustomStringConvertible {
        case pairing(Failure)
        /// The edited text would not load (the report says where and why).
        case wouldNotLoad(String)

        public var description: String {
            switch self {
            case .pairing(let f): f.description
            case .wouldNotLoad(let report): "the edited config would not load: \(report)"
            }
        }
    }

    /// `text` with `change` made, and the config it loads as: an edit is only good if the
    /// result loads (`path` names the file in the report).
    public static func applying(_ change: Change, to text: String, path: String) -> Result<(text: String, config: DeviceConfig), ChangeFailure> {
        let edited: String
        do throws(Failure) {
            switch change {
            case let .pair(id, kind, name, comment): edited = try pairing(id, role: kind, name: name, comment: comment, in: text)
            case .forget(let id): edited = try forgetting(id, in: text)
            }
        } catch {
            return .failure(.pairing(error))
        }
        switch ConfigLoader.load(text: edited) {
        case .success(let c): return .success((edited, c))
        case .failure(let errors): return .failure(.wouldNotLoad(errors.report(path: path)))
        }
    }
}
