import Control
import RideModel
import Testing

/// JSONValue: the companion's JSON (the device's stream, the phone's requests, every answer).
/// Strict RFC 8259 in, canonical text out (sorted keys, integers as integers).
struct JSONValueTests {
    static func parse(_ s: String) -> JSONValue? { JSONValue.parse(Array(s.utf8)) }

    /// The reason a text is refused, or nil when it is accepted.
    static func refusal(_ bytes: [UInt8]) -> JSONValue.ParseError? {
        do { _ = try JSONValue(parsing: bytes); return nil } catch { return error }
    }

    /// Equal, with strings compared scalar by scalar (String's == treats "é" and "e\u{301}" as
    /// one, which would hide a parser that normalized).
    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return Array(x.unicodeScalars) == Array(y.unicodeScalars)
        case (.number(let x), .number(let y)): return x == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { k, v in
                y.first { Array($0.key.unicodeScalars) == Array(k.unicodeScalars) }.map { identical(v, $0.value) } ?? false
            }
        default: return a == b
        }
    }

    // MARK: Known documents

    @Test func aDocumentWithEveryKindOfValueAndWhitespaceEverywhere() {
        let text = " \t\r\n{ \"metrics\" : { \"speed\" : 25.3 , \"power\" : null } ,\n\"ok\":true,\"no\" :false, \"seq\": 42,"
            + " \"list\" : [ 1 , -2.5 , \"x\" , [ ] , { } ] , \"empty\" : \"\" } \n"
        let expected: JSONValue = [
            "metrics": ["speed": 25.3, "power": .null], "ok": true, "no": false, "seq": 42,
            "list": [1, -2.5, "x", [], [:]], "empty": "",
        ]
        #expect(Self.parse(text) == expected)
        #expect(Self.parse(text)?["metrics"]?["speed"]?.double == 25.3)
    }

    @Test func aTopLevelScalarIsAValue() {
        #expect(Self.parse("null") == .null)
        #expect(Self.parse(" true ") == .bool(true))
        #expect(Self.parse("\"s\"") == .string("s"))
        #expect(Self.parse("-7") == .number(-7))
    }

    @Test func serializedTextIsCompactWithKeysSorted() {
        // Eight keys: an unsorted writer matches this order by chance once in 40 320.
        let v: JSONValue = [
            "zeta": 1, "alpha": [true, .null, 12.5, "q"], "mid": [:], "beta": [], "Upper": false, "_u": -3,
            "type": "snapshot", "a1": ["nested": ["k": "v", "b": 2]],
        ]
        #expect(v.serialized() == #"{"Upper":false,"_u":-3,"a1":{"nested":{"b":2,"k":"v"}},"alpha":[true,null,12.5,"q"],"beta":[],"mid":{},"type":"snapshot","zeta":1}"#)
    }

    @Test func literalsBuildTheValuesTheySay() {
        let v: JSONValue = ["s": "x\(1 + 1)", "i": 3, "d": 0.5, "b": true, "a": [1, "two"], "n": .null]
        #expect(v == .object([
            "s": .string("x2"), "i": .number(3), "d": .number(0.5), "b": .bool(true),
            "a": .array([.number(1), .string("two")]), "n": .null,
        ]))
        #expect(JSONValue.integer(UInt8(200)) == .number(200))
    }

    @Test func accessorsAnswerOnlyForTheirKind() {
        let v: JSONValue = ["o": ["k": 1], "a": [1], "s": "x", "t": true, "n": .null, "d": 1.5]
        #expect(v["o"]?.object == ["k": 1])
        #expect(v["a"]?.array == [1])
        #expect(v["s"]?.string == "x")
        #expect(v["t"]?.bool == true)
        #expect(v["n"]?.isNull == true)
        #expect(v["d"]?.double == 1.5)
        #expect(v["missing"] == nil)
        #expect(v["a"]?["k"] == nil, "an array has no members")
        // Each accessor refuses the other kinds: a number is not a boolean, `true` is not 1.
        #expect(v["t"]?.double == nil && v["t"]?.int64 == nil && v["d"]?.bool == nil)
        #expect(v["s"]?.object == nil && v["o"]?.array == nil && v["a"]?.string == nil && v["s"]?.isNull == false)
    }

    // MARK: Strings

    @Test func everyEscapeReadsAsItsCharacter() {
        #expect(Self.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(Self.parse(#""\u0041\u00e9\u00E9\u20AC\u0000\uFFFF""#) == .string("Aéé€\u{0}\u{FFFF}"))
        #expect(Self.parse(#""a\u0301""#).map { Self.identical($0, .string("a\u{301}")) } == true, "kept as written, not normalized")
    }

    @Test func surrogatePairsReadAsOneScalar() {
        #expect(Self.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(Self.parse(#""\ud800\udc00""#) == .string("\u{10000}"))
        #expect(Self.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(Self.parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
    }

    @Test func rawUTF8AndDeleteAreTakenAsTheyAre() {
        #expect(Self.parse("\"é😀\u{7F}\u{2028}\"") == .string("é😀\u{7F}\u{2028}"))
    }

    @Test func stringsAreEscapedAsJSONRequiresAndNoMore() {
        #expect(JSONValue.string("a\"b\\c/d").serialized() == #""a\"b\\c/d""#)
        #expect(JSONValue.string("\n\r\t\u{0}\u{1F}\u{08}").serialized() == #""\n\r\t\u0000\u001f\u0008""#)
        #expect(JSONValue.string("é😀\u{7F}").serialized() == "\"é😀\u{7F}\"")
        // Every control character written escaped reads back as itself.
        for c in 0..<0x20 {
            let s = String(Unicode.Scalar(UInt8(c)))
            let text = JSONValue.string(s).serialized()
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 }, "U+\(c) written raw")
            #expect(Self.parse(text) == .string(s))
        }
        #expect(JSONValue.object(["k\"\n": 1]).serialized() == #"{"k\"\n":1}"#)
    }

    // MARK: Numbers

    @Test func numbersReadPerTheGrammar() {
        #expect(Self.parse("0") == .number(0))
        #expect(Self.parse("-0")?.double.map { $0 == 0 && $0.sign == .minus } == true)
        #expect(Self.parse("1e3") == .number(1000))
        #expect(Self.parse("1E+3") == .number(1000))
        #expect(Self.parse("2e-0") == .number(2))
        #expect(Self.parse("1.5e-7") == .number(1.5e-7))
        #expect(Self.parse("-12.50") == .number(-12.5))
        #expect(Self.parse("0.1") == .number(0.1))
        #expect(Self.parse("9007199254740993") == .number(9_007_199_254_740_992), "rounded to the nearest Double")
        #expect(Self.parse("123456789012345678901234567890") == .number(1.2345678901234568e29))
        #expect(Self.parse("1e-400") == .number(0), "underflow is zero")
        #expect(Self.parse("1.7976931348623157e308") == .number(.greatestFiniteMagnitude))
    }

    @Test func integralNumbersBelow2To53AreWrittenAsIntegers() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (12, "12"), (1e3, "1000"), (-42, "-42"), (1_704_067_200_000, "1704067200000"),
            (9_007_199_254_740_991, "9007199254740991"), (-9_007_199_254_740_991, "-9007199254740991"),
            // From 2^53 on a Double is not every integer: the shortest text that reads back.
            (9_007_199_254_740_992, "9007199254740992.0"), (1e16, "1e+16"), (1e300, "1e+300"),
            (12.5, "12.5"), (0.1, "0.1"), (1.5e-7, "1.5e-07"), (-2.25, "-2.25"), (5e-324, "5e-324"),
        ]
        for (d, text) in cases {
            #expect(JSONValue.number(d).serialized() == text, "\(d)")
            #expect(Self.parse(text) == .number(d), "\(text) reads back")
        }
    }

    @Test func nonFiniteNumbersAreWrittenAsNull() {
        #expect(JSONValue.number(.nan).serialized() == "null")
        #expect(JSONValue.number(.infinity).serialized() == "null")
        #expect(JSONValue.array([.number(-.infinity), 1]).serialized() == "[null,1]")
    }

    @Test func int64IsOnlyAWholeNumberInRange() {
        #expect(JSONValue.number(9_007_199_254_740_992).int64 == 9_007_199_254_740_992)
        #expect(JSONValue.number(-9_223_372_036_854_775_808).int64 == .min)
        #expect(JSONValue.number(0x1p63).int64 == nil, "2^63")
        #expect(JSONValue.number(1.5).int64 == nil)
        #expect(JSONValue.number(-0.0).int64 == 0)
        #expect(Self.parse("1704067200000")?.int64 == 1_704_067_200_000)
        #expect(Self.parse("1.7040672e12")?.int64 == 1_704_067_200_000)
    }

    // MARK: Refused

    /// (what is wrong, the text, the reason, where it is found).
    static let malformed: [(String, [UInt8], JSONValue.ParseError.Reason, Int)] = [
        ("trailing comma in an array", Array("[1,]".utf8), .unexpectedByte, 3),
        ("trailing comma in an object", Array(#"{"a":1,}"#.utf8), .unexpectedByte, 7),
        ("two commas", Array("[1,,2]".utf8), .unexpectedByte, 3),
        ("no comma", Array("[1 2]".utf8), .unexpectedByte, 3),
        ("no colon", Array(#"{"a" 1}"#.utf8), .unexpectedByte, 5),
        ("unquoted key", Array("{a:1}".utf8), .unexpectedByte, 1),
        ("single quotes", Array("'a'".utf8), .unexpectedByte, 0),
        ("wrong closer", Array("[1}".utf8), .unexpectedByte, 2),
        ("leading zero", Array("01".utf8), .invalidNumber, 1),
        ("negative leading zero", Array("-01".utf8), .invalidNumber, 2),
        ("double zero", Array("00".utf8), .invalidNumber, 1),
        ("leading dot", Array(".5".utf8), .unexpectedByte, 0),
        ("leading plus", Array("+1".utf8), .unexpectedByte, 0),
        ("dot without digits", Array("1.x".utf8), .invalidNumber, 2),
        ("ends after the dot", Array("1.".utf8), .unexpectedEnd, 2),
        ("exponent without digits", Array("1e+".utf8), .unexpectedEnd, 3),
        ("exponent with a letter", Array("1eX".utf8), .invalidNumber, 2),
        ("minus alone", Array("-".utf8), .unexpectedEnd, 1),
        ("-Infinity", Array("-Infinity".utf8), .invalidNumber, 1),
        ("NaN", Array("NaN".utf8), .unexpectedByte, 0),
        ("beyond Double", Array("[1e400]".utf8), .numberOutOfRange, 1),
        ("beyond Double, negative", Array("-1e400".utf8), .numberOutOfRange, 0),
        ("unterminated string", Array(#""abc"#.utf8), .unexpectedEnd, 4),
        ("unterminated array", Array("[1".utf8), .unexpectedEnd, 2),
        ("unterminated object", Array(#"{"a":1"#.utf8), .unexpectedEnd, 6),
        ("backslash at the end", Array(#""\"#.utf8), .unexpectedEnd, 2),
        ("unknown escape", Array(#""\x""#.utf8), .invalidEscape, 2),
        ("escaped single quote", Array(#""\'""#.utf8), .invalidEscape, 2),
        ("capital U escape", Array(#""\U0041""#.utf8), .invalidEscape, 2),
        ("short \\u escape", Array(#""\u12""#.utf8), .invalidEscape, 5),
        ("\\u escape with a non-hex digit", Array(#""\u12G4""#.utf8), .invalidEscape, 5),
        ("lone high surrogate", Array(#""\uD800""#.utf8), .loneSurrogate, 1),
        ("lone low surrogate", Array(#""\uDC00""#.utf8), .loneSurrogate, 1),
        ("high surrogate then a letter", Array(#""\uD800\u0041""#.utf8), .loneSurrogate, 1),
        ("two high surrogates", Array(#""\uD83D\uD83D""#.utf8), .loneSurrogate, 1),
        ("high surrogate then text", Array(#""\uD83Dx""#.utf8), .loneSurrogate, 1),
        ("raw line break in a string", Array("\"a\nb\"".utf8), .controlCharacter, 2),
        ("raw tab in a string", Array("\"a\tb\"".utf8), .controlCharacter, 2),
        ("a byte that is not UTF-8", [0x22, 0xFF, 0x22], .invalidUTF8, 0),
        ("overlong UTF-8", [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8, 0),
        ("UTF-8 of a surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, 0),
        ("byte-order mark", [0xEF, 0xBB, 0xBF] + Array("{}".utf8), .unexpectedByte, 0),
        ("empty input", [], .unexpectedEnd, 0),
        ("only whitespace", Array(" \n\t\r".utf8), .unexpectedEnd, 4),
        ("form feed is not whitespace", Array("\u{0C}1".utf8), .unexpectedByte, 0),
        ("cut-off literal", Array("nul".utf8), .unexpectedEnd, 3),
        ("capitalized literal", Array("True".utf8), .unexpectedByte, 0),
        ("garbage after a number", Array("1 2".utf8), .trailingData, 2),
        ("garbage after an object", Array("{} x".utf8), .trailingData, 3),
        ("letters after a literal", Array("truex".utf8), .trailingData, 4),
        ("a comment after the value", Array("[1] // c".utf8), .trailingData, 4),
        ("a second value", Array("{}{}".utf8), .trailingData, 2),
        ("arrays nested one deeper than depthMax", Array(String(repeating: "[", count: JSONValue.depthMax + 1).utf8)
            + Array(String(repeating: "]", count: JSONValue.depthMax + 1).utf8), .tooDeep, JSONValue.depthMax),
        ("objects nested one deeper than depthMax", Array((String(repeating: #"{"a":"#, count: JSONValue.depthMax + 1) + "1"
            + String(repeating: "}", count: JSONValue.depthMax + 1)).utf8), .tooDeep, 5 * JSONValue.depthMax),
    ]

    @Test(arguments: malformed.indices)
    func aMalformedTextIsRefusedForItsReasonWhereItIs(_ i: Int) {
        let (what, bytes, reason, offset) = Self.malformed[i]
        #expect(Self.refusal(bytes) == JSONValue.ParseError(reason, at: offset), "\(what)")
        #expect(JSONValue.parse(bytes) == nil, "\(what)")
    }

    @Test func nestingUpToDepthMaxIsRead() {
        let n = JSONValue.depthMax
        let arrays = String(repeating: "[", count: n) + String(repeating: "]", count: n)
        var expected: JSONValue = []
        for _ in 1..<n { expected = [expected] }
        #expect(Self.parse(arrays) == expected)
        let mixed = String(repeating: #"{"a":["#, count: n / 2) + "null" + String(repeating: "]}", count: n / 2)
        #expect(Self.parse(mixed) != nil)
        #expect(Self.parse(#"{"a":["# + mixed + "]}") == nil, "two levels more")
    }

    @Test func aRepeatedMemberNameKeepsTheLast() {
        #expect(Self.parse(#"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test func theErrorSaysWhereAndWhat() {
        #expect(JSONValue.ParseError(.trailingData, at: 2).description == "invalid JSON at byte 2: more after the value")
    }

    // MARK: Property: serialize → parse

    /// A random value of at most `depth` levels: every kind, numbers from whole to any finite
    /// bit pattern, strings of any scalars (controls, quotes, backslashes, astral planes).
    static func randomValue(_ r: inout SplitMix64, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &r) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &r))
        case 2: return .number(Double(Int64.random(in: -(1 << 60)...(1 << 60), using: &r) >> Int64.random(in: 0...60, using: &r)))
        case 3:
            var d: Double
            repeat { d = Double(bitPattern: r.next()) } while !d.isFinite
            return .number(d)
        case 4: return .number(Double(Int.random(in: -100_000...100_000, using: &r)) / 100)
        case 5: return .string(randomString(&r))
        case 6: return .array((0..<Int.random(in: 0...5, using: &r)).map { _ in randomValue(&r, depth: depth - 1) })
        default:
            var o: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &r) { o[randomString(&r)] = randomValue(&r, depth: depth - 1) }
            return .object(o)
        }
    }

    static func randomString(_ r: inout SplitMix64) -> String {
        let pools: [ClosedRange<UInt32>] = [0x00...0x1F, 0x20...0x7F, 0x22...0x22, 0x5C...0x5C, 0x80...0x7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &r) {
            let pool = pools[Int.random(in: 0..<pools.count, using: &r)]
            s.append(Unicode.Scalar(UInt32.random(in: pool, using: &r))!)
        }
        return String(s)
    }

    @Test(arguments: [1, 2, 3, 0xB1C0_FFEE] as [UInt64])
    func randomValuesSurviveSerializeThenParse(seed: UInt64) {
        var r = SplitMix64(seed: seed)
        for n in 0..<300 {
            let v = Self.randomValue(&r, depth: 5)
            let text = v.serialized()
            let back = JSONValue.parse(Array(text.utf8))
            #expect(back.map { Self.identical($0, v) } == true, "seed \(seed), value \(n): \(text)")
            #expect(back?.serialized() == text, "seed \(seed), value \(n): the same text again")
        }
    }
}
