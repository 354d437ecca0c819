/// A TOML subset, enough for a human-edited config file: `[table]` and `[[array-of-tables]]`
/// headers, `key = value` with bare or quoted keys, basic ("...") and literal ('...') strings,
/// integers (decimal, 0x hex, `_` separators), floats, booleans, arrays (may span lines) and
/// `#` comments. Not supported (reported as errors): dotted keys, inline tables, multi-line
/// strings, dates. Every value keeps its line number.
///
/// Every document this reader accepts is TOML 1.0 that reads to the same values with Python's
/// `tomllib` (the sensor bridge's reader): control characters (U+0000–U+0008, U+000A–U+001F,
/// U+007F) in strings and comments, a bare carriage return, signs or misplaced underscores in
/// numbers, a table declared twice in any form, and bytes that are not UTF-8 are errors here as
/// there (issue 27; `Tests/oracle/test_toml_differential.py` checks it on generated and hostile
/// documents). `TOMLDocument.quoted` writes a string both read back unchanged.
public enum TOMLValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    case array([TOMLValue])

    /// The type's name as the TOML spec and the error messages call it.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .float: "float"
        case .boolean: "boolean"
        case .array: "array"
        }
    }
}

/// One `key = value` line.
public struct TOMLEntry: Sendable, Hashable {
    public var key: String
    public var value: TOMLValue
    public var line: Int

    public init(key: String, value: TOMLValue, line: Int) {
        self.key = key
        self.value = value
        self.line = line
    }
}

/// A table: the root (name ""), a `[name]` table or one element of `[[name]]`.
public struct TOMLTable: Sendable, Hashable {
    public var name: String
    public var isArrayElement: Bool
    /// The header's line (1 for the root).
    public var line: Int
    public var entries: [TOMLEntry]
}

/// A syntax error with its line.
public struct TOMLSyntaxError: Error, Sendable, Hashable {
    public var line: Int
    public var message: String
}

public struct TOMLDocument: Sendable, Hashable {
    /// Tables in file order; the root table first.
    public var tables: [TOMLTable]

    /// Limits that keep a hostile or corrupt file from costing much.
    public static let textBytesMax = 256 * 1024
    public static let arrayElementsMax = 64
    public static let stringBytesMax = 1024
    public static let errorsMax = 100

    /// Parses `text`; returns the document (syntactically valid parts) and every syntax error.
    public static func parse(_ text: String) -> (TOMLDocument, [TOMLSyntaxError]) {
        var parser = TOMLParser(text)
        return parser.parseDocument()
    }

    /// Parses a file's bytes: text that is not UTF-8 is an error on the line of the first byte
    /// that is not (as for `tomllib`), never read with replacement characters.
    public static func parse(bytes: [UInt8]) -> (TOMLDocument, [TOMLSyntaxError]) {
        switch text(bytes) {
        case .success(let text): return parse(text)
        case .failure(let e): return (TOMLDocument(tables: [TOMLTable(name: "", isArrayElement: false, line: 1, entries: [])]), [e])
        }
    }

