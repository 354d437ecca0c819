import AppCore
import BoardIO
import Control
import Device
import RideModel

/// The control socket on the run loop: every line goes to `BoardWiring.controlLine` (the
/// runtime's one dispatch); a `subscribe` turns the connection into the event stream.
public final class ControlComponent: BoardComponent {
    public let path: String
    let log: LogPort
    public private(set) var server: ControlSocketServer?

    public init(path: String, log: LogPort) {
        self.path = path
        self.log = log
    }

    /// Without its socket nobody can control the device (and the companion cannot follow it):
    /// a failure here stops the start-up.
    public func start(_ board: BoardWiring) throws {
        try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: path))
        let s = try ControlSocketServer(path: path, loop: board.loop) { [unowned board] line in
            let a = board.controlLine(line)
            if let id = a.awaitingDurability { return .later(id) }
            if let lines = a.subscription { return .subscribing(a.line, then: lines) }
            return .init(a.line, isError: a.isError)
        }
        s.onDrop = { [unowned self] reason in self.log.log(.warning, "control client dropped: \(reason.rawValue)") }
        // A state change is answered once durable (the journal's sync completion settles it).
        board.runtime.durableReplySink = { [weak s] id, a in s?.complete(id, .init(a.line, isError: a.isError)) }
        server = s
        log.log(.info, "control socket \(path)")
    }

    public var state: String { server == nil ? "not started" : "ok (\(path))" }
    public var hardwareErrors: UInt64 { 0 }
    public var subscriberCount: Int { server?.subscriberCount ?? 0 }

    public func broadcast(_ line: String) { server?.broadcast(line) }

    public func close() {
        server?.close()
        server = nil
    }
}

/// The companion link: the control stream (numbered state, metrics and zone lines) sent to the
/// control socket's subscribers — the companion process follows it. Metrics lines at most about
/// once a second, and only built when somebody follows.
public final class CompanionLink: BoardComponent {
    /// Subscribers' metrics lines at least this far apart (ticks may come closer at the core's
    /// other deadlines: a long press, an overlay's end).
    public static let metricsPeriodMs: Int64 = 900

    public let stream: ControlStream
    var lastMetricsAtMs: Int64?
    /// Metrics lines built (only while somebody follows).
    public private(set) var metricsLines: UInt64 = 0

    public init(_ stream: ControlStream) { self.stream = stream }

    public func start(_ board: BoardWiring) throws {
        stream.sink = { [unowned board] line in board.control.broadcast(line) }
    }

    /// The tick's share: state changes no effect announced, and the metrics line when due.
    func tick(_ board: BoardWiring, at t: MonotonicInstant) {
        let due = lastMetricsAtMs.map { t.milliseconds - $0 >= Self.metricsPeriodMs } ?? true
        let followed = due && board.control.subscriberCount > 0
        if followed {
            lastMetricsAtMs = t.milliseconds
            metricsLines &+= 1
        }
        board.runtime.sample(stream, metrics: followed, at: t)
    }

    public var state: String { "ok" }
    public var hardwareErrors: UInt64 { 0 }

    public func close() { stream.sink = nil }
}
