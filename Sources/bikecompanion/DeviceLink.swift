import BoardIO
import Control
import Dispatch
import Glibc
import Synchronization

/// The companion's link to the device: one kept-open `subscribe` connection (reconnecting
/// with the last sequence number, so the device says what was missed), and a short connection
/// per command. The device is the single source of truth: the view here is only ever what
/// the stream said, and every command's answer is the device's reply line.
final class DeviceLink: @unchecked Sendable {
    enum Limits {
        /// No line for this long (the device sends metrics every second): reconnect.
        static let streamSilenceMs: Int32 = 5_000
        static let commandTimeoutMs: Int32 = 3_000
        static let reconnectDelayS: Double = 1
    }

    let socketPath: String
    let hub: Hub
    /// The ride so far, for the page's ride chart (RideHistory.swift).
    let history = RideHistory()
    private let lock = Mutex(())
    private var view: [String: JSONValue] = [:]
    private var lastSeq: UInt64?
    private var streamID: String?
    private var connectedFlag = false
    private var stopped = false
    private let commandQueue = DispatchQueue(label: "bikecompanion.commands", attributes: .concurrent)
    /// Where `run` follows the stream, blocking on the socket for the life of the process: a
    /// serial queue of its own, which libdispatch gives a thread of its own while it blocks
    /// (Foundation's `Thread`, used before, is not in FoundationEssentials).
    private let streamQueue = DispatchQueue(label: "bikecompanion.stream")
    var log: @Sendable (String) -> Void = { print($0) }
    /// Called when the stream says the rider cleared the pairing code (set before `start`).
    var onPairingDismissed: (@Sendable () -> Void)?

    init(socketPath: String, hub: Hub) {
        self.socketPath = socketPath
        self.hub = hub
    }

    var isConnected: Bool { lock.withLock { _ in connectedFlag } }

    /// The current view as a `snapshot` message (what a new WebSocket client gets first).
    func snapshotMessage() -> String {
        lock.withLock { _ in
            var v = view
            v["type"] = "snapshot"
            v["device_connected"] = .bool(connectedFlag)
            if v["seq"] == nil { v["seq"] = .null }
            return Self.encode(v)
        }
    }

    func start() {
        streamQueue.async { [self] in self.run() }
    }

    func stop() { lock.withLock { _ in stopped = true } }

    private func run() {
        var lastReason = ""
        while !lock.withLock({ _ in stopped }) {
            let reason = followOnce()
            setConnected(false)
            if reason != lastReason { log("device link: \(reason); retrying every \(Int(Limits.reconnectDelayS)) s") }
            lastReason = reason
            hub.publish(Self.encode(["type": "device", "connected": false, "reason": .string(reason)]))
            usleep(UInt32(Limits.reconnectDelayS * 1_000_000))
        }
    }

    /// Follows the stream until it ends; returns why.
    private func followOnce() -> String {
        let conn: ControlSocketClient.Connection
        do { conn = try ControlSocketClient.Connection(path: socketPath) } catch {
            return "cannot reach \(socketPath): \(error.message) (is bikecomputer running?)"
        }
        defer { conn.close() }
        let (from, stream) = lock.withLock { _ in (lastSeq, streamID) }
        var request = "subscribe"
        if let from, let stream { request += " \(from) \(stream)" }
        do {
            try conn.send(request)
            guard let ack = try conn.readLine(timeoutMs: Limits.commandTimeoutMs) else { return "the device closed the connection" }
            guard ack.hasPrefix("ok subscribed") else { return "the device refused `subscribe`: \(ack)" }
            log("device link: \(ack)")
            while true {
                guard let line = try conn.readLine(timeoutMs: Limits.streamSilenceMs) else { return "the device closed the stream" }
                if line.hasPrefix("error ") { return "the device dropped the stream: \(line.dropFirst(6))" }
                guard line.hasPrefix("{") else { continue }
                handle(line)
            }
        } catch {
            if error.errno == ETIMEDOUT { return "no stream line for \(Limits.streamSilenceMs / 1000) s" }
            return "stream read failed: \(error.message)"
        }
    }

    private func setConnected(_ c: Bool) {
        lock.withLock { _ in connectedFlag = c }
    }

    /// One stream line: update the view (unless it is replayed history), then forward it.
    private func handle(_ line: String) {
        guard let obj = JSONValue.parse(line.utf8)?.object, let type = obj["type"]?.string else { return }
        let seq = obj["seq"].flatMap(Self.sequenceNumber)
        let forward: String = lock.withLock { _ in
            var forward = line
            switch type {
            case "snapshot":
                view = obj
                view.removeValue(forKey: "missed"); view.removeValue(forKey: "replayed"); view.removeValue(forKey: "complete")
                streamID = obj["stream"]?.string
                lastSeq = seq
                connectedFlag = true
                var v = obj
                v["device_connected"] = true
                forward = Self.encode(v)
            case "metrics":
                for (k, v) in obj where k != "type" { view[k] = v }
                lastSeq = seq
                history.add(obj)
            case "state":
                if obj["replay"]?.bool != true {
                    for k in ["state", "mode", "countdown", "timer_ms", "lap", "seq", "t_ms"] { if let v = obj[k] { view[k] = v } }
                }
                if let seq, seq > (lastSeq ?? 0) { lastSeq = seq }
            default:
                if let seq, seq > (lastSeq ?? 0) { lastSeq = seq }
            }
            if obj["replay"]?.bool != true, let seq { view["seq"] = .integer(seq) }
            return forward
        }
        // The rider cleared a pairing code with a button: the code ends here too.
        if type == "pairing", obj["shown"]?.bool == false, obj["replay"]?.bool != true { onPairingDismissed?() }
        hub.publish(forward)
    }

