/// A minimal JSON writer (no Foundation): objects and arrays written in order, so output is
/// byte-for-byte repeatable. Numbers are written with a fixed number of decimals.
public struct JSONWriter {
    public private(set) var text = ""
    private var needsComma: [Bool] = [false]
    private let indentStep: String
    private var depth = 0

    public init(pretty: Bool = true) { indentStep = pretty ? "  " : "" }

    private var pretty: Bool { !indentStep.isEmpty }

    private mutating func separator() {
        if needsComma[needsComma.count - 1] { text += "," }
        if pretty && depth > 0 { text += "\n" + String(repeating: indentStep, count: depth) }
        needsComma[needsComma.count - 1] = true
    }

    private mutating func key(_ k: String?) {
        separator()
        if let k { text += Self.quote(k) + (pretty ? ": " : ":") }
    }

    public mutating func beginObject(_ k: String? = nil) { key(k); text += "{"; depth += 1; needsComma.append(false) }
    public mutating func endObject() { close("}") }
    public mutating func beginArray(_ k: String? = nil) { key(k); text += "["; depth += 1; needsComma.append(false) }
    public mutating func endArray() { close("]") }

    private mutating func close(_ c: String) {
        let had = needsComma.removeLast()
        depth -= 1
        if pretty && had { text += "\n" + String(repeating: indentStep, count: depth) }
        text += c
    }

    public mutating func string(_ k: String?, _ v: String?) { key(k); text += v.map(Self.quote) ?? "null" }
    public mutating func bool(_ k: String?, _ v: Bool?) { key(k); text += v.map { $0 ? "true" : "false" } ?? "null" }
    public mutating func int(_ k: String?, _ v: Int64?) { key(k); text += v.map { String($0) } ?? "null" }
    public mutating func number(_ k: String?, _ v: Double?, decimals: Int = 3) {
        key(k)
        guard let v, v.isFinite else { text += "null"; return }
        text += Self.format(v, decimals: decimals)
    }
    /// Inserts already-encoded JSON.
    public mutating func raw(_ k: String?, _ json: String) { key(k); text += json }

    /// Fixed-point decimal text, trailing zeros trimmed ("12.5", "3", "-0.25").
    public static func format(_ v: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(v) * scale).rounded()
        guard scaled < 9e15 else { return String(v) }
        let n = Int64(scaled)
        let whole = n / Int64(scale)
        var frac = decimals > 0 ? String(n % Int64(scale)) : ""
        while frac.count < decimals { frac = "0" + frac }
        while frac.hasSuffix("0") { frac.removeLast() }
        let sign = v < 0 && n != 0 ? "-" : ""
        return frac.isEmpty ? "\(sign)\(whole)" : "\(sign)\(whole).\(frac)"
    }

    public static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