    /// The bytes as text, or the line of the first byte that is not UTF-8.
    public static func text(_ bytes: [UInt8]) -> Result<String, TOMLSyntaxError> {
        if let s = String(validating: bytes, as: UTF8.self) { return .success(s) }
        // The longest valid prefix ends where the first bad sequence starts.
        var line = 1
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let c):
                if c == "\n" { line += 1 }
                offset += UTF8.width(c)
            case .emptyInput:
                break loop
            case .error:
                let shown = offset < bytes.count ? " (byte 0x\(String(bytes[offset], radix: 16, uppercase: true)))" : ""
                return .failure(TOMLSyntaxError(line: line, message: "the file is not UTF-8 text\(shown); save it as UTF-8"))
            }
        }
        return .failure(TOMLSyntaxError(line: line, message: "the file is not UTF-8 text; save it as UTF-8"))
    }

    /// `s` as a TOML basic string (quotes included) that this reader and `tomllib` both read back
    /// as exactly `s`: quote and backslash escaped, tab, newline and carriage return as `\t`
    /// `\n` `\r`, every other control character as `\uXXXX`. The one writer of strings for the
    /// config (`renderTOML`, pairing).
    public static func quoted(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default:
                if TOMLParser.isControl(c) {
                    let hex = String(c.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out + "\""
    }
}

struct TOMLParser {
    let s: [Unicode.Scalar]
    var i = 0
    var line = 1
    var errors: [TOMLSyntaxError] = []
    var tables: [TOMLTable] = [TOMLTable(name: "", isArrayElement: false, line: 1, entries: [])]
    var seenTables: Set<String> = []

    init(_ text: String) {
        if text.utf8.count > TOMLDocument.textBytesMax {
            s = []
            errors.append(TOMLSyntaxError(line: 1, message: "the file is larger than \(TOMLDocument.textBytesMax) bytes; a config file is a few kilobytes"))
        } else {
            var scalars = Array(text.unicodeScalars)
            if scalars.first == "\u{FEFF}" { scalars.removeFirst() } // a byte-order mark some editors add
            s = scalars
        }
    }

    struct Failure: Error { var message: String }

    var atEnd: Bool { i >= s.count }
    var peek: Unicode.Scalar? { i < s.count ? s[i] : nil }

    mutating func skipSpaces() {
        while let c = peek, c == " " || c == "\t" { i += 1 }
    }

    /// A control character TOML allows in no string or comment (tab is allowed).
    static func isControl(_ c: Unicode.Scalar) -> Bool {
        (c.value < 0x20 && c != "\t") || c.value == 0x7F
    }

    static func shown(_ c: Unicode.Scalar) -> String {
        let hex = String(c.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    mutating func skipComment() throws(Failure) {
        guard peek == "#" else { return }
        while let c = peek, c != "\n" {
            if c == "\r", i + 1 < s.count, s[i + 1] == "\n" { return }
            if Self.isControl(c) { throw Failure(message: "control character \(Self.shown(c)) in a comment; remove it") }
            i += 1
        }
    }

    /// A carriage return must start a CRLF line end (a bare one is not TOML).
    mutating func skipCarriageReturn() throws(Failure) {
        guard peek == "\r" else { return }
        guard i + 1 < s.count, s[i + 1] == "\n" else { throw Failure(message: "a carriage return not followed by a newline; save the file with LF or CRLF line ends") }
        i += 1
    }

    /// Skips spaces, comments and newlines (inside arrays).
    mutating func skipBlank() throws(Failure) {
        while let c = peek {
            if c == " " || c == "\t" {
                i += 1
            } else if c == "\r" {
                try skipCarriageReturn()
            } else if c == "\n" {
                i += 1
                line += 1
            } else if c == "#" {
                try skipComment()
            } else {
                return
            }
        }
    }

    mutating func skipToEndOfLine() {
        while let c = peek, c != "\n" { i += 1 }
    }

    mutating func parseDocument() -> (TOMLDocument, [TOMLSyntaxError]) {
        while !atEnd && errors.count < TOMLDocument.errorsMax {
            let startLine = line
            do throws(Failure) {
                skipSpaces()
                try skipComment()
                guard let c = peek else { break }
                if c == "\r" { try skipCarriageReturn() }
                if peek == "\n" { i += 1; line += 1; continue }
                if c == "[" { try parseHeader() } else { try parseKeyValue() }
                skipSpaces()
                try skipComment()
                try skipCarriageReturn()
                if let d = peek, d != "\n" { throw Failure(message: "unexpected '\(Self.printable(d))' after the value; put one key = value per line (comments start with #)") }
            } catch {
                errors.append(TOMLSyntaxError(line: startLine, message: error.message))
                skipToEndOfLine()
            }
        }
        return (TOMLDocument(tables: tables), errors)
    }

    mutating func parseHeader() throws(Failure) {
        i += 1 // [
        let isArray = peek == "["
        if isArray { i += 1 }
        skipSpaces()
        let name = try parseKey()
        skipSpaces()
        if peek == "." { throw Failure(message: "dotted table names are not supported; use a plain [name]") }
        guard peek == "]" else { throw Failure(message: "expected ']' to close the table header") }
        i += 1
        if isArray {
            guard peek == "]" else { throw Failure(message: "expected ']]' to close the [[\(name)]] header") }
            i += 1
        }
        if name.isEmpty { throw Failure(message: "a table needs a name") }
        if tables[0].entries.contains(where: { $0.key == name }) {
            throw Failure(message: "'\(name)' is a key at the top of the file and cannot also be a table")
        }
        if !isArray {
            if seenTables.contains(name) { throw Failure(message: "table [\(name)] appears twice; merge the two sections") }
            if seenArrayTables.contains(name) { throw Failure(message: "[\(name)] is used after [[\(name)]]; use one form") }
            seenTables.insert(name)
        } else if seenTables.contains(name) {
            throw Failure(message: "[[\(name)]] is used after a [\(name)] table; use one form")
        }
        tables.append(TOMLTable(name: name, isArrayElement: isArray, line: line, entries: []))
        if isArray { seenArrayTables.insert(name) }
    }

    var seenArrayTables: Set<String> = []

    mutating func parseKey() throws(Failure) -> String {
        if peek == "\"" { return try parseBasicString() }
        if peek == "'" { return try parseLiteralString() }
        var key = ""
        while let c = peek, ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" || c == "-" || ("0"..."9").contains(c) {
            key.unicodeScalars.append(c)
            i += 1
        }
        if key.isEmpty {
            throw Failure(message: peek.map { "expected a key (letters, digits, _ or -), found '\(Self.printable($0))'" } ?? "expected a key")
        }
        return key
    }

    mutating func parseKeyValue() throws(Failure) {
        let keyLine = line
        let key = try parseKey()
        skipSpaces()
        if peek == "." { throw Failure(message: "dotted keys are not supported; put '\(key)' keys under a [table] header") }
        guard peek == "=" else { throw Failure(message: "expected '=' after the key '\(key)'") }
        i += 1
        skipSpaces()
        let value = try parseValue(depth: 0)
        var table = tables[tables.count - 1]
        if table.entries.contains(where: { $0.key == key }) {
            let first = table.entries.first { $0.key == key }!.line
            throw Failure(message: "key '\(key)' is set twice (first on line \(first)); keep one")
        }
        table.entries.append(TOMLEntry(key: key, value: value, line: keyLine))
        tables[tables.count - 1] = table
    }

    mutating func parseValue(depth: Int) throws(Failure) -> TOMLValue {
        guard let c = peek, c != "\n", c != "#" else { throw Failure(message: "missing value after '='") }
        switch c {
        case "\"":
            if i + 2 < s.count, s[i + 1] == "\"", s[i + 2] == "\"" { throw Failure(message: "multi-line strings are not supported; use one line") }
            return .string(try parseBasicString())
        case "'":
            return .string(try parseLiteralString())
        case "[":
            return try parseArray(depth: depth)
        case "{":
            throw Failure(message: "inline tables are not supported; use a [table] section")
        default:
            return try parseScalar()
        }
    }

    mutating func parseArray(depth: Int) throws(Failure) -> TOMLValue {
        guard depth < 2 else { throw Failure(message: "arrays nested deeper than 2 are not supported") }
        i += 1 // [
        var items: [TOMLValue] = []
        while true {
            try skipBlank()
            guard let c = peek else { throw Failure(message: "array not closed with ']'") }
            if c == "]" { i += 1; return .array(items) }
            if items.count >= TOMLDocument.arrayElementsMax { throw Failure(message: "more than \(TOMLDocument.arrayElementsMax) array elements") }
            items.append(try parseValue(depth: depth + 1))
            try skipBlank()
            if atEnd { throw Failure(message: "array not closed with ']'") }
            if peek == "," { i += 1; continue }
            if peek == "]" { i += 1; return .array(items) }
            throw Failure(message: "expected ',' or ']' in the array")
        }
    }

    mutating func parseBasicString() throws(Failure) -> String {
        i += 1
        var out = String.UnicodeScalarView()
        while let c = peek {
            i += 1
            if c == "\"" { return String(out) }
            if c == "\n" { break }
            if out.count >= TOMLDocument.stringBytesMax { throw Failure(message: "string longer than \(TOMLDocument.stringBytesMax) characters") }
            if c == "\\" {
                guard let e = peek else { break }
                i += 1
                switch e {
                case "\"": out.append("\"")
                case "\\": out.append("\\")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "b": out.append("\u{08}")
                case "f": out.append("\u{0C}")
                case "u", "U":
                    let n = e == "u" ? 4 : 8
                    guard i + n <= s.count else { throw Failure(message: "incomplete \\\(e) escape") }
                    var hex = ""
                    for k in 0..<n { hex.unicodeScalars.append(s[i + k]) }
                    i += n
                    // Hex digits only (UInt32(_:radix:) would also take a sign).
                    guard hex.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit }), let v = UInt32(hex, radix: 16),
                          let scalar = Unicode.Scalar(v) else { throw Failure(message: "invalid escape \\\(e)\(Self.printable(hex))") }
                    out.append(scalar)
                default: throw Failure(message: "unknown escape '\\\(Self.printable(e))' in a string; write \\\\ for a backslash or use 'literal strings'")
                }
            } else if Self.isControl(c) {
                throw Failure(message: "control character \(Self.shown(c)) in a string; write it as \\u\(Self.shown(c).dropFirst(2))")
            } else {
                out.append(c)
            }
        }
        throw Failure(message: "string not closed with '\"' on the same line")
    }

    mutating func parseLiteralString() throws(Failure) -> String {
        i += 1
        var out = String.UnicodeScalarView()
        while let c = peek {
            i += 1
            if c == "'" { return String(out) }
            if c == "\n" { break }
            if out.count >= TOMLDocument.stringBytesMax { throw Failure(message: "string longer than \(TOMLDocument.stringBytesMax) characters") }
            if Self.isControl(c) {
                throw Failure(message: "control character \(Self.shown(c)) in a 'literal string'; use a \"basic string\" and write it as \\u\(Self.shown(c).dropFirst(2))")
            }
            out.append(c)
        }
        throw Failure(message: "string not closed with \"'\" on the same line")
    }

    mutating func parseScalar() throws(Failure) -> TOMLValue {
        var word = ""
        while let c = peek, c != " ", c != "\t", c != ",", c != "]", c != "\n", c != "\r", c != "#" {
            word.unicodeScalars.append(c)
            i += 1
            if word.unicodeScalars.count > 64 { break }
        }
        if word == "true" { return .boolean(true) }
        if word == "false" { return .boolean(false) }
        if let v = Self.integer(word) { return .integer(v) }
        if let v = Self.float(word) { return .float(v) }
        if word.contains(":") || (word.count >= 10 && word.unicodeScalars.filter({ $0 == "-" }).count == 2) {
            throw Failure(message: "dates and times are not supported")
        }
        if word.unicodeScalars.contains(where: Self.isControl) {
            throw Failure(message: "control character \(Self.shown(word.unicodeScalars.first(where: Self.isControl)!)) in a value")
        }
        if word.first.map({ $0.isLetter }) ?? false {
            throw Failure(message: "'\(word)' is not a value; put text in quotes: \"\(word)\"")
        }
        throw Failure(message: "'\(word)' is not a number, string or boolean")
    }

    /// `s` for an error message: control characters as U+XXXX.
    static func printable(_ s: some StringProtocol) -> String {
        var out = ""
        for c in s.unicodeScalars { if isControl(c) { out += shown(c) } else { out.unicodeScalars.append(c) } }
        return out
    }

    static func printable(_ c: Unicode.Scalar) -> String { isControl(c) ? shown(c) : String(c) }

    /// A TOML integer: decimal with an optional sign and no leading zero, or `0x` hex without a
    /// sign; an underscore only between two digits. Beyond Int64: nil (an error, not a float).
    static func integer(_ w: String) -> Int64? {
        var t = Substring(w)
        if t.hasPrefix("0x") {
            let hex = t.dropFirst(2)
            guard digitsWithUnderscores(hex, hex: true) else { return nil }
            return Int64(String(hex.filter { $0 != "_" }), radix: 16)
        }
        var negative = false
        if t.first == "+" || t.first == "-" { negative = t.first == "-"; t = t.dropFirst() }
        guard digitsWithUnderscores(t, hex: false) else { return nil }
        let digits = t.filter { $0 != "_" }
        if digits.count > 1 && digits.first == "0" { return nil } // leading zeros are not TOML
        // Parsed with its sign, so -9223372036854775808 fits.
        return Int64((negative ? "-" : "") + digits)
    }

    /// A TOML float: an optional sign, an integer part without leading zeros, then a fraction
    /// (`.` and digits), an exponent (`e`, optional sign, digits), or both; underscores only
    /// between digits. (`inf` and `nan` are not read: a config has no use for them.)
    static func float(_ w: String) -> Double? {
        var t = Substring(w)
        if t.first == "+" || t.first == "-" { t = t.dropFirst() }
        let exponentAt = t.firstIndex { $0 == "e" || $0 == "E" }
        let mantissa = exponentAt.map { t[..<$0] } ?? t
        let dot = mantissa.firstIndex(of: ".")
        let integerPart = dot.map { mantissa[..<$0] } ?? mantissa
        guard digitsWithUnderscores(integerPart, hex: false) else { return nil }
        let integerDigits = integerPart.filter { $0 != "_" }
        if integerDigits.count > 1 && integerDigits.first == "0" { return nil } // leading zeros are not TOML
        if let dot {
            guard digitsWithUnderscores(mantissa[mantissa.index(after: dot)...], hex: false) else { return nil }
        }
        if let e = exponentAt {
            var exponent = t[t.index(after: e)...]
            if exponent.first == "+" || exponent.first == "-" { exponent = exponent.dropFirst() }
            guard digitsWithUnderscores(exponent, hex: false) else { return nil }
        }
        guard dot != nil || exponentAt != nil else { return nil }
        return Double(w.filter { $0 != "_" })
    }

    /// One or more ASCII digits (hex digits with `hex`), an underscore only between two of them.
    static func digitsWithUnderscores(_ t: Substring, hex: Bool) -> Bool {
        guard !t.isEmpty else { return false }
        var previousWasDigit = false
        for c in t.unicodeScalars {
            if c == "_" {
                guard previousWasDigit else { return false }
                previousWasDigit = false
            } else if hex ? c.properties.isASCIIHexDigit : ("0"..."9").contains(c) {
                previousWasDigit = true
            } else {
                return false
            }
        }
        return previousWasDigit
    }
}
