/// The unit's own battery as a ride keeps it (docs/power.md, docs/rides.md): journaled as a
/// metadata record when the ride starts and when it stops, written to the FIT file as the unit's
/// `device_info` battery fields (battery_voltage, battery_status, battery_level) at those times.
///
/// The value is `key=value` pairs separated by `;`: `percent=82;voltage_mv=3950;charging=0`
/// (a field the gauge does not measure is left out).
public struct DeviceBattery: Sendable, Hashable {
    public static let atStartKey = "device.battery_start"
    public static let atEndKey = "device.battery_end"

    public var percent: Int?
    public var voltageMv: Int?
    public var charging: Bool

    public init(percent: Int?, voltageMv: Int?, charging: Bool) {
        self.percent = percent.map { max(0, min(100, $0)) }
        self.voltageMv = voltageMv.map { max(0, min(65_535, $0)) }
        self.charging = charging
    }

    public var metadataValue: String {
        var parts: [String] = []
        if let p = percent { parts.append("percent=\(p)") }
        if let v = voltageMv { parts.append("voltage_mv=\(v)") }
        parts.append("charging=\(charging ? 1 : 0)")
        return parts.joined(separator: ";")
    }

    /// Parses a metadata value; nil when it holds no known field or a malformed one.
    public init?(metadataValue value: String) {
        var percent: Int?, volts: Int?, charging = false, known = 0
        for part in value.split(separator: ";") {
            let kv = part.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, let n = Int(kv[1]) else { return nil }
            switch kv[0] {
            case "percent": guard (0...100).contains(n) else { return nil }; percent = n
            case "voltage_mv": guard (0...65_535).contains(n) else { return nil }; volts = n
            case "charging": guard n == 0 || n == 1 else { return nil }; charging = n == 1
            default: continue // a later version's field
            }
            known += 1
        }
        guard known > 0 else { return nil }
        self.init(percent: percent, voltageMv: volts, charging: charging)
    }

    /// FIT `battery_status` (new 1, good 2, ok 3, low 4, critical 5, charging 6; 0xFF invalid).
    public var fitBatteryStatus: UInt8 {
        if charging { return 6 }
        guard let p = percent else { return 0xFF }
        return p > 50 ? 2 : p > 20 ? 3 : p > 10 ? 4 : 5
    }
}
