import Configuration

/// The TOML reader's document as JSON, shaped as Python's `tomllib` returns it, for the
/// differential test (Tests/oracle/test_toml_differential.py): `{"ok": true, "doc": {...}}` or
/// `{"ok": false, "line": N, "message": "..."}`. Integers are `{"int": "N"}` and floats
/// `{"float": "X"}` (exact); strings escape every scalar outside printable ASCII.
public enum TOMLJSON {
    public static func document(_ bytes: [UInt8]) -> String {
        let (doc, errors) = TOMLDocument.parse(bytes: bytes)
        if let e = errors.first {
            return "{\"ok\": false, \"line\": \(e.line), \"message\": \(string(e.message))}"
        }
        var parts: [String] = []
        var arrays: [String: [String]] = [:]
        var arrayOrder: [String] = []
        for t in doc.tables {
            let body = "{" + t.entries.map { string($0.key) + ": " + value($0.value) }.joined(separator: ", ") + "}"
            if t.name.isEmpty && !t.isArrayElement {
                parts += t.entries.map { string($0.key) + ": " + value($0.value) }
            } else if t.isArrayElement {
                if arrays[t.name] == nil { arrayOrder.append(t.name) }
                arrays[t.name, default: []].append(body)
            } else {
                parts.append(string(t.name) + ": " + body)
            }
        }
        for name in arrayOrder { parts.append(string(name) + ": [" + arrays[name]!.joined(separator: ", ") + "]") }
        return "{\"ok\": true, \"doc\": {" + parts.joined(separator: ", ") + "}}"
    }

    static func value(_ v: TOMLValue) -> String {
        switch v {
        case .string(let s): string(s)
        case .integer(let i): "{\"int\": \"\(i)\"}"
        case .float(let d): "{\"float\": \"\(d)\"}"
        case .boolean(let b): b ? "true" : "false"
        case .array(let items): "[" + items.map(value).joined(separator: ", ") + "]"
        }
    }

    static func string(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20...0x7E: out.unicodeScalars.append(c)
            case 0..<0x10000: out += hex4(c.value)
            default:
                let v = c.value - 0x10000
                out += hex4(0xD800 + (v >> 10)) + hex4(0xDC00 + (v & 0x3FF))
            }
        }
        return out + "\""
    }

    static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - h.count) + h
    }
}
