import ArgumentParser
import Control
import Device
import RideModel
import Training

/// `bikecomputer zones`: the heart-rate and power zones in force for a rider profile, and where
/// they came from.
struct ZonesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones",
        abstract: "Print the heart-rate and power zones in force and where they came from.",
        discussion: """
            With no options, the built-in heart-rate zones (91, 114, 136, 158 bpm). Heart-rate \
            model without --hr-model: LTHR if given (Friel), else resting HR with max HR or age \
            (Karvonen), else max HR or age (% of max). Power zones (Coggan) need --ftp. \
            See docs/training.md for the formulas and rounding.
            """)

    @Option(name: .long, help: "Age in years (max HR = 220 − age unless --max-hr is given).")
    var age: Int?

    @Option(name: .customLong("max-hr"), help: "Maximum heart rate, bpm.")
    var maxHR: Double?

    @Option(name: .customLong("resting-hr"), help: "Resting heart rate, bpm (heart-rate reserve model).")
    var restingHR: Double?

    @Option(name: .customLong("lthr"), help: "Lactate threshold heart rate, bpm (Friel's zones).")
    var lthr: Double?

    @Option(name: .long, help: "Functional threshold power, W (Coggan's power zones).")
    var ftp: Double?

    @Option(name: .customLong("hr-model"), help: "Heart-rate model: percent-max, reserve or lthr.")
    var hrModel: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func profile() throws -> RiderProfile {
        var model: HeartRateZoneModel?
        if let hrModel {
            guard let m = HeartRateZoneModel(rawValue: hrModel) else {
                throw ValidationError("unknown heart-rate model '\(hrModel)'; use one of: \(HeartRateZoneModel.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            model = m
        }
        return RiderProfile(age: age, restingHeartRateBpm: restingHR, maxHeartRateBpm: maxHR,
                            lactateThresholdHeartRateBpm: lthr, ftpW: ftp, heartRateModel: model)
    }

    func run() throws {
        let zones: ZonesInForce
        do {
            zones = try ZonesInForce.preferred(from: try profile())
        } catch let e as ZoneModelError {
            throw Failure(description: e.description)
        }
        print(json ? Self.json(zones) : Self.text(zones), terminator: json ? "\n" : "")
    }

    // MARK: Output

    /// "95 to 113" for whole-number bounds, "95.5 to below 120" otherwise; open ends in words.
    static func range(_ z: ZoneConfiguration, _ i: Int) -> String {
        let lo = z.lowerBound(ofZone: i), hi = z.upperBound(ofZone: i)
        let unit = z.quantity.unit
        if i == 0 { return "below \(ZoneFormulas.format(hi)) \(unit)" }
        if hi == .infinity { return "\(ZoneFormulas.format(lo)) \(unit) and above" }
        if lo == lo.rounded(), hi == hi.rounded() { return "\(ZoneFormulas.format(lo)) to \(ZoneFormulas.format(hi - 1)) \(unit)" }
        return "\(ZoneFormulas.format(lo)) to below \(ZoneFormulas.format(hi)) \(unit)"
    }

    static func text(_ zones: ZonesInForce) -> String {
        var out = ""
        func section(_ title: String, _ s: SourcedZones) {
            let count = s.zones.names?.first == "Z0" ? "\(s.zones.zoneCount - 1) zones (Z0: below zone 1)" : "\(s.zones.zoneCount) zones"
            out += "\(title): \(count) — \(s.source)\n"
            for i in 0..<s.zones.zoneCount {
                let name = s.zones.name(ofZone: i)
                let label = name.hasPrefix("Z") ? name : "Z\(s.zones.number(ofZone: i)) \(name)"
                out += "  " + label + String(repeating: " ", count: max(1, 20 - label.count)) + range(s.zones, i) + "\n"
            }
        }
        section("heart rate", zones.heartRate)
        if let p = zones.power {
            section("power", p)
        } else {
            out += "power: no zones (give --ftp, or set ftp or power zones in the config)\n"
        }
        return out
    }

    static func json(_ zones: ZonesInForce) -> String {
        var w = JSONWriter(pretty: true)
        func section(_ key: String, _ s: SourcedZones?) {
            guard let s else { w.raw(key, "null"); return }
            w.beginObject(key)
            w.string("source", s.source.name)
            w.string("description", s.source.description)
            w.string("unit", s.zones.quantity.unit)
            w.beginArray("boundaries")
            for b in s.zones.boundaries { w.number(nil, b) }
            w.endArray()
            w.beginArray("zones")
            for i in 0..<s.zones.zoneCount {
                w.beginObject()
                w.int("zone", Int64(s.zones.number(ofZone: i)))
                w.string("name", s.zones.name(ofZone: i))
                w.number("from", s.zones.lowerBound(ofZone: i))
                let hi = s.zones.upperBound(ofZone: i)
                w.number("below", hi.isFinite ? hi : nil)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.beginObject()
        section("heart_rate", zones.heartRate)
        section("power", zones.power)
        w.endObject()
        return w.text
    }
}
