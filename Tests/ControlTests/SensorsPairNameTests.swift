import Control
import RideModel
import Testing

/// A sensor's name in a `sensors pair` line (typed, or heard over the air and offered as the
/// default) with control characters: a line break would end the request and make the rest a
/// command of its own ("HR\ndiscard"), so such a name is refused with a clear reason before
/// anything is sent, and a line holding the others is refused by the device; printable names,
/// however hostile to a config file, arrive whole.
struct SensorsPairNameTests {
    static let controls: [Unicode.Scalar] = (0..<0x20).compactMap(Unicode.Scalar.init) + ["\u{7F}"]

    @Test func everyControlCharacterInANameIsRefusedWithTheCharacterNamed() {
        for c in Self.controls {
            let name = "HR" + String(c) + "discard"
            let why = SensorsControl.nameRefusal(name)
            #expect(why != nil, "U+\(String(c.value, radix: 16)) accepted")
            let code = String(c.value, radix: 16, uppercase: true)
            #expect(why?.contains("U+" + String(repeating: "0", count: 4 - code.count) + code) == true, "\(why ?? "")")
        }
    }

    @Test(arguments: ["Polar H10", "quote\"inside", "back\\slash\\", "'single' '''triple'''", "é e\u{301} ☃ 😀 \u{10FFFF}",
                      "\u{202E}right-to-left", "\u{2028}line sep", "#not a comment", "[[sensor]]", "\u{85}next line"])
    func aPrintableNameIsAcceptedAndArrivesWhole(name: String) {
        #expect(SensorsControl.nameRefusal(name) == nil)
        #expect(ControlProtocol.parse("sensors pair ble:C0:FF:EE:00:11:22 heart_rate " + name)
                == .success(.sensors(.pair(id: "ble:C0:FF:EE:00:11:22", kind: .heartRate, name: name))))
    }

    @Test func aLineWithAControlCharacterInTheNameIsRefusedByTheDevice() {
        // Tab separates words (the name would become "HR discard"): it is refused before sending.
        for c in Self.controls where c != "\t" {
            #expect(ControlProtocol.parse("sensors pair ble:C0:FF:EE:00:11:22 heart_rate HR" + String(c) + "x") == .failure(.notText),
                    "U+\(String(c.value, radix: 16))")
        }
        #expect(ControlProtocol.ParseError.notText.description.contains("control characters"))
    }

    @Test func aNameHeardOverTheAirLosesOnlyItsControlCharacters() {
        #expect(SensorsControl.withoutControlCharacters("HR\ndiscard\u{7F}\t 😀") == "HRdiscard 😀")
        #expect(SensorsControl.nameRefusal(SensorsControl.withoutControlCharacters(String(String.UnicodeScalarView(Self.controls)) + "x")) == nil)
    }
}
