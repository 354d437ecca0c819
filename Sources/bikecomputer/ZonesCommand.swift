import ArgumentParser
import Configuration
import Control
import Device
import Glibc
import RideModel
import Training

/// `bikecomputer zones`: the heart-rate and power zones in force — the device's config file
/// with any flags on top — and where every number came from.
struct ZonesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones",
        abstract: "Print the heart-rate and power zones in force and where they came from.",
        discussion: """
            Reads the device's config (--config, default /etc/bikecomputer/config.toml; the \
            built-in defaults when that file does not exist), as `bikecomputer run` does; each \
            flag overrides its key. A heart-rate flag without --hr-model lets the figures pick \
            the model (LTHR: Friel; resting HR: Karvonen; else % of max HR or 220 − age) unless \
            the file sets [zones] hr_model, and drops the built-in defaults of the heart-rate \
            keys the file does not set. See docs/training.md for the formulas and rounding.
            """)

    @Option(help: "The device's config file (default: /etc/bikecomputer/config.toml if it exists).")
    var config: String?

    @Option(name: .long, help: "Age in years (max HR = 220 − age unless a max HR is given).")
    var age: Int?

    @Option(name: .customLong("max-hr"), help: "Maximum heart rate, bpm.")
    var maxHR: Double?

    @Option(name: .customLong("resting-hr"), help: "Resting heart rate, bpm (heart-rate reserve model).")
    var restingHR: Double?

    @Option(name: .customLong("lthr"), help: "Lactate threshold heart rate, bpm (Friel's zones).")
    var lthr: Double?

    @Option(name: .long, help: "Functional threshold power, W (Coggan's power zones).")
    var ftp: Double?

    @Option(name: .customLong("hr-model"), help: "Heart-rate model: percent-max, reserve or lthr (or the config's names max_hr, hrr).")
    var hrModel: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One number of the rider profile and where it came from.
    struct Input {
        enum Source { case flag(String), file(path: String, line: Int, key: String), builtIn, unset }
        var name: String
        var value: String
        var source: Source

        var sourceText: String {
            switch source {
            case .flag(let f): "\(f) flag"
            case .file(let path, let line, let key): "\(path):\(line) (\(key))"
            case .builtIn: "built-in default"
            case .unset: "not set"
            }
        }

        var sourceWord: String {
            switch source {
            case .flag: "flag"
            case .file: "config"
            case .builtIn: "default"
            case .unset: "unset"
            }
        }
    }

    /// The profile in force and the provenance of each of its numbers.
    func resolve() throws -> (RiderProfile, [Input], configNote: String) {
        // The config, as `bikecomputer run` reads it.
        let file = config ?? DeviceConfig.defaultPath
        var device = DeviceConfig.defaults
        var lines: [String: Int] = [:]   // "rider.age" → line, for keys the file sets
        let note: String
        if config == nil, access(file, F_OK) != 0 {
            note = "config: none (\(file) does not exist): built-in defaults"
        } else {
            let bytes: [UInt8]
            do { bytes = try ConfigFile.read(file) } catch {
                throw Failure(description: ConfigFile.LoadError.unreadable(path: file, error).description)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            switch ConfigLoader.load(bytes: bytes) {
            case .success(let c): device = c
            case .failure(let errors): throw Failure(description: ConfigFile.LoadError.invalid(path: file, errors).description)
            }
            for table in TOMLDocument.parse(text).0.tables where table.name == "rider" || table.name == "zones" {
                for e in table.entries { lines[table.name + "." + e.key] = e.line }
            }
            note = "config: \(file)"
        }
        func source(_ key: String, flag: String?, given: Bool) -> Input.Source {
            if given, let flag { return .flag(flag) }
            if let line = lines[key] { return .file(path: file, line: line, key: "[\(key.split(separator: ".")[0])] \(key.split(separator: ".")[1])") }
            return .builtIn
        }

        var profile: RiderProfile
        do { profile = try ConfigMapping.riderProfile(device) } catch { throw Failure(description: error.description) }
        var model: HeartRateZoneModel? = profile.heartRateModel
        let heartFlags = age != nil || maxHR != nil || restingHR != nil || lthr != nil
        let modelFixed = hrModel != nil || lines["zones.hr_model"] != nil
        if heartFlags && !modelFixed {
            // Flags describe the rider and pick the model: the heart-rate keys' built-in
            // defaults step aside, the file's own values stay.
            if lines["rider.age"] == nil { profile.age = nil }
            if lines["rider.max_hr"] == nil { profile.maxHeartRateBpm = nil }
            if lines["rider.resting_hr"] == nil { profile.restingHeartRateBpm = nil }
            model = nil
        }
        // An age given here means max HR = 220 − age, unless a max HR is set somewhere.
        if age != nil, maxHR == nil, lines["rider.max_hr"] == nil { profile.maxHeartRateBpm = nil }
        if let age { profile.age = age }
        if let maxHR { profile.maxHeartRateBpm = maxHR }
        if let restingHR { profile.restingHeartRateBpm = restingHR }
        if let lthr { profile.lactateThresholdHeartRateBpm = lthr }
        if let ftp { profile.ftpW = ftp }
        if let hrModel {
            let aliases = ["max_hr": "percent-max", "hrr": "reserve"]
            guard let m = HeartRateZoneModel(rawValue: aliases[hrModel] ?? hrModel) else {
                throw ValidationError("unknown heart-rate model '\(hrModel)'; use one of: \(HeartRateZoneModel.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            model = m
            profile.explicitHeartRateZones = nil
        }
        profile.heartRateModel = model

        func number(_ v: Double?, _ unit: String) -> String { v.map { ZoneFormulas.format($0) + unit } ?? "-" }
        var inputs: [Input] = [
            Input(name: "age", value: profile.age.map { "\($0)" } ?? "-", source: profile.age == nil ? .unset : source("rider.age", flag: "--age", given: age != nil)),
            Input(name: "max_hr", value: number(profile.maxHeartRateBpm, " bpm"),
                  source: profile.maxHeartRateBpm == nil ? .unset : source("rider.max_hr", flag: "--max-hr", given: maxHR != nil)),
            Input(name: "resting_hr", value: number(profile.restingHeartRateBpm, " bpm"),
                  source: profile.restingHeartRateBpm == nil ? .unset : source("rider.resting_hr", flag: "--resting-hr", given: restingHR != nil)),
            Input(name: "lthr", value: number(profile.lactateThresholdHeartRateBpm, " bpm"),
                  source: profile.lactateThresholdHeartRateBpm == nil ? .unset : source("rider.lthr", flag: "--lthr", given: lthr != nil)),
            Input(name: "ftp", value: number(profile.ftpW, " W"), source: profile.ftpW == nil ? .unset : source("rider.ftp", flag: "--ftp", given: ftp != nil)),
            Input(name: "hr_model", value: model?.rawValue ?? (profile.explicitHeartRateZones != nil ? "explicit" : "auto (from the figures given)"),
                  source: hrModel != nil ? .flag("--hr-model") : (lines["zones.hr_model"] != nil ? source("zones.hr_model", flag: nil, given: false) : (model == nil && profile.explicitHeartRateZones == nil ? .unset : .builtIn))),
        ]
        if profile.explicitHeartRateZones != nil {
            inputs.append(Input(name: "hr_boundaries", value: device.zones.hrBoundaries.map(String.init).joined(separator: ", ") + " bpm",
                                source: source("zones.hr_boundaries", flag: nil, given: false)))
        }
        if profile.explicitPowerZones != nil {
            inputs.append(Input(name: "power_boundaries", value: device.zones.powerBoundaries.map(String.init).joined(separator: ", ") + " W",
                                source: source("zones.power_boundaries", flag: nil, given: false)))
        }
        return (profile, inputs, note)
    }

    func run() throws {
        let (profile, inputs, note) = try resolve()
        let zones: ZonesInForce
        do {
            zones = try ZonesInForce.preferred(from: profile)
        } catch let e as ZoneModelError {
            throw Failure(description: e.description)
        }
        print(json ? Self.json(zones, inputs: inputs, note: note) : Self.inputsText(inputs, note: note) + Self.text(zones),
              terminator: json ? "\n" : "")
    }

    static func inputsText(_ inputs: [Input], note: String) -> String {
        var out = note + "\n"
        for i in inputs {
            out += "  " + i.name.padding(12) + i.value.padding(12) + " " + i.sourceText + "\n"
        }
        return out
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

    static func json(_ zones: ZonesInForce, inputs: [Input] = [], note: String = "") -> String {
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
        w.string("config", note)
        w.beginObject("inputs")
        for i in inputs {
            w.beginObject(i.name)
            w.string("value", i.value == "-" ? nil : i.value)
            w.string("source", i.sourceWord)
            w.string("from", i.sourceText)
            w.endObject()
        }
        w.endObject()
        section("heart_rate", zones.heartRate)
        section("power", zones.power)
        w.endObject()
        return w.text
    }
}

extension String {
    /// Left-aligned in `width` columns (at least one space after).
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: Swift.max(1, width - count)) }
}
