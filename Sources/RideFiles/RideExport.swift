import RideModel

/// Why a ride's records cannot be turned into a file.
public enum RideFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The records hold no `.header`: they are not a ride (check the journal or file given).
    case noHeader
    /// The ride never started (the countdown was cancelled): there is nothing to export.
    case notStarted
    /// The file being read is not a FIT file or is damaged.
    case malformed(String)

    public var description: String {
        switch self {
        case .noHeader: "the records hold no ride header; pass the records of one ride, from its header on"
        case .notStarted: "the ride never started; there is nothing to export (delete it instead)"
        case .malformed(let why): "not a valid file: \(why); re-export the ride or check the file was copied completely"
        }
    }
}

/// A finished ride rebuilt from its records for export: the statistics (RideBuilder, exactly as
/// the app computed them), 1 Hz record rows, RR intervals, sensors and the wall-clock anchor.
///
/// Rows hold the values of the samples counted while running, one row per second of the ride
/// that has at least one sample, in a flat table (no allocation per row). Distance in the rows is
/// the ride's accumulated distance (the sum of positive counter increments while running).
public struct RideExport: Sendable {
    /// Longest ride exported, in seconds (rows beyond are dropped and counted).
    public static let rideSecondsMax = 72 * 3600
    /// RR intervals kept (about 3 per second over the longest ride).
    public static let rrIntervalsMax = 3 * rideSecondsMax
    public static let columnCount = Quantity.countMax

    public let header: RideHeader
    public private(set) var builder: RideBuilder
    /// The wall-clock anchor for the whole ride (the last one journaled, as summary.json uses).
    public private(set) var anchor: WallClockAnchor
    /// The trusted anchors, header's first, in journal order (`unixMs` dates by them).
    public private(set) var trustedAnchors: [WallClockAnchor] = []
    public static let trustedAnchorsMax = 256
    public let startInstant: MonotonicInstant
    public private(set) var stopInstant: MonotonicInstant
    /// Whether the ride was saved (nil: never finished, e.g. exported while recovering).
    public private(set) var saved: Bool?
    public private(set) var metadata: [(key: String, value: String)] = []
    public private(set) var sensors: [SensorIdentity] = []

    /// Row r covers second `rowSecond[r]` after the start; its values are at
    /// `rowValues[r * columnCount + quantity.index]`, NaN where absent.
    public private(set) var rowSecond: [Int32] = []
    public private(set) var rowValues: [Double] = []
    /// Quantities that appear in at least one row.
    public private(set) var present: [Bool] = Array(repeating: false, count: Quantity.countMax)
    public private(set) var rrInstantMs: [Int64] = []
    public private(set) var rrSeconds: [Double] = []
    /// Samples that did not fit (too late, beyond the longest ride, out of order).
    public private(set) var samplesDropped = 0
    /// Sensor metadata entries that could not be parsed.
    public private(set) var metadataMalformed = 0
    /// Events the builder refused (out of order, invalid in the state, table full): never
    /// expected from a journal the app wrote; counted, and the ride is rebuilt without them.
    public private(set) var eventsRefused = 0

    public var rowCount: Int { rowSecond.count }

    public func value(_ row: Int, _ q: Quantity) -> Double? {
        let v = rowValues[row * Self.columnCount + q.index]
        return v.isNaN ? nil : v
    }

    public func rowInstant(_ row: Int) -> MonotonicInstant { startInstant.advanced(byMs: Int64(rowSecond[row]) * 1000) }

    public init(records: [RideRecord]) throws(RideFileError) {
        // Pre-scan: header, start and the span of the ride (to reserve the row table once).
        var header: RideHeader?
        var start: MonotonicInstant?
        var last = MonotonicInstant(milliseconds: .min)
        for r in records {
            switch r {
            case .header(let h): if header == nil { header = h }
            case .event(let e):
                if e.kind == .start, start == nil { start = e.instant }
                last = max(last, e.instant)
            case .sample(let s), .series(let s): last = max(last, s.instant)
            case .elapsed(let at): last = max(last, at)
            default: break
            }
        }
        guard let header else { throw .noHeader }
        guard let start else { throw .notStarted }
        self.header = header
        self.startInstant = start
        self.stopInstant = start
        self.anchor = header.anchor
        if header.anchor.wall.trusted { trustedAnchors.append(header.anchor) }
        self.builder = RideBuilder(settings: header.settings)
        let spanSeconds = Int(min(Int64(Self.rideSecondsMax), max(0, last.milliseconds(since: start) / 1000 + 1)))
        rowSecond.reserveCapacity(spanSeconds)
        rowValues.reserveCapacity(spanSeconds * Self.columnCount)

        var headersSeen = 0
        for r in records {
            switch r {
            case .header:
                headersSeen += 1
                if headersSeen > 1 { break } // a second ride's records: not ours
            case .event(let e):
                guard headersSeen == 1 else { break }
                do {
                    switch e.kind {
                    case .start: try builder.start(at: e.instant)
                    case .pause: try builder.pause(at: e.instant, trigger: e.trigger)
                    case .resume: try builder.resume(at: e.instant, trigger: e.trigger)
                    case .lap: try builder.lap(at: e.instant, trigger: e.trigger)
                    case .stop: try builder.stop(at: e.instant)
                    case .marker, .gap, .radar: try builder.mark(e)
                    }
                } catch {
                    eventsRefused += 1
                }
            case .sample(let s):
                guard headersSeen == 1 else { break }
                do { try builder.add(s) } catch { samplesDropped += 1; break }
                // Rows hold what counted: samples while running; at a pause or the stop instant
                // only the counters (the distance ridden up to it).
                let counted = builder.isRunning || (s.quantity == .distance && builder.lastEventInstant == s.instant)
                guard counted, s.quantity != .rrInterval, s.quantity != .energy else { break }
                put(s.quantity, s.quantity == .distance ? builder.ride.distanceM : s.value, at: s.instant)
            case .series(let s):
                guard headersSeen == 1, s.quantity == .rrInterval, s.value.isFinite, s.value > 0,
                      builder.startInstant != nil, builder.stopInstant == nil,
                      rrInstantMs.count < Self.rrIntervalsMax else { break }
                if let lastRR = rrInstantMs.last, s.instant.milliseconds < lastRR { samplesDropped += 1; break }
                rrInstantMs.append(s.instant.milliseconds)
                rrSeconds.append(s.value)
            case .wallClock(let a):
                if headersSeen == 1 {
                    anchor = a
                    if a.wall.trusted && trustedAnchors.count < Self.trustedAnchorsMax { trustedAnchors.append(a) }
                }
            case .finished(let s, _):
                if headersSeen == 1 { saved = s }
            case .metadata(let k, let v):
                guard headersSeen == 1 else { break }
                builder.setMetadata(k, v)
                if let i = metadata.firstIndex(where: { $0.key == k }) { metadata[i].value = v } else { metadata.append((k, v)) }
            case .elapsed:
                break // time only: the ride's end (below) and its timer come from `last`
            case .timeline:
                break // the device's clock, for recovery only
            }
        }
        if builder.stopInstant == nil {
            // Not stopped (exported during recovery or from a damaged journal): end at the last fact.
            do { try builder.stop(at: max(last, builder.lastEventInstant ?? start)) } catch { eventsRefused += 1 }
        }
        stopInstant = builder.stopInstant ?? start
        for (k, v) in metadata where k.hasPrefix(RideMetadataKey.sensorPrefix) {
            if let s = SensorIdentity(key: k, value: v) { sensors.append(s) } else { metadataMalformed += 1 }
        }
    }

