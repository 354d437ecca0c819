import CBoardShims
import Glibc

/// The control socket: a Unix stream socket (mode 0600, owner only) served from the run loop.
/// Clients send lines; each complete line goes to `lineHandler`, whose reply line is queued
/// back. Everything is non-blocking and bounded: a client that sends an over-long line, keeps
/// sending invalid lines, stops reading its replies, idles too long, or belongs to another user
/// is dropped with a reason, and the loop never waits for it.
public final class ControlSocketServer {
    /// Named limits (per server and per client).
    public enum Limits {
        public static let clientsMax = 8
        public static let requestLineBytesMax = 512
        /// Queued reply bytes per client; a client that lets more pile up is not reading.
        public static let replyBufferBytesMax = 16 * 1024
        public static let readBytesPerWakeMax = 1024
        public static let acceptsPerWakeMax = 8
        /// Invalid lines in a row before the client is dropped.
        public static let consecutiveErrorsMax = 8
        public static let idleTimeoutMs: Int64 = 60_000
        public static let listenBacklog: Int32 = 8
        /// Queued stream bytes per subscriber (`broadcast`); a subscriber that lets more pile
        /// up has fallen behind and is dropped, so the loop never waits for it.
        public static let streamBufferBytesMax = 64 * 1024
        /// Request bytes a client may send while its last command's reply waits for durability
        /// (`Reply.awaiting`); they are read and handled, in order, once the reply is sent.
        public static let heldBytesMax = 4 * requestLineBytesMax
    }

    /// Why a client was disconnected by the server.
    public enum DropReason: String, Sendable, Hashable, CaseIterable {
        case peerNotAllowed = "peer_not_allowed"
        case tooManyClients = "too_many_clients"
        case lineTooLong = "line_too_long"
        case tooManyInvalidLines = "too_many_invalid_lines"
        case notReading = "not_reading"
        case idle = "idle"
        case ioError = "io_error"
        case fellBehind = "fell_behind"
        case tooMuchWhileWaiting = "too_much_while_waiting"

        public var explanation: String {
            switch self {
            case .peerNotAllowed: "only the user running bikecomputer (or root) may use the control socket"
            case .tooManyClients: "more than \(Limits.clientsMax) clients connected; close another client"
            case .lineTooLong: "a line longer than \(Limits.requestLineBytesMax) bytes; send one short command per line"
            case .tooManyInvalidLines: "\(Limits.consecutiveErrorsMax) invalid lines in a row; send `help` for the commands"
            case .notReading: "more than \(Limits.replyBufferBytesMax) reply bytes unread; read the replies"
            case .idle: "no request for \(Limits.idleTimeoutMs / 1000) s"
            case .ioError: "a read or write on the socket failed"
            case .fellBehind: "more than \(Limits.streamBufferBytesMax) stream bytes unread; read faster, then `subscribe LAST_SEQ` to catch up"
            case .tooMuchWhileWaiting: "more than \(Limits.heldBytesMax) request bytes sent while a reply waited for the card; wait for each reply"
            }
        }
    }

    /// A handler's answer to one line: the reply (without the newline) and whether the line was
    /// invalid (counted towards `Limits.consecutiveErrorsMax`).
    public struct Reply: Sendable {
        public var line: String
        public var isError: Bool
        /// Set: the client becomes a subscriber after this reply; these lines (a snapshot, a
        /// replay) go to it first, then everything `broadcast` sends.
        public var streamLines: [String]?
        /// Set: nothing is sent now; the reply comes later through `complete(_:_:)` with this
        /// id (a state change answered once it is durable). The client's further lines wait
        /// for it, so its replies stay in order.
        public var awaiting: UInt64?
        public init(_ line: String, isError: Bool = false) {
            self.line = line
            self.isError = isError
        }
        /// A reply that will come later (`complete`).
        public static func later(_ id: UInt64) -> Reply {
            var r = Reply("")
            r.awaiting = id
            return r
        }
        /// A reply that turns the connection into a stream (`subscribe`).
        public static func subscribing(_ line: String, then lines: [String]) -> Reply {
            var r = Reply(line)
            r.streamLines = lines
            return r
        }
    }

    /// Counters for status and tests.
    public struct Counters: Sendable {
        public var accepted: UInt64 = 0
        public var linesHandled: UInt64 = 0
        public var dropped: [DropReason: UInt64] = [:]
        public var closedByPeer: UInt64 = 0
        /// Replies sent later (`complete`), and those whose client had gone by then.
        public var repliesCompleted: UInt64 = 0
        public var repliesForGoneClients: UInt64 = 0
    }

