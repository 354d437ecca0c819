import RideModel

/// Metadata keys the ride files read from `.metadata` records (documented in docs/rides.md).
///
/// - `device.product`: product number of the unit (u16, default 1).
/// - `device.serial`: serial number of the unit (u32, default derived from the ride's UUID).
/// - `device.software_version`: firmware version, e.g. "1.20".
/// - `device.name`: product name, e.g. "bikecomputer".
/// - `sensor.<slot>`: one sensor used in the ride, as `key=value` pairs separated by `;`:
///   `source=ant|ble`, `type=<a SensorKind word: heart_rate, power, ...>`, `id=<ANT device
///   number or BLE address>`, optional `battery=<percent>`, `manufacturer=<FIT manufacturer id>`,
///   `product=<u16>`, `name=<text>`. Example:
///   `sensor.hr = "source=ant;type=heart_rate;id=12345;battery=80"`.
public enum RideMetadataKey {
    public static let product = "device.product"
    public static let serial = "device.serial"
    public static let softwareVersion = ProjectVersion.metadataKey
    public static let deviceName = "device.name"
    public static let sensorPrefix = "sensor."
}

/// A sensor's identity as written to the ride's metadata.
public struct SensorIdentity: Sendable, Hashable {
    public enum Source: String, Sendable { case ant, ble }
    /// What it is: the sensor vocabulary's kind (`type=heart_rate`, ...).
    public typealias Kind = SensorKind

    public var slot: String
    public var source: Source
    public var kind: Kind
    /// ANT device number (ANT+) or BLE address text.
    public var id: String
    public var batteryPercent: Int?
    public var manufacturer: UInt16?
    public var product: UInt16?
    public var name: String?

    public init(slot: String, source: Source, kind: Kind, id: String, batteryPercent: Int? = nil,
                manufacturer: UInt16? = nil, product: UInt16? = nil, name: String? = nil) {
        self.slot = slot; self.source = source; self.kind = kind; self.id = id
        self.batteryPercent = batteryPercent; self.manufacturer = manufacturer; self.product = product; self.name = name
    }

    /// The metadata value (`source=...;type=...;id=...`).
    public var metadataValue: String {
        var s = "source=\(source.rawValue);type=\(kind.rawValue);id=\(id)"
        if let b = batteryPercent { s += ";battery=\(b)" }
        if let m = manufacturer { s += ";manufacturer=\(m)" }
        if let p = product { s += ";product=\(p)" }
        if let n = name { s += ";name=\(n.filter { $0 != ";" })" }
        return s
    }

    /// Parses a `sensor.<slot>` metadata entry; nil when it is malformed (unknown source or type,
    /// missing id).
    public init?(key: String, value: String) {
        guard key.hasPrefix(RideMetadataKey.sensorPrefix) else { return nil }
        var fields: [String: String] = [:]
        for part in value.split(separator: ";") {
            guard let eq = part.firstIndex(of: "=") else { continue }
            fields[String(part[..<eq]).trimmingSpaces] = String(part[part.index(after: eq)...]).trimmingSpaces
        }
        guard let src = fields["source"].flatMap(Source.init(rawValue:)),
              let kind = fields["type"].flatMap(Kind.init(rawValue:)),
              let id = fields["id"], !id.isEmpty else { return nil }
        self.init(slot: String(key.dropFirst(RideMetadataKey.sensorPrefix.count)), source: src, kind: kind, id: id,
                  batteryPercent: fields["battery"].flatMap { Int($0) }.map { min(100, max(0, $0)) },
                  manufacturer: fields["manufacturer"].flatMap { UInt16($0) },
                  product: fields["product"].flatMap { UInt16($0) }, name: fields["name"])
    }

    /// ANT device number (1–65535) when the id is one.
    public var antDeviceNumber: UInt16? { source == .ant ? UInt16(id).flatMap { $0 == 0 ? nil : $0 } : nil }

    /// A stable 32-bit serial number from the id (FNV-1a), never 0.
    public var serialNumber: UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in id.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h == 0 ? 1 : h
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
