/// A small, bounded, non-validating XML tokenizer for course files (GPX, TCX): elements with
/// their attributes, text (with CDATA), the five predefined entities and character references.
/// It never expands anything else: a DOCTYPE (with any internal subset) is skipped, and a
/// reference to an entity it declared is an error, so an entity bomb ("billion laughs") or an
/// external entity cannot make it read or grow anything. Comments and processing instructions are
/// skipped. Depth, name, attribute and text sizes are bounded (`Limits`); the input is read in
/// place, and what it returns is bounded by the input's size.
public struct XMLTokenizer {
    public enum Limits {
        public static let depthMax = 64
        public static let nameBytesMax = 256
        public static let attributesMax = 64
        /// One text node or attribute value (a GPX `<desc>` is a few hundred bytes).
        public static let textBytesMax = 1 << 20
    }

    public struct Attribute: Sendable, Hashable {
        /// The name without its namespace prefix ("lat"; "xsi:schemaLocation" → "schemaLocation").
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public enum Event: Sendable, Hashable {
        /// An element starts (`empty`: `<x/>`, whose end follows at once as `.end`). The name is
        /// the local name (namespace prefix removed).
        case start(name: String, attributes: [Attribute])
        case end(name: String)
        case text(String)
    }

    /// What is wrong, and on which line.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var line: Int
        public var problem: String
        public var description: String { "line \(line): \(problem)" }
    }

    let bytes: [UInt8]
    var i = 0
    var line = 1
    var stack: [String] = []
    var pendingEnd: String?
    var sawRoot = false
    public private(set) var finished = false

    public init(_ bytes: [UInt8]) throws(Failure) {
        self.bytes = bytes
        if bytes.count >= 2 && ((bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE)) {
            throw Failure(line: 1, problem: "the file is UTF-16; save it as UTF-8 (course files are read as UTF-8)")
        }
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { i = 3 }
    }

    func fail(_ problem: String) -> Failure { Failure(line: line, problem: problem) }