    private final class Client {
        let fd: FileDescriptor
        var registration: IORegistration?
        var input: [UInt8] = []
        var output: [UInt8] = []
        var consecutiveErrors = 0
        var lastActivityMs: Int64
        var closeWhenFlushed = false
        var subscribed = false
        /// The id of the reply this client waits for (`Reply.awaiting`), if any.
        var awaiting: UInt64?
        /// Bytes read while waiting, handled once the reply is sent (at most `heldBytesMax`).
        var held: [UInt8] = []
        /// The peer shut down its sending side while a reply waited: it is sent, then the
        /// connection closes.
        var peerClosed = false
        init(fd: FileDescriptor, nowMs: Int64) {
            self.fd = fd
            lastActivityMs = nowMs
            input.reserveCapacity(Limits.requestLineBytesMax)
        }
    }

    public let path: String
    private let loop: EventLoop
    private let listener: FileDescriptor
    private var listenerRegistration: IORegistration?
    private var clients: [Int32: Client] = [:]
    /// Waiting reply id → the client's descriptor.
    private var awaitingClients: [UInt64: Int32] = [:]
    private var sweepTimer: TimerID?
    private let lineHandler: (String) -> Reply
    private let ownerUID: uid_t
    private var scratch = [UInt8](repeating: 0, count: Limits.readBytesPerWakeMax)
    public private(set) var counters = Counters()
    /// Called with each drop (for the log).
    public var onDrop: ((DropReason) -> Void)?

    public var clientCount: Int { clients.count }
    public var subscriberCount: Int { clients.values.reduce(0) { $0 + ($1.subscribed ? 1 : 0) } }
    /// Lines given to `broadcast` (drops for falling behind are in `counters.dropped`).
    public private(set) var linesBroadcast: UInt64 = 0

    /// Creates the socket at `path` (replacing a stale socket file), mode 0600, and serves it on
    /// `loop`. Throws when the directory is missing or not writable.
    public init(path: String, loop: EventLoop, lineHandler: @escaping (String) -> Reply) throws(EventLoopError) {
        self.path = path
        self.loop = loop
        self.lineHandler = lineHandler
        ownerUID = geteuid()
        do {
            let raw = try retryingOnInterrupt("bind", path) { cbs_unix_listen(path, Limits.listenBacklog, 0o600) }
            listener = FileDescriptor(rawValue: raw)
        } catch { throw .system(error) }
        do {
            listenerRegistration = try loop.register(listener, "control.accept", interest: .read) { [unowned self] _ in
                self.acceptClients()
            }
        } catch {
            listener.close()
            unlink(path)
            throw error
        }
        sweepTimer = loop.scheduleRepeating("control.sweep", everyMs: 1_000) { [unowned self] in self.dropIdleClients() }
    }

    deinit {
        if listenerRegistration != nil { close() }
    }

    /// Closes every client and the socket, and removes the socket file.
    public func close() {
        guard listenerRegistration != nil else { return }
        for client in Array(clients.values) { disconnect(client) }
        if let r = listenerRegistration { loop.deregister(r) }
        listenerRegistration = nil
        if let t = sweepTimer { loop.cancelTimer(t) }
        sweepTimer = nil
        listener.close()
        unlink(path)
    }

    // MARK: Accepting

