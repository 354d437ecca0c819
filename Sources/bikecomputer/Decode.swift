import ArgumentParser
import Device
import RideModel
import Sensors

/// `bikecomputer decode`: decodes raw sensor payloads through the same stateful decoder the device
/// uses and prints one JSON object per payload.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode raw BLE or ANT+ sensor payloads (hex) and print one JSON object per payload.",
        discussion: """
            Payloads are decoded in order by one stateful decoder, so rates (speed, cadence, power \
            averages) come from consecutive payloads. Examples:
              bikecomputer decode --ble 2a63 2000fa000a000010 2000fc000b000014
              bikecomputer decode --ant 121 --wheel-mm 2105 0000000000000000 00040200000c0300
            BLE profiles: 2a37 2a5b 2a63 2a65 2a19. ANT+ device types (decimal): 120 11 121 122 123.
            """)

    @Option(name: .customLong("ble"), help: "GATT characteristic UUID, hex (2a37, 2a5b, 2a63, 2a65, 2a19).")
    var bleUUID: String?

    @Option(name: .customLong("ant"), help: "ANT+ device type, decimal (120, 11, 121, 122, 123).")
    var antDeviceType: Int?

    @Option(name: .customLong("wheel-mm"), help: "Wheel circumference in millimetres.")
    var wheelMm: Int = SensorDecoder.defaultWheelCircumferenceMm

    @Option(name: .customLong("interval-ms"), help: "Time between payloads, for the hold and zero rules.")
    var intervalMs: Int64 = 250

    @Argument(help: "Payloads in hex, one per argument, in the order they arrived.")
    var payloads: [String] = []

    func validate() throws {
        if (bleUUID == nil) == (antDeviceType == nil) {
            throw ValidationError("give exactly one of --ble UUID or --ant DEVICE_TYPE")
        }
        if profile == nil {
            throw ValidationError("no decoder for \(bleUUID.map { "BLE \($0)" } ?? "ANT+ device type \(antDeviceType!)"); supported: --ble 2a37|2a5b|2a63|2a65|2a19, --ant 120|11|121|122|123")
        }
        if wheelMm < 100 || wheelMm > 5000 {
            throw ValidationError("--wheel-mm \(wheelMm) is not a wheel: give the circumference in millimetres, e.g. 2105 for 700x25c")
        }
        if payloads.isEmpty { throw ValidationError("give at least one hex payload") }
    }

    var profile: Profile? {
        if let b = bleUUID {
            let digits = b.lowercased().hasPrefix("0x") ? String(b.dropFirst(2)) : b
            return UInt16(digits, radix: 16).flatMap { Profile(transport: .ble, code: $0) }
        }
        if let a = antDeviceType, let code = UInt16(exactly: a) { return Profile(transport: .ant, code: code) }
        return nil
    }

    func run() throws {
        let profile = profile!
        var decoder = SensorDecoder(profile: profile, wheelCircumferenceMm: wheelMm)
        var failures = 0
        for (index, hex) in payloads.enumerated() {
            let now = MonotonicInstant(milliseconds: Int64(index) * intervalMs)
            var fields = JSONFields()
            fields.json.int("index", Int64(index))
            fields.json.string("profile", profile.description)
            fields.json.number("t_s", Double(now.milliseconds) / 1000)
            guard let p = Payload(hex: hex) else {
                failures += 1
                fields.json.string("payload", hex)
                fields.json.string("error", "bad hex: give an even number of hex digits (0-9, a-f), at most \(Payload.bytesMax) bytes")
                print(fields.finish())
                continue
            }
            fields.json.string("payload", p.hex)
            do {
                let d = try decoder.decode(p, at: now, fields: &fields)
                d.visitFields(&fields)
                if d.warnings != 0 {
                    fields.json.beginArray("warnings")
                    for k in BadInput.allCases where d.has(k) { fields.json.string(nil, k.description) }
                    fields.json.endArray()
                }
            } catch {
                failures += 1
                fields.json.string("error", error.description)
            }
            print(fields.finish())
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Writes decoded fields into a one-line JSON object; a key already written is not repeated.
struct JSONFields: FieldVisitor {
    var json = JSONWriter(pretty: false)
    var seen: Set<String> = []

    init() { json.beginObject() }

    mutating func fresh(_ name: String) -> Bool { seen.insert(name).inserted }

    mutating func int(_ name: String, _ value: Int64) { if fresh(name) { json.int(name, value) } }
    mutating func double(_ name: String, _ value: Double) { if fresh(name) { json.number(name, value, decimals: 6) } }
    mutating func bool(_ name: String, _ value: Bool) { if fresh(name) { json.bool(name, value) } }
    mutating func string(_ name: String, _ value: String) { if fresh(name) { json.string(name, value) } }
    mutating func doubles(_ name: String, count: Int, _ value: (Int) -> Double) {
        guard fresh(name) else { return }
        json.beginArray(name)
        for i in 0..<count { json.number(nil, value(i), decimals: 6) }
        json.endArray()
    }

    mutating func finish() -> String {
        json.endObject()
        return json.text
    }
}
