import Control
import Synchronization

/// The ride so far, for the phone's "ride" chart: averages of the stream's 1 Hz metrics per
/// interval of timer time, kept while the companion follows the ride (a companion started
/// mid-ride has the ride from then on). Bounded: at `pointsMax` points, neighbours are merged
/// and the interval doubles, so a ride of any length fits.
final class RideHistory: @unchecked Sendable {
    static let pointsMax = 3_600
    static let firstIntervalMs: Int64 = 1_000
    /// The charted metrics, as the stream names them.
    static let keys = ["speed", "heart_rate", "power", "cadence"]

    private let lock = Mutex(())
    private var intervalMs = RideHistory.firstIntervalMs
    /// Timer time at the start of each point's interval, and the averages (nil: no data).
    private var timerMs: [Int64] = []
    private var values: [[Double?]] = Array(repeating: [], count: RideHistory.keys.count)
    // The interval being filled.
    private var openStartMs: Int64?
    private var sums = [Double](repeating: 0, count: RideHistory.keys.count)
    private var counts = [Int](repeating: 0, count: RideHistory.keys.count)
    private var lastTimerMs: Int64 = -1

    /// One `metrics` (or `snapshot`) message of the device's stream.
    /// The stream writes `timer_ms` as a whole number; a fraction is dropped, as NSNumber's
    /// `int64Value` dropped it before. A metric is a number (a JSON `true`, once NSNumber 1, is
    /// not one); null or absent is no data.
    func add(_ msg: [String: JSONValue]) {
        guard let timer = msg["timer_ms"]?.double.flatMap({ Int64(exactly: $0.rounded(.towardZero)) }),
              let state = msg["state"]?.string else { return }
        lock.withLock { _ in
            // A new ride: its timer starts again from (near) zero.
            if timer + 2_000 < lastTimerMs || (state == "prepared" && !timerMs.isEmpty) { reset() }
            lastTimerMs = timer
            guard state == "running", let metrics = msg["metrics"]?.object else { return }
            let start = timer / intervalMs * intervalMs
            if let open = openStartMs, open != start { close() }
            openStartMs = start
            for (i, k) in Self.keys.enumerated() {
                if let v = metrics[k]?.double, v.isFinite {
                    sums[i] += v
                    counts[i] += 1
                }
            }
        }
    }

    private func reset() {
        intervalMs = Self.firstIntervalMs
        timerMs.removeAll()
        for i in values.indices { values[i].removeAll() }
        openStartMs = nil
        for i in sums.indices { sums[i] = 0; counts[i] = 0 }
    }

    private func close() {
        guard let start = openStartMs else { return }
        timerMs.append(start)
        for i in Self.keys.indices {
            values[i].append(counts[i] > 0 ? sums[i] / Double(counts[i]) : nil)
            sums[i] = 0
            counts[i] = 0
        }
        openStartMs = nil
        if timerMs.count >= Self.pointsMax { halve() }
    }

    /// Merges neighbouring points: half as many, twice the interval.
    private func halve() {
        intervalMs *= 2
        var t: [Int64] = []
        var v: [[Double?]] = Array(repeating: [], count: Self.keys.count)
        var i = 0
        while i < timerMs.count {
            let j = min(i + 1, timerMs.count - 1)
            t.append(timerMs[i] / intervalMs * intervalMs)
            for k in Self.keys.indices {
                let pair = [values[k][i], j != i ? values[k][j] : nil].compactMap { $0 }
                v[k].append(pair.isEmpty ? nil : pair.reduce(0, +) / Double(pair.count))
            }
            i += 2
        }
        timerMs = t
        values = v
    }

    /// `{"interval_ms", "timer_ms": [...], "speed": [...], ...}` with the interval being filled
    /// as the last point.
    func json() -> [String: JSONValue] {
        lock.withLock { _ in
            var out: [String: JSONValue] = ["interval_ms": .integer(intervalMs)]
            var t = timerMs.map(JSONValue.integer)
            var series = values.map { $0.map { $0.map { JSONValue.number(($0 * 100).rounded() / 100) } ?? .null } }
            if let open = openStartMs {
                t.append(.integer(open))
                for i in Self.keys.indices {
                    series[i].append(counts[i] > 0 ? .number((sums[i] / Double(counts[i]) * 100).rounded() / 100) : .null)
                }
            }
            out["timer_ms"] = .array(t)
            for (i, k) in Self.keys.enumerated() { out[k] = .array(series[i]) }
            return out
        }
    }
}
