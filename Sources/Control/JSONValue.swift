/// A JSON value (RFC 8259) without Foundation: what a client of the control socket (the
/// companion) reads from the device's stream and from a phone, and writes back.
///
/// Numbers are Doubles, as a phone's JavaScript reads them: integers are exact up to 2^53, which
/// no number of the control protocol or the companion's API reaches (sequence numbers, timer
/// and Unix milliseconds are far below it).
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// A count or other integer as a number (exact while |n| < 2^53).
    public static func integer(_ n: some BinaryInteger) -> JSONValue { .number(Double(n)) }
}

// MARK: Accessors

extension JSONValue {
    /// The member `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var double: Double? {
        if case .number(let d) = self { return d }
        return nil
    }

    /// The number when it is a whole number in Int64's range (no fraction dropped, no rounding).
    public var int64: Int64? { double.flatMap { Int64(exactly: $0) } }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A JSON `true` or `false` only: a number is not a boolean.
    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool { self == .null }
}

// MARK: Literals

// No ExpressibleByNilLiteral: with it, `dict[key] = nil` and `value == nil` would read as
// JSON null or as "absent" depending on the type the compiler picks. `.null` says it.
extension JSONValue: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringInterpolation,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var o: [String: JSONValue] = [:]
        for (k, v) in elements {
            precondition(o[k] == nil, "JSONValue literal: key \(k) twice")
            o[k] = v
        }
        self = .object(o)
    }

    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

// MARK: Writing

extension JSONValue {
    /// Compact JSON text. Object members sorted by key, so the same value is always the same
    /// text; whole numbers below 2^53 as integers ("12", not "12.0"), other numbers in their
    /// shortest form that reads back the same; a NaN or infinity (which JSON cannot say) as
    /// `null`; strings escaped by `JSONWriter.quote` (`/` is not escaped).
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let d): out += Self.numberText(d)
        case .string(let s): out += JSONWriter.quote(s)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                out += JSONWriter.quote(k) + ":"
                o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// Doubles hold every integer exactly below this; at and above it `description` is used.
    static let exactIntegerBound = 9_007_199_254_740_992.0  // 2^53

    static func numberText(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded(.towardZero) && abs(d) < exactIntegerBound { return String(Int64(d)) }
        // Swift's description is the shortest text that reads back as `d`, and is JSON's
        // number grammar for finite values ("1.5e-07", "1e+16", "9007199254740992.0").
        return d.description
    }
}

// MARK: Parsing

extension JSONValue {
    /// Arrays and objects nested deeper than this are refused: the parser recurses once per
    /// level, and no message of the control protocol or the companion nests more than three.
    public static let depthMax = 64

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public enum Reason: String, Equatable, Sendable {
            case unexpectedEnd = "the text ends inside a value"
            case unexpectedByte = "a byte that no JSON value has there"
            case invalidNumber = "a number outside JSON's grammar"
            case numberOutOfRange = "a number too large for a Double"
            case controlCharacter = "an unescaped control character in a string"
            case invalidEscape = "an escape JSON does not have"
            case loneSurrogate = "a \\u escape of half a surrogate pair"
            case invalidUTF8 = "a string that is not UTF-8"
            case tooDeep = "arrays and objects nested deeper than JSONValue.depthMax"
            case trailingData = "more after the value"
        }

        public var reason: Reason
        /// Where in the input (bytes from its start) the problem was found.
        public var offset: Int

        public init(_ reason: Reason, at offset: Int) {
            self.reason = reason
            self.offset = offset
        }