    /// The next event, or nil at the end of the document (after the root element closed).
    public mutating func next() throws(Failure) -> Event? {
        if let e = pendingEnd {
            pendingEnd = nil
            stack.removeLast()
            if stack.isEmpty { finished = true }
            return .end(name: e)
        }
        while i < bytes.count {
            if bytes[i] != UInt8(ascii: "<") {
                let text = try readText()
                if stack.isEmpty {
                    // Only white space may stand outside the root element.
                    guard text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else {
                        throw fail(sawRoot ? "text after the root element" : "text before the root element: this is not an XML document")
                    }
                    continue
                }
                return .text(text)
            }
            // Markup.
            if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
                continue
            }
            if starts(with: "<![CDATA[") {
                guard !stack.isEmpty else { throw fail("CDATA outside the root element") }
                i += 9
                let start = i
                while i < bytes.count && !starts(with: "]]>") { if bytes[i] == 0x0A { line += 1 }; i += 1 }
                guard i < bytes.count else { throw fail("unterminated CDATA section") }
                guard i - start <= Limits.textBytesMax else { throw fail("a CDATA section longer than \(Limits.textBytesMax) bytes") }
                let text = String(decoding: bytes[start..<i], as: UTF8.self)
                i += 3
                return .text(text)
            }
            if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
                continue
            }
            if starts(with: "<!DOCTYPE") {
                guard !sawRoot else { throw fail("a DOCTYPE after the root element") }
                try skipDoctype()
                continue
            }
            if starts(with: "</") {
                i += 2
                let name = try readName()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ">") else { throw fail("'>' expected after </\(name)") }
                i += 1
                guard let open = stack.last else { throw fail("</\(name)> closes nothing") }
                guard open == name else { throw fail("</\(name)> closes <\(open)>") }
                stack.removeLast()
                if stack.isEmpty { finished = true }
                return .end(name: localName(name))
            }
            if starts(with: "<!") { throw fail("unsupported markup '<!' (only comments, CDATA and a DOCTYPE before the root)") }
            // A start tag.
            i += 1
            guard !(stack.isEmpty && sawRoot) else { throw fail("a second root element") }
            let name = try readName()
            var attributes: [Attribute] = []
            while true {
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated start tag <\(name)") }
                if bytes[i] == UInt8(ascii: ">") { i += 1; break }
                if bytes[i] == UInt8(ascii: "/") {
                    guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ">") else { throw fail("'/>' expected in <\(name)") }
                    i += 2
                    pendingEnd = localName(name)
                    break
                }
                let an = try readName()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "=") else { throw fail("'=' expected after attribute \(an) of <\(name)>") }
                i += 1
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") else {
                    throw fail("attribute \(an) of <\(name)> has no quoted value")
                }
                let quote = bytes[i]
                i += 1
                let value = try readUntil(quote, what: "attribute \(an)")
                i += 1
                guard attributes.count < Limits.attributesMax else { throw fail("more than \(Limits.attributesMax) attributes on <\(name)>") }
                attributes.append(Attribute(name: localName(an), value: value))
            }
            guard stack.count < Limits.depthMax else { throw fail("elements nested deeper than \(Limits.depthMax)") }
            stack.append(name)
            sawRoot = true
            return .start(name: localName(name), attributes: attributes)
        }
        guard stack.isEmpty else { throw fail("the file ends inside <\(stack.last!)> (truncated?)") }
        guard sawRoot else { throw fail("no root element: this is not an XML document") }
        finished = true
        return nil
    }

    func starts(with s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard i + n <= bytes.count else { return false }
        return s.withUTF8Buffer { p in
            for k in 0..<n where bytes[i + k] != p[k] { return false }
            return true
        }
    }

    mutating func skip(past end: StaticString, what: String) throws(Failure) {
        while i < bytes.count && !starts(with: end) { if bytes[i] == 0x0A { line += 1 }; i += 1 }
        guard i < bytes.count else { throw fail("unterminated \(what)") }
        i += end.utf8CodeUnitCount
    }

    /// `<!DOCTYPE name ... [ internal subset ]>`: skipped whole, declarations unread (quoted
    /// strings and comments inside may hold '>' or ']').
    mutating func skipDoctype() throws(Failure) {
        var inSubset = false
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x0A { line += 1 }
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                i += 1
                while i < bytes.count && bytes[i] != b { if bytes[i] == 0x0A { line += 1 }; i += 1 }
            } else if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
                continue
            } else if b == UInt8(ascii: "[") {
                inSubset = true
            } else if b == UInt8(ascii: "]") {
                inSubset = false
            } else if b == UInt8(ascii: ">") && !inSubset {
                i += 1
                return
            }
            i += 1
        }
        throw fail("unterminated DOCTYPE")
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D {
            if bytes[i] == 0x0A { line += 1 }
            i += 1
        }
    }

    mutating func readName() throws(Failure) -> String {
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D || b == UInt8(ascii: ">") || b == UInt8(ascii: "/")
                || b == UInt8(ascii: "=") || b == UInt8(ascii: "<") || b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") { break }
            i += 1
            guard i - start <= Limits.nameBytesMax else { throw fail("a name longer than \(Limits.nameBytesMax) bytes") }
        }
        guard i > start else { throw fail("a name was expected") }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    func localName(_ n: String) -> String {
        guard let colon = n.utf8.lastIndex(of: UInt8(ascii: ":")) else { return n }
        return String(n[n.utf8.index(after: colon)...])
    }

    /// Character data up to the next '<', references resolved.
    mutating func readText() throws(Failure) -> String {
        try readUntil(UInt8(ascii: "<"), what: "text")
    }

    /// Bytes up to `stop` (not consumed), with references resolved.
    mutating func readUntil(_ stop: UInt8, what: String) throws(Failure) -> String {
        var out: [UInt8] = []
        let start = i
        while i < bytes.count && bytes[i] != stop {
            let b = bytes[i]
            if b == UInt8(ascii: "<") { throw fail("'<' inside \(what)") }
            if b == 0x0A { line += 1 }
            if b == UInt8(ascii: "&") {
                try reference(into: &out)
            } else {
                out.append(b)
                i += 1
            }
            guard i - start <= Limits.textBytesMax else { throw fail("\(what) longer than \(Limits.textBytesMax) bytes") }
        }
        if stop != UInt8(ascii: "<") && i >= bytes.count { throw fail("unterminated \(what)") }
        return String(decoding: out, as: UTF8.self)
    }

    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&#N;` `&#xH;`; anything else is an error.
    mutating func reference(into out: inout [UInt8]) throws(Failure) {
        let start = i
        i += 1
        while i < bytes.count && bytes[i] != UInt8(ascii: ";") && i - start < 12 { i += 1 }
        guard i < bytes.count, bytes[i] == UInt8(ascii: ";") else { throw fail("'&' that starts no reference (write &amp;)") }
        let name = Array(bytes[(start + 1)..<i])
        i += 1
        switch name {
        case Array("amp".utf8): out.append(UInt8(ascii: "&"))
        case Array("lt".utf8): out.append(UInt8(ascii: "<"))
        case Array("gt".utf8): out.append(UInt8(ascii: ">"))
        case Array("quot".utf8): out.append(UInt8(ascii: "\""))
        case Array("apos".utf8): out.append(UInt8(ascii: "'"))
        default:
            guard name.first == UInt8(ascii: "#") else {
                throw fail("the entity &\(String(decoding: name, as: UTF8.self)); is not expanded: course files may use only &amp; &lt; &gt; &quot; &apos; and character references (entities declared in a DOCTYPE are refused)")
            }
            var value: UInt32 = 0
            let hex = name.count > 1 && (name[1] == UInt8(ascii: "x") || name[1] == UInt8(ascii: "X"))
            let digits = name.dropFirst(hex ? 2 : 1)
            guard !digits.isEmpty else { throw fail("an empty character reference") }
            for d in digits {
                let v: UInt32
                switch d {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(d - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f") where hex: v = UInt32(d - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F") where hex: v = UInt32(d - UInt8(ascii: "A") + 10)
                default: throw fail("a malformed character reference")
                }
                value = value * (hex ? 16 : 10) + v
                guard value <= 0x10FFFF else { throw fail("a character reference beyond Unicode") }
            }
            guard value != 0, let scalar = Unicode.Scalar(value) else { throw fail("a character reference to no character") }
            out.append(contentsOf: Array(String(Character(scalar)).utf8))
        }
    }
}
