import Configuration
import Testing
import TestSupport

/// The reader takes only what TOML 1.0 (and the bridge's `tomllib`) takes, and the one writer of
/// strings writes what both read back unchanged (issue 27). The differential test against
/// tomllib itself is Tests/oracle/test_toml_differential.py.
struct TOMLGrammarTests {
    /// Documents tomllib refuses (each was accepted before issue 27), and the line.
    static let refused: [(String, Int)] = [
        ("a = 'x\u{7F}y'\n", 1),
        ("a = 1\nb = \"x\u{7F}y\"\n", 2),
        ("a = 1\n# DEL \u{7F} here\n", 2),
        ("a = 'tab\tok but \u{01} not'\n", 1),
        ("# ok\na = 1 # \u{0}\n", 2),
        ("a = 1\rb = 2\n", 1),
        ("a = [1,\r2]\n", 1),
        ("a = 0x_1\n", 1),
        ("a = -0x1\n", 1),
        ("a = +0x1\n", 1),
        ("a = 0x+1\n", 1),
        ("a = 1_.5\n", 1),
        ("a = 1._5\n", 1),
        ("a = 1.e5\n", 1),
        ("a = 1e_5\n", 1),
        ("a = 9223372036854775808\n", 1),
        ("a = \"\\u+123\"\n", 1),
        ("[[a]]\n[a]\n", 2),
        ("a = 1\n[a]\n", 2),
        ("[\"\"]\nx = 1\n", 1),
    ]

    @Test(arguments: Self.refused.indices)
    func whatTomllibRefusesIsRefusedOnItsLine(_ i: Int) {
        let (text, line) = Self.refused[i]
        let (_, errors) = TOMLDocument.parse(text)
        #expect(errors.first?.line == line, "\(Array(text.unicodeScalars)): \(errors)")
    }

    /// What TOML 1.0 reads, read to the same values.
    @Test func whatTomlReadsIsReadTheSame() throws {
        let text = """
            a = 1_000
            b = -9223372036854775808
            c = 0xDEAD_beef
            d = 1e05
            e = 1.5e1_0
            f = -0.0
            g = "\\b\\f\\t\\u00e9\\U0001F600"
            h = 'tab\there'\r
            i = [1, 2.5, "x", [true]]

            """
        let (doc, errors) = TOMLDocument.parse(text)
        #expect(errors.isEmpty, "\(errors)")
        let values = Dictionary(uniqueKeysWithValues: doc.tables[0].entries.map { ($0.key, $0.value) })
        #expect(values["a"] == .integer(1_000))
        #expect(values["b"] == .integer(.min))
        #expect(values["c"] == .integer(0xDEAD_BEEF))
        #expect(values["d"] == .float(100_000))
        #expect(values["e"] == .float(1.5e10))
        #expect(values["g"] == .string("\u{8}\u{C}\té😀"))
        #expect(values["h"] == .string("tab\there"))
        #expect(values["i"] == .array([.integer(1), .float(2.5), .string("x"), .array([.boolean(true)])]))
    }

    @Test func bytesThatAreNotUTF8AreAnErrorOnTheirLine() {
        let bytes = Array("[bike]\nx = 1\n# caf".utf8) + [0xE9] + Array("\n".utf8)
        let (_, errors) = TOMLDocument.parse(bytes: bytes)
        #expect(errors.count == 1 && errors[0].line == 3 && errors[0].message.contains("UTF-8"), "\(errors)")
        guard case .failure(let e) = ConfigLoader.load(bytes: bytes) else { Issue.record("loaded"); return }
        #expect(e.errors.first?.line == 3)
    }

    /// Any string, control characters and all, is written so that it reads back unchanged, with no
    /// raw control character in the file.
    @Test func theWriterRoundTripsEveryString() {
        var rng = SeededRandom(seed: 27)
        let specials: [UInt32] = [0, 1, 8, 9, 10, 13, 0x1B, 0x1F, 0x22, 0x27, 0x5C, 0x7F, 0x80, 0x9F, 0xA0, 0x301, 0x2028, 0xFEFF, 0x1F600, 0x10FFFF]
        for _ in 0..<2_000 {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int(rng.next() % 24) {
                let pick = rng.next()
                let v: UInt32 = pick % 3 == 0 ? specials[Int(pick / 3 % UInt64(specials.count))] : UInt32((pick >> 8) % 0x11_0000)
                if let c = Unicode.Scalar(v % 0x11_0000) { s.append(c) }
            }
            let original = String(s)
            let written = TOMLDocument.quoted(original)
            #expect(!written.unicodeScalars.contains { $0.value == 0x7F || ($0.value < 0x20 && $0.value != 9) })
            let (doc, errors) = TOMLDocument.parse("k = " + written + "\n")
            #expect(errors.isEmpty, "\(Array(original.unicodeScalars)): \(errors)")
            guard case .string(let back)? = doc.tables[0].entries.first?.value else { continue }
            #expect(Array(back.unicodeScalars) == Array(original.unicodeScalars))
        }
    }

    /// Issue 27's case: a BLE name with a DEL byte, paired, leaves a file both readers take.
    @Test func aNameWithADelIsPairedIntoAFileTomllibReads() throws {
        let text = try SensorPairing.pairing(.ble(address: "C0:FF:EE:00:00:01"), role: .heartRate, name: "Strap\u{7F}\u{1}\"x\"\\",
                                             comment: "paired\u{7F} on the unit", in: "[training]\nauto_pause = false\n")
        #expect(!text.unicodeScalars.contains { $0.value == 0x7F || ($0.value < 0x20 && $0 != "\n") }, "\(text)")
        guard case .success(let config) = ConfigLoader.load(text: text) else { Issue.record("does not load: \(text)"); return }
        #expect(config.sensors.first?.name == "Strap\u{7F}\u{1}\"x\"\\")
    }
}