    /// A line's `seq`: the device writes a whole number from 0 up. Read as NSNumber's
    /// `uint64Value` read it before, a fraction is dropped; a negative number (which that
    /// wrapped around) or a non-number (`true` was 1) is no sequence number.
    static func sequenceNumber(_ v: JSONValue) -> UInt64? {
        v.double.flatMap { UInt64(exactly: $0.rounded(.towardZero)) }
    }

    // MARK: Commands

    /// Sends one request line on its own connection; returns the device's reply line.
    func request(_ line: String) async -> String {
        await withCheckedContinuation { (cont: CheckedContinuation<String, Never>) in
            commandQueue.async { [socketPath] in cont.resume(returning: Self.blockingRequest(line, socketPath)) }
        }
    }

    private static func blockingRequest(_ line: String, _ socketPath: String) -> String {
        do throws(SystemError) {
            let conn = try ControlSocketClient.Connection(path: socketPath)
            defer { conn.close() }
            let reply = try conn.request(line, timeoutMs: Limits.commandTimeoutMs)
            return reply.isEmpty ? "error the device closed the connection without a reply" : reply
        } catch {
            return error.errno == ETIMEDOUT
                ? "error the device did not answer within \(Limits.commandTimeoutMs / 1000) s"
                : "error cannot reach the device at \(socketPath): \(error.message) (is bikecomputer running?)"
        }
    }

    /// One JSON object, its keys sorted (as JSONSerialization's `.sortedKeys` wrote it before).
    static func encode(_ obj: [String: JSONValue]) -> String {
        JSONValue.object(obj).serialized()
    }
}

/// The device's reply line split into its parts: `ok STATE: message`, `error STATE: message`
/// or `error message` (a request the device could not parse).
struct DeviceReply: Sendable {
    var ok: Bool
    var state: String?
    var message: String
    var line: String

    init(_ line: String) {
        self.line = line
        let (ok, body) = ControlProtocol.parseReply(line)
        self.ok = ok
        let states = ["idle", "prepared", "running", "paused", "stopped", "ended"]
        if let colon = body.firstIndex(of: ":"), states.contains(String(body[..<colon])) {
            state = String(body[..<colon])
            message = String(body[body.index(after: colon)...]).trimmingSpaces()
        } else {
            state = nil
            message = body
        }
    }

    var json: [String: JSONValue] {
        ["ok": .bool(ok), "state": state.map(JSONValue.string) ?? .null, "message": .string(message), "reply": .string(line)]
    }
}

/// The WebSocket clients: each has a bounded queue; one that falls behind is closed with the
/// reason, so a stuck phone never holds up the stream or the other clients.
final class Hub: @unchecked Sendable {
    enum Limits {
        static let queuedMessagesMax = 256
        static let clientsMax = 16
    }

    final class Client: @unchecked Sendable {
        let id: Int
        let tokenID: String
        let continuation: AsyncStream<String>.Continuation
        var closeReason: String?
        init(id: Int, tokenID: String, continuation: AsyncStream<String>.Continuation) {
            self.id = id
            self.tokenID = tokenID
            self.continuation = continuation
        }
    }

    private let lock = Mutex(())
    private var clients: [Int: Client] = [:]
    private var nextID = 0

    var count: Int { lock.withLock { _ in clients.count } }

    /// A new client's message stream, or nil when there are too many.
    func add(tokenID: String) -> (Client, AsyncStream<String>)? {
        let (stream, cont) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(Limits.queuedMessagesMax))
        return lock.withLock { _ in
            guard clients.count < Limits.clientsMax else { return nil }
            nextID += 1
            let c = Client(id: nextID, tokenID: tokenID, continuation: cont)
            clients[c.id] = c
            return (c, stream)
        }
    }

    func remove(_ c: Client) {
        _ = lock.withLock { _ in clients.removeValue(forKey: c.id) }
        c.continuation.finish()
    }

    func publish(_ message: String) {
        let all = lock.withLock { _ in Array(clients.values) }
        for c in all {
            if case .dropped = c.continuation.yield(message) {
                close(c, reason: "fell behind: more than \(Limits.queuedMessagesMax) messages unread; reconnect")
            }
        }
    }

    /// Sends one client a message (a command's result).
    func send(_ message: String, to c: Client) {
        if case .dropped = c.continuation.yield(message) {
            close(c, reason: "fell behind: more than \(Limits.queuedMessagesMax) messages unread; reconnect")
        }
    }

    /// Closes the clients whose token is no longer valid.
    func closeRevoked(valid: (String) -> Bool) {
        let all = lock.withLock { _ in Array(clients.values) }
        for c in all where !valid(c.tokenID) { close(c, reason: "token revoked; pair again") }
    }

    func closeReasonOf(_ c: Client) -> String? { lock.withLock { _ in c.closeReason } }

    func close(_ c: Client, reason: String) {
        lock.withLock { _ in
            if c.closeReason == nil { c.closeReason = reason }
            clients.removeValue(forKey: c.id)
        }
        c.continuation.finish()
    }
}
