import RideModel

/// The `sensors …` lines of the control socket (finding and pairing sensors; `bikecomputer
/// sensors` is the client):
///
///     sensors scan [SECONDS]            → ok searching for 10 s   (1...300, default 10)
///     sensors stop                      → ok search stopped
///     sensors found                     → ok {"searching":…,"found":[{"sensor","kind","name","rssi","paired"}]}
///     sensors pair ID KIND [NAME...]    → ok paired ant:12345/11 as power
///     sensors forget ID                 → ok forgot ant:12345/11
///
/// ID is a sensor id as `bikecomputer sensors` prints it (ble:ADDRESS, ant:NUMBER/TYPE); KIND is
/// a `SensorKind` word. The board's sensors component carries them out.
public enum SensorsControl: Sendable, Hashable {
    case scan(seconds: Int)
    case stop
    case found
    case pair(id: String, kind: SensorKind, name: String?)
    case forget(id: String)

    /// The longest search a line may ask for.
    public static let scanSecondsMax = 300
    public static let scanSecondsDefault = 10
    public static let usage = "sensors scan [SECONDS] | stop | found | pair ID KIND [NAME] | forget ID"

    /// Why `name` cannot be a sensor's name sent in a `sensors pair` line, or nil: a control
    /// character (U+0000-U+001F, U+007F). A line break would end the line (the rest read as a
    /// command of its own), a tab would become a space, the others the device refuses.
    public static func nameRefusal(_ name: String) -> String? {
        guard let c = name.unicodeScalars.first(where: isControl) else { return nil }
        let code = String(c.value, radix: 16, uppercase: true)
        return "the name has a control character (U+\(String(repeating: "0", count: 4 - code.count) + code)); a sensor name is one line of plain text"
    }

    /// The name with its control characters left out (a name heard over the air, as a default).
    public static func withoutControlCharacters(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.filter { !isControl($0) }))
    }

    static func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || c.value == 0x7F }

    /// The words after "sensors", as typed (case kept: a name is the rider's).
    static func parse(_ words: [Substring]) -> Result<ControlProtocol.Request, ControlProtocol.ParseError> {
        func bad(_ usage: String) -> Result<ControlProtocol.Request, ControlProtocol.ParseError> {
            .failure(.badArguments(command: "sensors", usage: usage))
        }
        guard let verb = words.first?.lowercased() else { return bad(usage) }
        let args = words.dropFirst()
        switch verb {
        case "scan":
            guard args.count <= 1 else { return bad("sensors scan [SECONDS]") }
            let seconds = args.first.map { Int($0) ?? -1 } ?? scanSecondsDefault
            guard (1...scanSecondsMax).contains(seconds) else { return bad("sensors scan takes 1...\(scanSecondsMax) seconds") }
            return .success(.sensors(.scan(seconds: seconds)))
        case "stop", "found":
            if let extra = args.first { return .failure(.unexpectedArgument(command: "sensors \(verb)", argument: String(extra))) }
            return .success(.sensors(verb == "stop" ? .stop : .found))
        case "pair":
            guard args.count >= 2 else { return bad("sensors pair ID KIND [NAME], KIND one of \(SensorKind.names)") }
            let id = String(args[args.startIndex])
            let word = args[args.startIndex + 1].lowercased()
            guard let kind = SensorKind(rawValue: word) else { return bad("kind \(ControlProtocol.clip(word)) is not one of \(SensorKind.names)") }
            let name = args.count > 2 ? args.dropFirst(2).joined(separator: " ") : nil
            return .success(.sensors(.pair(id: id, kind: kind, name: name)))
        case "forget":
            guard args.count == 1 else { return bad("sensors forget ID") }
            return .success(.sensors(.forget(id: String(args[args.startIndex]))))
        default:
            return bad("sensors \(ControlProtocol.clip(verb)): use scan, stop, found, pair or forget")
        }
    }
}