    private func acceptClients() {
        for _ in 0..<Limits.acceptsPerWakeMax {
            let raw = cbs_unix_accept(listener.rawValue)
            if raw < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return // EAGAIN: nothing more to accept (other errors: try again next wake-up)
            }
            let fd = FileDescriptor(rawValue: raw)
            counters.accepted += 1
            var peer: uid_t = 0
            if cbs_peer_uid(raw, &peer) != 0 || (peer != ownerUID && peer != 0) {
                refuse(fd, .peerNotAllowed)
                continue
            }
            if clients.count >= Limits.clientsMax {
                refuse(fd, .tooManyClients)
                continue
            }
            let client = Client(fd: fd, nowMs: loop.nowMs)
            do {
                try register(client, .read)
            } catch {
                refuse(fd, .tooManyClients)
                continue
            }
            clients[raw] = client
        }
    }

    private func register(_ client: Client, _ interest: IOInterest) throws(EventLoopError) {
        client.registration = try loop.register(client.fd, "control.client", interest: interest) { [unowned self, unowned client] readiness in
            self.service(client, readiness)
        }
    }

    /// Tells a client why it is refused (best effort, never blocking) and closes it.
    private func refuse(_ fd: FileDescriptor, _ reason: DropReason) {
        let text = Array("error dropped \(reason.rawValue): \(reason.explanation)\n".utf8)
        _ = text.withUnsafeBytes { cbs_send(fd.rawValue, $0.baseAddress, $0.count) }
        fd.close()
        count(reason)
    }

    private func count(_ reason: DropReason) {
        counters.dropped[reason, default: 0] += 1
        onDrop?(reason)
    }

    // MARK: Serving

    private func service(_ client: Client, _ readiness: IOReadiness) {
        if readiness.contains(.writable) || !client.output.isEmpty {
            guard flush(client) else { return }
        }
        if readiness.contains(.readable) || readiness.contains(.hangup) || readiness.contains(.error) {
            readLines(client)
        }
    }

    private func readLines(_ client: Client) {
        let n = scratch.withUnsafeMutableBytes { Glibc.read(client.fd.rawValue, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            drop(client, .ioError)
            return
        }
        if n == 0 { // the peer closed (or shut down its side): finish writing, then close
            if client.awaiting != nil {
                // A reply is still to come and a half-closed peer (`socat`, `nc -N`) waits for
                // it: the descriptor leaves the epoll set (its end of file would wake every
                // turn) until `complete` sends the reply and closes. A peer gone altogether
                // shows then as a failed send.
                client.peerClosed = true
                updateInterest(client)
                return
            }
            if client.output.isEmpty {
                counters.closedByPeer += 1
                disconnect(client)
            } else {
                client.closeWhenFlushed = true
                updateInterest(client)
            }
            return
        }
        client.lastActivityMs = loop.nowMs
        guard consume(scratch[0..<n], from: client) else { return }
        _ = flush(client)
    }

    /// Splits `bytes` into lines and handles them; once a line's reply is to come later the
    /// rest is held for then. False when the client was dropped.
    private func consume(_ bytes: ArraySlice<UInt8>, from client: Client) -> Bool {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if client.awaiting != nil {
                if client.held.count + (bytes.endIndex - i) > Limits.heldBytesMax {
                    drop(client, .tooMuchWhileWaiting)
                    return false
                }
                client.held.append(contentsOf: bytes[i...])
                return true
            }
            let byte = bytes[i]
            i += 1
            if byte == UInt8(ascii: "\n") {
                if client.input.last == UInt8(ascii: "\r") { client.input.removeLast() }
                let line = String(decoding: client.input, as: UTF8.self)
                client.input.removeAll(keepingCapacity: true)
                guard handle(line, from: client) else { return false }
            } else if client.input.count >= Limits.requestLineBytesMax {
                drop(client, .lineTooLong)
                return false
            } else {
                client.input.append(byte)
            }
        }
        return true
    }

    /// Sends the reply that `Reply.later(id)` promised (the state change is durable, or it
    /// says why not). Then the lines the client sent meanwhile are handled, on a later turn
    /// (never inside the caller, which is the runtime). A client gone by then is counted.
    public func complete(_ id: UInt64, _ reply: Reply) {
        guard let raw = awaitingClients.removeValue(forKey: id), let client = clients[raw], client.awaiting == id else {
            counters.repliesForGoneClients &+= 1
            return
        }
        client.awaiting = nil
        counters.repliesCompleted &+= 1
        if client.registration == nil {
            do { try register(client, .write) } catch {
                drop(client, .ioError)
                return
            }
        }
        guard queue(reply, to: client) else { return }
        if !client.held.isEmpty {
            _ = loop.scheduleTimer("control.held", atMs: loop.nowMs, periodMs: nil) { [weak self, weak client] in
                guard let self, let client, self.clients[client.fd.rawValue] === client, client.awaiting == nil else { return }
                let held = client.held
                client.held.removeAll(keepingCapacity: true)
                guard self.consume(held[...], from: client) else { return }
                if client.peerClosed && client.awaiting == nil { client.closeWhenFlushed = true }
                _ = self.flush(client)
            }
        } else if client.peerClosed {
            client.closeWhenFlushed = true
        }
        _ = flush(client)
    }

    /// Runs the handler and queues the reply; false when the client was dropped.
    private func handle(_ line: String, from client: Client) -> Bool {
        let reply = lineHandler(line)
        counters.linesHandled += 1
        if let id = reply.awaiting {
            client.consecutiveErrors = 0
            client.awaiting = id
            awaitingClients[id] = client.fd.rawValue
            return true
        }
        return queue(reply, to: client)
    }

    /// Queues a reply (and a subscription's first lines); false when the client was dropped.
    private func queue(_ reply: Reply, to client: Client) -> Bool {
        client.consecutiveErrors = reply.isError ? client.consecutiveErrors + 1 : 0
        let bufferMax = client.subscribed || reply.streamLines != nil ? Limits.streamBufferBytesMax : Limits.replyBufferBytesMax
        if client.output.count + reply.line.utf8.count + 1 > bufferMax {
            drop(client, client.subscribed ? .fellBehind : .notReading)
            return false
        }
        client.output.append(contentsOf: reply.line.utf8)
        client.output.append(UInt8(ascii: "\n"))
        if let lines = reply.streamLines {
            client.subscribed = true
            for line in lines where !queueStreamLine(line, to: client) { return false }
        }
        if client.consecutiveErrors >= Limits.consecutiveErrorsMax {
            drop(client, .tooManyInvalidLines)
            return false
        }
        return true
    }

    /// Writes what the socket takes now; false when the client was closed.
    private func flush(_ client: Client) -> Bool {
        while !client.output.isEmpty {
            let n = client.output.withUnsafeBytes { cbs_send(client.fd.rawValue, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { break }
                drop(client, .ioError)
                return false
            }
            client.output.removeFirst(n)
        }
        if client.output.isEmpty && client.closeWhenFlushed {
            counters.closedByPeer += 1
            disconnect(client)
            return false
        }
        updateInterest(client)
        return true
    }

    private func updateInterest(_ client: Client) {
        var interest: IOInterest = client.closeWhenFlushed || client.peerClosed ? [] : .read
        if !client.output.isEmpty { interest.insert(.write) }
        if interest.isEmpty && client.peerClosed {
            // Half-closed, waiting for a reply: out of the epoll set (its end of file is always
            // reported) until `complete` registers it again to send the reply.
            if let r = client.registration { loop.deregister(r) }
            client.registration = nil
            return
        }
        guard let r = client.registration else { return }
        do { try loop.setInterest(r, interest) } catch { drop(client, .ioError) }
    }

    // MARK: Streaming

    /// Queues `line` (without newline) to every subscriber and writes what each socket takes
    /// now, never waiting. A subscriber whose queue would pass `Limits.streamBufferBytesMax`
    /// is dropped (`fell_behind`).
    public func broadcast(_ line: String) {
        for client in Array(clients.values) where client.subscribed {
            if queueStreamLine(line, to: client) { _ = flush(client) }
        }
        linesBroadcast &+= 1
    }

    /// False when the client was dropped for falling behind.
    private func queueStreamLine(_ line: String, to client: Client) -> Bool {
        if client.output.count + line.utf8.count + 1 > Limits.streamBufferBytesMax {
            drop(client, .fellBehind)
            return false
        }
        client.output.append(contentsOf: line.utf8)
        client.output.append(UInt8(ascii: "\n"))
        return true
    }

    private func dropIdleClients() {
        let now = loop.nowMs
        // Subscribers only read: the stream keeps them busy, a dead one is dropped as fell_behind.
        for client in Array(clients.values) where !client.subscribed && now - client.lastActivityMs >= Limits.idleTimeoutMs {
            drop(client, .idle)
        }
    }

    private func drop(_ client: Client, _ reason: DropReason) {
        if reason == .fellBehind {
            // The backlog is useless to a client that cannot keep up: send only the reason,
            // after a newline in case a line was cut (best effort, never blocking).
            client.output.removeAll()
            client.output += Array("\nerror dropped \(reason.rawValue): \(reason.explanation)\n".utf8)
            _ = client.output.withUnsafeBytes { cbs_send(client.fd.rawValue, $0.baseAddress, $0.count) }
        } else if reason != .notReading && reason != .ioError {
            // Best effort, never blocking: the replies already queued, then the reason.
            client.output += Array("error dropped \(reason.rawValue): \(reason.explanation)\n".utf8)
            _ = client.output.withUnsafeBytes { cbs_send(client.fd.rawValue, $0.baseAddress, $0.count) }
        }
        count(reason)
        disconnect(client)
    }

    private func disconnect(_ client: Client) {
        if let id = client.awaiting { awaitingClients[id] = nil }
        client.awaiting = nil
        if let r = client.registration { loop.deregister(r) }
        client.registration = nil
        clients[client.fd.rawValue] = nil
        client.fd.close()
    }
}

