import Control
import RideModel
import Sensors

/// "Sensor frame arrives → first changed display page handed to the bus", per frame that
/// changed the screen while no page was waiting (`bikecomputer run --measure-latency`). Two
/// clocks: from the bridge's send time (the bridge stamps CLOCK_MONOTONIC µs into the frame:
/// includes the socket and the epoll wake-up) and from the start of the loop's packet handler.
/// A rear radar's frames (its ANT+ device type or its BLE characteristic) are also kept apart:
/// what a vehicle coming up costs until the radar column shows it.
struct LatencyRecorder {
    static let samplesMax = 1 << 20
    struct Samples {
        var fromSendUs: [UInt32] = []
        var fromHandlerUs: [UInt32] = []

        init(capacity: Int) {
            fromSendUs.reserveCapacity(capacity)
            fromHandlerUs.reserveCapacity(capacity)
        }

        mutating func add(nowNs: UInt64, sentNs: UInt64, arrivedNs: UInt64) {
            guard fromSendUs.count < LatencyRecorder.samplesMax else { return }
            let fromSend = nowNs >= sentNs && sentNs > 0 ? (nowNs - sentNs) / 1000 : UInt64(UInt32.max)
            fromSendUs.append(UInt32(clamping: fromSend))
            fromHandlerUs.append(UInt32(clamping: (nowNs &- arrivedNs) / 1000))
        }

        func write(into w: inout JSONWriter) {
            for (key, values) in [("from_send_us", fromSendUs), ("from_handler_us", fromHandlerUs)] {
                let s = values.sorted()
                w.beginObject(key)
                w.int("count", Int64(s.count))
                w.int("p50", LatencyRecorder.percentile(s, 50))
                w.int("p99", LatencyRecorder.percentile(s, 99))
                w.int("max", s.last.map(Int64.init))
                w.endObject()
            }
        }
    }
    var all = Samples(capacity: 1 << 16)
    var radar = Samples(capacity: 1 << 12)
    var candidate: (sentNs: UInt64, arrivedNs: UInt64, wasPending: Bool, radar: Bool)?
    var open: (sentNs: UInt64, arrivedNs: UInt64, radar: Bool)?
    var framesWithoutChange: UInt64 = 0
    var framesWhilePending: UInt64 = 0
    var radarFrames: UInt64 = 0

    init() {}

    /// Whether a data frame is a rear radar's (bytes 10: transport, 18-19: profile code).
    static func isRadar(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count >= 20 else { return false }
        let code = UInt16(packet[18]) | UInt16(packet[19]) << 8
        switch SensorTransport(rawValue: packet[10]) {
        case .ant: return code == UInt16(SensorKind.radar.antDeviceType)
        case .ble: return SensorKind.radar.bleMeasurements.contains(code)
        case nil: return false
        }
    }

    mutating func packetArrived(_ packet: UnsafeRawBufferPointer, nowNs: UInt64, pagesPending: Bool) {
        guard let us = BridgeFrame.dataFrameTimeUs(packet) else { candidate = nil; return } // data frames only
        let radar = Self.isRadar(packet)
        if radar { radarFrames &+= 1 }
        candidate = (us &* 1000, nowNs, pagesPending, radar)
    }

    mutating func packetHandled(pagesPending: Bool) {
        guard let c = candidate else { return }
        candidate = nil
        if c.wasPending { framesWhilePending += 1; return }
        guard pagesPending else { framesWithoutChange += 1; return }
        if open == nil { open = (c.sentNs, c.arrivedNs, c.radar) }
    }

    mutating func pageHandedToBus(nowNs: UInt64) {
        guard let o = open else { return }
        open = nil
        all.add(nowNs: nowNs, sentNs: o.sentNs, arrivedNs: o.arrivedNs)
        if o.radar { radar.add(nowNs: nowNs, sentNs: o.sentNs, arrivedNs: o.arrivedNs) }
    }

    static func percentile(_ sorted: [UInt32], _ p: Double) -> Int64? {
        guard !sorted.isEmpty else { return nil }
        let rank = max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return Int64(sorted[min(rank, sorted.count) - 1])
    }

    func write(into w: inout JSONWriter) {
        all.write(into: &w)
        w.int("frames_without_change", Int64(clamping: framesWithoutChange))
        w.int("frames_while_pages_pending", Int64(clamping: framesWhilePending))
        if radarFrames > 0 {
            w.beginObject("radar")
            w.int("frames", Int64(clamping: radarFrames))
            radar.write(into: &w)
            w.endObject()
        }
    }
}
