/// The `[gps]` and `[barometer]` tables (docs/config.md, docs/gps.md).
extension DeviceConfig {
    public struct Gps: Sendable, Hashable {
        /// Follow gpsd for position, speed, distance, altitude and the clock.
        public var enabled = false
        /// gpsd's socket: HOST:PORT (Debian's gpsd.socket listens on 127.0.0.1:2947) or the path
        /// of a Unix socket (Debian's /run/gpsd.sock is root-only).
        public var gpsd = "127.0.0.1:2947"
    }

    public struct Barometer: Sendable, Hashable {
        /// Read a BMP280/BME280 on the I²C bus.
        public var enabled = false
        /// /dev/i2c-N (the display's bus on a Pi: 1).
        public var bus = 1
        /// 0x76 (SDO to GND, most breakouts) or 0x77 (SDO to 3V3).
        public var address = 0x76
    }
}

extension ConfigLoader {
    static func gps(_ r: TableReader, _ g: inout DeviceConfig.Gps) {
        if let v = r.bool("enabled") { g.enabled = v }
        if r.has("gpsd"), let e = r.entry("gpsd") {
            if let v = r.string("gpsd", maxLength: 107) {
                if v.hasPrefix("/") || Self.isHostPort(v) {
                    g.gpsd = v
                } else {
                    r.errors.append(ConfigError(line: e.line, .notAllowed,
                                                "gpsd = \"\(v)\" must be host:port (e.g. \"127.0.0.1:2947\", Debian's gpsd.socket) or a socket path (e.g. \"/run/gpsd.sock\")"))
                }
            }
        } else {
            r.known.append("gpsd")
        }
        r.finish()
    }

    static func barometer(_ r: TableReader, _ b: inout DeviceConfig.Barometer) {
        if let v = r.bool("enabled") { b.enabled = v }
        if let v = r.int("bus", 0...31) { b.bus = v }
        if let v = r.int("address", allowed: [0x76, 0x77]) { b.address = v }
        r.finish()
    }

    /// "host:port" with a port in 1...65535 and a non-empty host.
    static func isHostPort(_ v: String) -> Bool {
        guard let colon = v.lastIndex(of: ":"), colon != v.startIndex, let port = Int(v[v.index(after: colon)...]) else { return false }
        return (1...65_535).contains(port)
    }
}
