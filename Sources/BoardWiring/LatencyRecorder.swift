import Control
import Sensors

/// "Sensor frame arrives → first changed display page handed to the bus", per frame that
/// changed the screen while no page was waiting (`bikecomputer run --measure-latency`). Two
/// clocks: from the bridge's send time (the bridge stamps CLOCK_MONOTONIC µs into the frame:
/// includes the socket and the epoll wake-up) and from the start of the loop's packet handler.
struct LatencyRecorder {
    static let samplesMax = 1 << 20
    var fromSendUs: [UInt32] = []
    var fromHandlerUs: [UInt32] = []
    var candidate: (sentNs: UInt64, arrivedNs: UInt64, wasPending: Bool)?
    var open: (sentNs: UInt64, arrivedNs: UInt64)?
    var framesWithoutChange: UInt64 = 0
    var framesWhilePending: UInt64 = 0

    init() {
        fromSendUs.reserveCapacity(1 << 16)
        fromHandlerUs.reserveCapacity(1 << 16)
    }

    mutating func packetArrived(_ packet: UnsafeRawBufferPointer, nowNs: UInt64, pagesPending: Bool) {
        guard let us = BridgeFrame.dataFrameTimeUs(packet) else { candidate = nil; return } // data frames only
        candidate = (us &* 1000, nowNs, pagesPending)
    }

    mutating func packetHandled(pagesPending: Bool) {
        guard let c = candidate else { return }
        candidate = nil
        if c.wasPending { framesWhilePending += 1; return }
        guard pagesPending else { framesWithoutChange += 1; return }
        if open == nil { open = (c.sentNs, c.arrivedNs) }
    }

    mutating func pageHandedToBus(nowNs: UInt64) {
        guard let o = open else { return }
        open = nil
        guard fromSendUs.count < Self.samplesMax else { return }
        let fromSend = nowNs >= o.sentNs && o.sentNs > 0 ? (nowNs - o.sentNs) / 1000 : UInt64(UInt32.max)
        fromSendUs.append(UInt32(clamping: fromSend))
        fromHandlerUs.append(UInt32(clamping: (nowNs &- o.arrivedNs) / 1000))
    }

    static func percentile(_ sorted: [UInt32], _ p: Double) -> Int64? {
        guard !sorted.isEmpty else { return nil }
        let rank = max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return Int64(sorted[min(rank, sorted.count) - 1])
    }

    func write(into w: inout JSONWriter) {
        for (key, values) in [("from_send_us", fromSendUs), ("from_handler_us", fromHandlerUs)] {
            let s = values.sorted()
            w.beginObject(key)
            w.int("count", Int64(s.count))
            w.int("p50", Self.percentile(s, 50))
            w.int("p99", Self.percentile(s, 99))
            w.int("max", s.last.map(Int64.init))
            w.endObject()
        }
        w.int("frames_without_change", Int64(clamping: framesWithoutChange))
        w.int("frames_while_pages_pending", Int64(clamping: framesWhilePending))
    }
}
