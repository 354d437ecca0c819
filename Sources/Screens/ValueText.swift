import AppCore

/// A fixed-capacity ASCII line that formatted values are written into; allocated once and
/// reused for every field of every frame.
public struct TextBuffer: Sendable, RandomAccessCollection {
    public static let capacityMax = 24

    private var storage: [UInt8]
    public private(set) var count = 0

    public init() { storage = Array(repeating: 0, count: Self.capacityMax) }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(i: Int) -> UInt8 { storage[i] }

    public mutating func clear() { count = 0 }

    public mutating func append(_ c: UInt8) {
        guard count < Self.capacityMax else { return }  // overlong text is cut, never grown
        storage[count] = c
        count += 1
    }

    public mutating func append(_ s: String) { for c in s.utf8 { append(c) } }

    /// A non-negative integer, zero-padded to `minimumDigits`.
    public mutating func append(integer: Int64, minimumDigits: Int = 1) {
        var v = integer
        if v < 0 { append(UInt8(ascii: "-")); v = -v }
        var digits = 1
        var p: Int64 = 10
        while v >= p && digits < 19 { p *= 10; digits += 1 }
        for _ in digits..<Swift.max(digits, minimumDigits) { append(UInt8(ascii: "0")) }
        p /= 10
        while p >= 1 {
            append(UInt8(ascii: "0") + UInt8((v / p) % 10))
            p /= 10
        }
    }

    /// `value` with `decimals` decimals (0...3), rounded half away from zero.
    public mutating func append(_ value: Double, decimals: Int) {
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int64((abs(value) * Double(scale)).rounded())
        if value < 0 && scaled != 0 { append(UInt8(ascii: "-")) }
        append(integer: scaled / scale)
        if decimals > 0 {
            append(UInt8(ascii: "."))
            append(integer: scaled % scale, minimumDigits: decimals)
        }
    }

    /// A clock: h:mm:ss from one hour, m:ss below (never negative).
    public mutating func append(clockMs ms: Int64) {
        let s = Swift.max(0, ms) / 1000
        let h = s / 3600, m = (s / 60) % 60, sec = s % 60
        if h > 0 {
            append(integer: h)
            append(UInt8(ascii: ":"))
            append(integer: m, minimumDigits: 2)
        } else {
            append(integer: m)
        }
        append(UInt8(ascii: ":"))
        append(integer: sec, minimumDigits: 2)
    }

    /// "--": the value is not known right now.
    public mutating func appendMissing() { append("--") }
}

/// How each field content becomes text. A missing or non-finite value is always "--".
public enum ValueFormat {
    /// Values larger than this are not plausible on a bike and show as "--".
    static let plausibleMax = 1_000_000.0

    public static func write(_ content: FieldContent, of model: ScreenModel, into text: inout TextBuffer) {
        text.clear()
        switch content {
        case .timer: text.append(clockMs: model.timerMs)
        case .elapsed: text.append(clockMs: model.elapsedMs)
        case .lapTime: text.append(clockMs: model.lapTimerMs)
        case .lapNumber:
            if model.lapNumber > 0 { text.append(integer: Int64(model.lapNumber)) } else { text.appendMissing() }
        case .metric(let m): write(m, model[m], into: &text)
        }
    }

    public static func write(_ metric: Metric, _ value: Double?, into text: inout TextBuffer) {
        guard let value, value.isFinite, abs(value) < plausibleMax else {
            text.appendMissing()
            return
        }
        switch metric {
        case .speed, .averageSpeed, .maxSpeed, .lapAverageSpeed:
            text.append(value * 3.6, decimals: 1)                       // m/s -> km/h
        case .distance, .lapDistance:
            text.append(value / 1000, decimals: value < 100_000 ? 2 : 1) // m -> km
        case .heartRate, .averageHeartRate, .maxHeartRate, .lapAverageHeartRate,
             .power, .averagePower, .maxPower, .normalizedPower, .lapAveragePower,
             .cadence, .averageCadence, .heartRateZone, .powerZone, .altitude, .ascent:
            text.append(value, decimals: 0)
        case .grade:
            text.append(value, decimals: 1)
        }
    }
}
