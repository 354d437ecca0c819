/// A TOML subset, enough for a human-edited config file: `[table]` and `[[array-of-tables]]`
/// headers, `key = value` with bare or quoted keys, basic ("...") and literal ('...') strings,
/// integers (decimal, 0x hex, `_` separators), floats, booleans, arrays (may span lines) and
/// `#` comments. Not supported (reported as errors): dotted keys, inline tables, multi-line
/// strings, dates. Every value keeps its line number.
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

    mutating func skipComment() {
        if peek == "#" { while let c = peek, c != "\n" { i += 1 } }
    }

    /// Skips spaces, comments and newlines (inside arrays).
    mutating func skipBlank() {
        while let c = peek {
            if c == " " || c == "\t" || c == "\r" { i += 1 } else if c == "\n" { i += 1; line += 1 } else if c == "#" { skipComment() } else { return }
        }
    }

    mutating func skipToEndOfLine() {
        while let c = peek, c != "\n" { i += 1 }
    }

    mutating func parseDocument() -> (TOMLDocument, [TOMLSyntaxError]) {
        while !atEnd && errors.count < TOMLDocument.errorsMax {
            skipSpaces()
            skipComment()
            guard let c = peek else { break }
            if c == "\r" { i += 1; continue }
            if c == "\n" { i += 1; line += 1; continue }
            let startLine = line
            do throws(Failure) {
                if c == "[" { try parseHeader() } else { try parseKeyValue() }
                skipSpaces()
                skipComment()
                if peek == "\r" { i += 1 }
                if let d = peek, d != "\n" { throw Failure(message: "unexpected '\(d)' after the value; put one key = value per line (comments start with #)") }
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
        if !isArray {
            if seenTables.contains(name) { throw Failure(message: "table [\(name)] appears twice; merge the two sections") }
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
            throw Failure(message: peek.map { "expected a key (letters, digits, _ or -), found '\($0)'" } ?? "expected a key")
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
            skipBlank()
            guard let c = peek else { throw Failure(message: "array not closed with ']'") }
            if c == "]" { i += 1; return .array(items) }
            if items.count >= TOMLDocument.arrayElementsMax { throw Failure(message: "more than \(TOMLDocument.arrayElementsMax) array elements") }
            items.append(try parseValue(depth: depth + 1))
            skipBlank()
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
                case "u", "U":
                    let n = e == "u" ? 4 : 8
                    guard i + n <= s.count else { throw Failure(message: "incomplete \\\(e) escape") }
                    var hex = ""
                    for k in 0..<n { hex.unicodeScalars.append(s[i + k]) }
                    i += n
                    guard let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else { throw Failure(message: "invalid escape \\\(e)\(hex)") }
                    out.append(scalar)
                default: throw Failure(message: "unknown escape '\\\(e)' in a string; write \\\\ for a backslash or use 'literal strings'")
                }
            } else if c.value < 0x20 && c != "\t" {
                throw Failure(message: "control character in a string")
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
        if word.first.map({ $0.isLetter }) ?? false {
            throw Failure(message: "'\(word)' is not a value; put text in quotes: \"\(word)\"")
        }
        throw Failure(message: "'\(word)' is not a number, string or boolean")
    }

    static func integer(_ w: String) -> Int64? {
        var t = Substring(w)
        var negative = false
        if t.first == "+" || t.first == "-" { negative = t.first == "-"; t = t.dropFirst() }
        guard validUnderscores(t) else { return nil }
        let digits = t.filter { $0 != "_" }
        if digits.hasPrefix("0x") { return Int64(digits.dropFirst(2), radix: 16).map { negative ? -$0 : $0 } }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if digits.count > 1 && digits.first == "0" { return nil } // leading zeros are not TOML
        guard let v = Int64(digits) else { return nil }
        return negative ? -v : v
    }

    static func float(_ w: String) -> Double? {
        var t = Substring(w)
        if t.first == "+" || t.first == "-" { t = t.dropFirst() }
        guard let first = t.first, first.isNumber, let last = t.last, last.isNumber, validUnderscores(t) else { return nil }
        guard t.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "_" || $0 == "+" || $0 == "-") }) else { return nil }
        let integerPart = t.prefix { $0.isNumber || $0 == "_" }
        if integerPart.count > 1 && integerPart.first == "0" { return nil } // leading zeros are not TOML
        return Double(w.filter { $0 != "_" })
    }

    static func validUnderscores(_ t: Substring) -> Bool {
        guard t.first != "_", t.last != "_" else { return false }
        return !t.contains("__")
    }
}
