/// A cursor over one line of JSON bytes (a gpsd report): strings are returned as byte ranges,
/// numbers as `Double`, nested values can be skipped. Nothing is allocated; every loop is bounded
/// by the line's length and nesting by `depthMax`.
struct JSONCursor {
    /// Deepest nesting followed (gpsd's reports nest two levels: SKY → satellites → satellite).
    static let depthMax = 8
    /// Decimal exponents beyond this are out of any range gpsd reports (and would overflow).
    static let exponentMax = 400

    let bytes: UnsafeRawBufferPointer
    var i = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var atEnd: Bool { i >= bytes.count }

    func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }

    mutating func skipSpace() {
        while i < bytes.count {
            let b = bytes[i]
            guard b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D else { return }
            i += 1
        }
    }

    /// Skips spaces, then consumes `byte` or fails.
    mutating func expect(_ byte: UInt8) throws(GpsdReportError) {
        skipSpace()
        guard let b = peek() else { throw .truncated }
        guard b == byte else { throw .syntax(offset: i) }
        i += 1
    }

    /// Skips spaces; consumes `byte` if it is next.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipSpace()
        if peek() == byte { i += 1; return true }
        return false
    }

    /// A string's contents (between the quotes, escapes left as they are).
    mutating func string() throws(GpsdReportError) -> Range<Int> {
        try expect(UInt8(ascii: "\""))
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\\") {
                i += 2
                continue
            }
            if b == UInt8(ascii: "\"") {
                i += 1
                return start..<(i - 1)
            }
            guard b >= 0x20 else { throw .syntax(offset: i) } // control characters are not allowed raw
            i += 1
        }
        throw .truncated
    }

    /// Whether `range` holds exactly the bytes of `text`.
    func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        let p = text.utf8Start
        for k in 0..<range.count where bytes[range.lowerBound + k] != p[k] { return false }
        return true
    }

    /// What the next value is, without consuming it.
    enum ValueKind { case string, number, object, array, literal }

    mutating func nextKind() throws(GpsdReportError) -> ValueKind {
        skipSpace()
        guard let b = peek() else { throw .truncated }
        switch b {
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"): return .literal
        default: throw .syntax(offset: i)
        }
    }

    /// `true`, `false` or `null` (nil).
    mutating func literal() throws(GpsdReportError) -> Bool? {
        skipSpace()
        if matchWord("true") { return true }
        if matchWord("false") { return false }
        if matchWord("null") { return nil }
        // The start of a word cut off by the end of the line is a truncation, not a syntax error.
        if isCutOff("true") || isCutOff("false") || isCutOff("null") { throw .truncated }
        throw .syntax(offset: i)
    }

    private mutating func matchWord(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { return false }
        let p = word.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] { return false }
        i += n
        return true
    }

    /// Whether the rest of the line is a proper prefix of `word`.
    private func isCutOff(_ word: StaticString) -> Bool {
        let rest = bytes.count - i
        guard rest < word.utf8CodeUnitCount else { return false }
        let p = word.utf8Start
        for k in 0..<rest where bytes[i + k] != p[k] { return false }
        return true
    }

    /// A JSON number. Up to 19 significant digits are kept (more than a Double holds); the value
    /// is exact for the decimal numbers gpsd prints (≤ 15 digits, exponent ≤ 22).
    mutating func number() throws(GpsdReportError) -> Double {
        skipSpace()
        var negative = false
        if peek() == UInt8(ascii: "-") { negative = true; i += 1 }
        var mantissa: UInt64 = 0
        var significant = 0
        var exponent = 0
        var digits = 0
        while let b = peek(), b >= 0x30, b <= 0x39 {
            let d = UInt64(b - 0x30)
            if significant < 19 {
                mantissa = mantissa * 10 + d
                if mantissa != 0 { significant += 1 }
            } else {
                exponent += 1
            }
            digits += 1
            i += 1
        }
        guard digits > 0 else { throw atEnd ? .truncated : .syntax(offset: i) }
        if peek() == UInt8(ascii: ".") {
            i += 1
            var fraction = 0
            while let b = peek(), b >= 0x30, b <= 0x39 {
                if significant < 19 {
                    mantissa = mantissa * 10 + UInt64(b - 0x30)
                    if mantissa != 0 { significant += 1 }
                    exponent -= 1
                }
                fraction += 1
                i += 1
            }
            guard fraction > 0 else { throw atEnd ? .truncated : .syntax(offset: i) }
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            i += 1
            var expNegative = false
            if let s = peek(), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { expNegative = s == UInt8(ascii: "-"); i += 1 }
            var value = 0
            var expDigits = 0
            while let b = peek(), b >= 0x30, b <= 0x39 {
                if value < Self.exponentMax * 10 { value = value * 10 + Int(b - 0x30) }
                expDigits += 1
                i += 1
            }
            guard expDigits > 0 else { throw atEnd ? .truncated : .syntax(offset: i) }
            exponent += expNegative ? -value : value
        }
        let magnitude = Self.scale(mantissa, exponent)
        return negative ? -magnitude : magnitude
    }

    /// `mantissa` × 10^`exponent`: one exact multiplication or division while both are exact
    /// (Clinger's fast path), repeated steps otherwise.
    static func scale(_ mantissa: UInt64, _ exponent: Int) -> Double {
        var v = Double(mantissa)
        if mantissa == 0 { return 0 }
        var e = max(-exponentMax, min(exponentMax, exponent))
        while e > 22 { v *= 1e22; e -= 22 }
        while e < -22 { v /= 1e22; e += 22 }
        return e >= 0 ? v * powerOfTen(e) : v / powerOfTen(-e)
    }

    /// 10^n for 0 ≤ n ≤ 22, exact in a Double.
    static func powerOfTen(_ n: Int) -> Double {
        var p = 1.0
        for _ in 0..<n { p *= 10 } // every intermediate is an exact integer below 2^53·5^k
        return p
    }

    /// Skips one value of any kind, following nesting up to `depthMax`.
    mutating func skipValue(depth: Int = 0) throws(GpsdReportError) {
        guard depth < Self.depthMax else { throw .tooDeep }
        switch try nextKind() {
        case .string: _ = try string()
        case .number: _ = try number()
        case .literal: _ = try literal()
        case .object:
            try expect(UInt8(ascii: "{"))
            if consume(UInt8(ascii: "}")) { return }
            repeat {
                _ = try string()
                try expect(UInt8(ascii: ":"))
                try skipValue(depth: depth + 1)
            } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"))
        case .array:
            try expect(UInt8(ascii: "["))
            if consume(UInt8(ascii: "]")) { return }
            repeat { try skipValue(depth: depth + 1) } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
        }
    }
}