/// The client side: one blocking connection, one request line, one reply line. Used by
/// `bikecomputer ctl` (not by the loop).
public enum ControlSocketClient {
    public static let replyBytesMax = 64 * 1024

    /// Sends `line` and returns the reply line (without its newline). A line holding a line
    /// break is refused (EINVAL) before connecting: it would be read as two requests, the text
    /// after the break as a command of its own (a sensor name "HR\ndiscard").
    public static func request(_ line: String, path: String) throws(SystemError) -> String {
        if line.utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) {
            throw SystemError(errno: EINVAL, call: "request", context: "(the line holds a line break; one request is one line)")
        }
        let raw = try retryingOnInterrupt("connect", path) { cbs_unix_connect(path) }
        let fd = FileDescriptor(rawValue: raw)
        defer { fd.close() }
        // send(MSG_NOSIGNAL): a server that refuses us closes the socket, and the refusal it
        // wrote first is still worth reading, so EPIPE is not fatal here.
        let request = Array((line + "\n").utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { cbs_send(raw, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { break }
                throw SystemError.current("send", path)
            }
            sent += n
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while reply.count < replyBytesMax {
            let result: Result<Int, SystemError> = buffer.withUnsafeMutableBytes { b in
                do throws(SystemError) { return .success(try fd.read(into: b)) } catch { return .failure(error) }
            }
            let n = try result.get()
            if n == 0 { break }
            if let nl = buffer[0..<n].firstIndex(of: UInt8(ascii: "\n")) {
                reply.append(contentsOf: buffer[0..<nl])
                break
            }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// The socket file's mode bits and owner (for checks and `status`).
    public static func fileMode(_ path: String) throws(SystemError) -> (mode: UInt32, ownerUID: UInt32) {
        var mode: mode_t = 0
        var owner: uid_t = 0
        _ = try retryingOnInterrupt("lstat", path) { cbs_path_mode(path, &mode, &owner) }
        return (UInt32(mode), UInt32(owner))
    }
}

extension ControlSocketClient {
    /// A kept-open connection (a stream subscriber such as the companion): blocking calls,
    /// each bounded by a timeout. Not for the run loop.
    public final class Connection: @unchecked Sendable {
        /// A line longer than this from the server is an error (the stream's lines are ≈1 KB).
        public static let lineBytesMax = 64 * 1024
        private let fd: FileDescriptor
        private var pending: [UInt8] = []
        private var closed = false
        public let path: String

        public init(path: String) throws(SystemError) {
            self.path = path
            fd = FileDescriptor(rawValue: try retryingOnInterrupt("connect", path) { cbs_unix_connect(path) })
        }

        deinit { close() }

        /// Sends one line (a newline is added).
        public func send(_ line: String) throws(SystemError) {
            let bytes = Array((line + "\n").utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { cbs_send(fd.rawValue, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SystemError.current("send", path)
                }
                sent += n
            }
        }

        /// The next line (without newline); nil when the server closed the connection. Throws
        /// ETIMEDOUT when no complete line arrives within `timeoutMs`.
        public func readLine(timeoutMs: Int32) throws(SystemError) -> String? {
            let deadline = MonotonicClock.nowMs + Int64(timeoutMs)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                if let nl = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<nl], as: UTF8.self)
                    pending.removeFirst(nl + 1)
                    return line
                }
                if pending.count > Self.lineBytesMax { throw SystemError(errno: EMSGSIZE, call: "read", context: path) }
                let left = deadline - MonotonicClock.nowMs
                if left <= 0 { throw SystemError(errno: ETIMEDOUT, call: "read", context: path) }
                var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
                let r = Glibc.poll(&p, 1, Int32(clamping: left))
                if r < 0 {
                    if errno == EINTR { continue }
                    throw SystemError.current("poll", path)
                }
                if r == 0 { continue }
                let result: Result<Int, SystemError> = buffer.withUnsafeMutableBytes { b in
                    do throws(SystemError) { return .success(try fd.read(into: b)) } catch { return .failure(error) }
                }
                let n = try result.get()
                if n == 0 { return pending.isEmpty ? nil : String(decoding: pending.splice(), as: UTF8.self) }
                pending.append(contentsOf: buffer[0..<n])
            }
        }

        /// Sends one request and returns its reply line, skipping stream lines (`{...}`).
        public func request(_ line: String, timeoutMs: Int32) throws(SystemError) -> String {
            try send(line)
            while true {
                guard let reply = try readLine(timeoutMs: timeoutMs) else { return "" }
                if !reply.hasPrefix("{") && !reply.isEmpty { return reply }
            }
        }

        public func close() {
            guard !closed else { return }
            closed = true
            fd.close()
        }
    }
}

private extension Array where Element == UInt8 {
    mutating func splice() -> [UInt8] {
        let all = self
        removeAll()
        return all
    }
}