        public var description: String { "invalid JSON at byte \(offset): \(reason.rawValue)" }
    }

    /// The value of a JSON text, or nil when it is not one (`init(parsing:)` says why).
    public static func parse<C: Collection>(_ bytes: C) -> JSONValue? where C.Element == UInt8 {
        try? JSONValue(parsing: bytes)
    }

    /// Strict RFC 8259: one value, optionally between whitespace; UTF-8 without a byte-order mark.
    /// Of an object's repeated member names the last is kept (as JavaScript does).
    public init<C: Collection>(parsing bytes: C) throws(ParseError) where C.Element == UInt8 {
        var p = Parser(Array(bytes))
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == p.b.count else { throw ParseError(.trailingData, at: p.i) }
        self = v
    }

    /// A recursive-descent parser over the bytes. Every loop advances `i`, so each ends within
    /// the input; recursion is bounded by `depthMax`.
    private struct Parser {
        let b: [UInt8]
        var i = 0

        init(_ bytes: [UInt8]) { b = bytes }

        func fail(_ r: ParseError.Reason) -> ParseError { ParseError(r, at: i) }

        var peek: UInt8? { i < b.count ? b[i] : nil }

        mutating func skipWhitespace() {
            while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
        }

        mutating func expect(_ c: UInt8) throws(ParseError) {
            guard let x = peek else { throw fail(.unexpectedEnd) }
            guard x == c else { throw fail(.unexpectedByte) }
            i += 1
        }

        mutating func literal(_ word: String, _ v: JSONValue) throws(ParseError) -> JSONValue {
            for c in word.utf8 { try expect(c) }
            return v
        }

        /// `depth`: the arrays and objects this value is inside.
        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard let c = peek else { throw fail(.unexpectedEnd) }
            switch c {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail(.unexpectedByte)
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= JSONValue.depthMax else { throw fail(.tooDeep) }
            i += 1  // [
            var out: [JSONValue] = []
            skipWhitespace()
            if peek == UInt8(ascii: "]") { i += 1; return .array(out) }
            while true {
                skipWhitespace()
                out.append(try value(depth: depth))
                skipWhitespace()
                guard let c = peek else { throw fail(.unexpectedEnd) }
                guard c == UInt8(ascii: ",") || c == UInt8(ascii: "]") else { throw fail(.unexpectedByte) }
                i += 1
                if c == UInt8(ascii: "]") { return .array(out) }
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= JSONValue.depthMax else { throw fail(.tooDeep) }
            i += 1  // {
            var out: [String: JSONValue] = [:]
            skipWhitespace()
            if peek == UInt8(ascii: "}") { i += 1; return .object(out) }
            while true {
                skipWhitespace()
                guard let q = peek else { throw fail(.unexpectedEnd) }
                guard q == UInt8(ascii: "\"") else { throw fail(.unexpectedByte) }
                let key = try string()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                out[key] = try value(depth: depth)
                skipWhitespace()
                guard let c = peek else { throw fail(.unexpectedEnd) }
                guard c == UInt8(ascii: ",") || c == UInt8(ascii: "}") else { throw fail(.unexpectedByte) }
                i += 1
                if c == UInt8(ascii: "}") { return .object(out) }
            }
        }

        /// A string from its opening quote: its bytes unescaped, then checked to be UTF-8.
        mutating func string() throws(ParseError) -> String {
            let start = i
            i += 1  // "
            var bytes: [UInt8] = []
            while true {
                guard let c = peek else { throw fail(.unexpectedEnd) }
                switch c {
                case UInt8(ascii: "\""):
                    i += 1
                    guard let s = String(validating: bytes, as: UTF8.self) else { throw ParseError(.invalidUTF8, at: start) }
                    return s
                case UInt8(ascii: "\\"):
                    i += 1
                    guard let e = peek else { throw fail(.unexpectedEnd) }
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(e)
                    case UInt8(ascii: "b"): bytes.append(0x08)
                    case UInt8(ascii: "f"): bytes.append(0x0C)
                    case UInt8(ascii: "n"): bytes.append(0x0A)
                    case UInt8(ascii: "r"): bytes.append(0x0D)
                    case UInt8(ascii: "t"): bytes.append(0x09)
                    case UInt8(ascii: "u"):
                        i -= 1
                        bytes.append(contentsOf: String(try unicodeEscape()).utf8)
                        continue  // `unicodeEscape` moved past the escape
                    default: throw fail(.invalidEscape)
                    }
                    i += 1
                case 0..<0x20:
                    throw fail(.controlCharacter)
                default:
                    bytes.append(c)
                    i += 1
                }
            }
        }

        /// `\uXXXX` at `i` (its backslash), or a surrogate pair `\uD8xx\uDCxx`: the scalar.
        mutating func unicodeEscape() throws(ParseError) -> Unicode.Scalar {
            let start = i
            let high = try hex4()
            switch high {
            case 0xD800...0xDBFF:
                guard peek == UInt8(ascii: "\\"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "u") else {
                    throw ParseError(.loneSurrogate, at: start)
                }
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw ParseError(.loneSurrogate, at: start) }
                return Self.scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            case 0xDC00...0xDFFF:
                throw ParseError(.loneSurrogate, at: start)
            default:
                return Self.scalar(high)
            }
        }

        /// A code point outside the surrogates and at most 0x10FFFF (the callers' ranges).
        static func scalar(_ v: UInt32) -> Unicode.Scalar {
            guard let s = Unicode.Scalar(v) else { preconditionFailure("not a scalar: \(v)") }
            return s
        }

        /// `\uXXXX` at `i`: its four hex digits' value.
        mutating func hex4() throws(ParseError) -> UInt32 {
            i += 2  // \u
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let c = peek else { throw fail(.unexpectedEnd) }
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
                default: throw fail(.invalidEscape)
                }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, then read by the standard
        /// library (correctly rounded). A magnitude beyond Double's range is refused.
        mutating func number() throws(ParseError) -> Double {
            let start = i
            func isDigit(_ c: UInt8?) -> Bool { c.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }
            if peek == UInt8(ascii: "-") { i += 1 }
            guard isDigit(peek) else { throw fail(peek == nil ? .unexpectedEnd : .invalidNumber) }
            if peek == UInt8(ascii: "0") {
                i += 1
                guard !isDigit(peek) else { throw fail(.invalidNumber) }  // a leading zero
            } else {
                while isDigit(peek) { i += 1 }
            }
            if peek == UInt8(ascii: ".") {
                i += 1
                guard isDigit(peek) else { throw fail(peek == nil ? .unexpectedEnd : .invalidNumber) }
                while isDigit(peek) { i += 1 }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                i += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
                guard isDigit(peek) else { throw fail(peek == nil ? .unexpectedEnd : .invalidNumber) }
                while isDigit(peek) { i += 1 }
            }
            let text = String(decoding: b[start..<i], as: UTF8.self)
            // JSON's number grammar is a subset of what Double(_:) reads.
            guard let d = Double(text) else { preconditionFailure("Double(_:) refused the JSON number \(text)") }
            guard d.isFinite else { throw ParseError(.numberOutOfRange, at: start) }
            return d
        }
    }
}