    private mutating func put(_ q: Quantity, _ value: Double, at instant: MonotonicInstant) {
        let ms = instant.milliseconds(since: startInstant)
        guard ms >= 0, ms / 1000 < Int64(Self.rideSecondsMax) else { samplesDropped += 1; return }
        let second = Int32(ms / 1000)
        var row = rowSecond.count - 1
        if row < 0 || rowSecond[row] < second {
            rowSecond.append(second)
            rowValues.append(contentsOf: repeatElement(Double.nan, count: Self.columnCount))
            row += 1
        } else {
            // A late sample for an earlier second: look back a few rows at most.
            var back = 0
            while row >= 0, rowSecond[row] > second, back < 8 { row -= 1; back += 1 }
            guard row >= 0, rowSecond[row] == second else { samplesDropped += 1; return }
        }
        rowValues[row * Self.columnCount + q.index] = value
        present[q.index] = true
    }

    // MARK: Metadata

    public func metadataValue(_ key: String) -> String? { metadata.last(where: { $0.key == key })?.value }

    public var product: UInt16 { metadataValue(RideMetadataKey.product).flatMap { UInt16($0) } ?? 1 }

    public var serialNumber: UInt32 {
        if let s = metadataValue(RideMetadataKey.serial).flatMap({ UInt32($0) }), s != 0 { return s }
        let v = UInt32(truncatingIfNeeded: header.rideID.high >> 32) // stable per ride when not configured
        return v == 0 ? 1 : v
    }

    /// Software version ×100 (e.g. "1.20" → 120).
    public var softwareVersionHundredths: UInt16? {
        guard let text = metadataValue(RideMetadataKey.softwareVersion) else { return nil }
        let parts = text.split(separator: ".", maxSplits: 1)
        guard let major = parts.first.flatMap({ UInt16($0) }) else { return nil }
        var minor: UInt16 = 0
        if parts.count == 2 {
            let m = String(parts[1].prefix(2))
            guard let v = UInt16(m) else { return nil }
            minor = m.count == 1 ? v * 10 : v
        }
        return major.multipliedReportingOverflow(by: 100).overflow ? nil : major * 100 + minor
    }

    // MARK: Time

    /// Unix milliseconds of `instant`: by the trusted anchor in force at that instant (the last
    /// trusted anchor at or before it; before the first, the first: a ride begun on an untrusted
    /// clock is dated by the offset learnt when the clock became trusted), else by the ride's
    /// anchor. Trusted anchors only move forward (WallClockAnchor.updated), so the times never
    /// run back.
    public func unixMs(_ instant: MonotonicInstant) -> Int64 {
        guard var inForce = trustedAnchors.first else { return anchor.wallTime(at: instant).unixMs }
        for a in trustedAnchors.dropFirst() where a.monotonic <= instant { inForce = a }
        return inForce.wallTime(at: instant).unixMs
    }

    /// FIT date_time (seconds since 1989-12-31T00:00:00Z), floored. A ride whose wall clock
    /// lies before the FIT epoch (a board that booted at 1970 and never got the time) is written
    /// in FIT's relative "system time" instead (the start is 0), so timestamps still ascend.
    public func fitTime(_ instant: MonotonicInstant) -> UInt32 {
        let s = Self.fitSeconds(unixMs(instant))
        let startS = Self.fitSeconds(unixMs(startInstant))
        return UInt32(clamping: startS < 0 ? s - startS : s)
    }

    static func fitSeconds(_ ms: Int64) -> Int64 {
        (ms >= 0 ? ms / 1000 : (ms - 999) / 1000) - FITTime.unixEpochOffsetSeconds
    }
}

public enum FITTime {
    /// Unix seconds of the FIT epoch, 1989-12-31T00:00:00Z.
    public static let unixEpochOffsetSeconds: Int64 = 631_065_600
}
