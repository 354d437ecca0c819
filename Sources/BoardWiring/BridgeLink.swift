import AppCore
import BoardIO
import Control
import Device
import Glibc
import RideModel
import Sensors

/// The bridge transport on the run loop: a SOCK_SEQPACKET listener the bridge process connects
/// to, or a serial device a dongle writes COBS records on. It only moves bytes: each packet or
/// serial read goes to `DeviceRuntime.receive` as it arrived (the runtime parses, decodes and
/// counts), and the link's ups and downs to `bridgeConnected`/`bridgeDisconnected`. Work per
/// wake-up is bounded; the receive buffer is allocated once, so a frame allocates nothing here.
///
/// Protocol version 2 (docs/bridge-protocol.md), on the socket: it answers a bridge's hello with
/// the app's (saying it reads notification sockets), sends search and reload requests, and takes
/// the notification sockets the bridge hands over (SCM_RIGHTS): each is read here, every value
/// turned into the data frame the bridge would have sent, so the bridge takes no part per
/// notification. The sockets close with the bridge's connection (the bridge reads them again).
public final class BridgeLink {
    public enum Transport: Sendable, Hashable {
        case unixSocket(path: String)
        case serial(path: String, baud: Int)
    }

    /// Named limits.
    public enum Limits {
        public static let packetsPerWakeMax = 32
        public static let serialBytesPerReadMax = 1024
        public static let serialReadsPerWakeMax = 4
        /// A serial device that is missing or went away is reopened this often.
        public static let serialReopenMs: Int64 = 2_000
        /// Notification sockets read at once (sensors × measurement characteristics); one more
        /// is given back to the bridge, which then forwards its values itself.
        public static let notificationSocketsMax = 16
        /// (sensor, characteristic) pairs whose values read from sockets are counted.
        public static let socketCountsMax = 32
    }

    /// A notification socket the bridge handed over: its values become data frames of this
    /// sensor and characteristic, built in `frame` (its first 21 bytes are the frame's header).
    final class NotificationSocket {
        let connection: SeqPacketConnection
        var registration: IORegistration?
        var frame: [UInt8]
        let who: SourceIdentity
        let profileCode: UInt16
        let countIndex: Int

        init(_ connection: SeqPacketConnection, who: SourceIdentity, profileCode: UInt16, header: FrameBytes, countIndex: Int) {
            self.connection = connection
            self.who = who
            self.profileCode = profileCode
            self.countIndex = countIndex
            frame = Array(repeating: 0, count: 21 + Payload.bytesMax + 1)
            for i in 0..<min(header.count, 20) { frame[i] = header[i] }
            frame[0] = BridgeFrame.version
            frame[1] = 3  // data
        }
    }

    public let transport: Transport
    let runtime: DeviceRuntime
    let loop: EventLoop
    let log: LogPort
    var listener: SeqPacketListener?
    var listenerRegistration: IORegistration?
    var connection: SeqPacketConnection?
    var connectionRegistration: IORegistration?
    var serial: SerialPort?
    var serialRegistration: IORegistration?
    var reopenTimer: TimerID?
    var buffer: [UInt8]
    var sockets: [NotificationSocket] = []
    /// Values read from notification sockets, per (sensor, characteristic) ever handed over.
    public private(set) var socketCounts: [(who: SourceIdentity, profileCode: UInt16, values: UInt64)] = []
    /// The newest protocol version the connected bridge speaks (its hello); 1 before a hello.
    public private(set) var bridgeVersionMax: UInt8 = 1
    /// The radios the connected bridge has (its hello: bit 0 ANT+, bit 1 BLE).
    public private(set) var bridgeRadios: UInt8 = 0
    public private(set) var socketsAccepted: UInt64 = 0
    public private(set) var socketsReturned: UInt64 = 0
    /// Frames the app sent to the bridge, and those it could not send.
    public private(set) var framesSent: UInt64 = 0
    public private(set) var sendFailures: UInt64 = 0
    /// A search's frames (found, scan state) as they arrive, for `bikecomputer sensors scan`
    /// (they also go to the runtime, which shows them on the Sensors screen).
    public var onSearchFrame: ((BridgeMessage) -> Void)?
    /// Bad sensor input as last logged, and when (a line at most once a minute while it grows).
    var loggedBad = BadInputCounters()
    var lastBadLogMs: Int64?
    public static let badInputLogPeriodMs: Int64 = 60_000
    public private(set) var connectionsAccepted: UInt64 = 0
    public private(set) var disconnections: UInt64 = 0
    /// Packets of 0 bytes from the bridge (bad input: counted as malformed frames, not a disconnect).
    public private(set) var emptyPackets: UInt64 = 0
    public private(set) var transportErrors: UInt64 = 0
    public private(set) var lastError: String?

    /// Called after a wake-up fed inputs to the runtime (the loop re-arms its deadline timers).
    public var onInputs: (() -> Void)?
    /// Called with each raw packet before it is decoded (measurement mode only).
    public var onPacket: ((UnsafeRawBufferPointer) -> Void)?
    /// Called after each packet has gone through the runtime (measurement mode only).
    public var onPacketDone: (() -> Void)?

    public var isConnected: Bool { connection != nil || serial != nil }

    public init(transport: Transport, loop: EventLoop, runtime: DeviceRuntime, log: LogPort) {
        self.transport = transport
        self.loop = loop
        self.runtime = runtime
        self.log = log
        buffer = Array(repeating: 0, count: max(BridgeFrame.bytesMax + 16, Limits.serialBytesPerReadMax))
    }

    var now: MonotonicInstant { MonotonicInstant(milliseconds: loop.nowMs) }

    /// Starts listening (socket) or opening (serial). A socket that cannot be created throws:
    /// without it no sensor can ever arrive.
    public func start() throws(SystemError) {
        switch transport {
        case .unixSocket(let path):
            try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: path))
            let l = try SeqPacketListener.listen(path: path)
            listener = l
            do {
                listenerRegistration = try loop.register(l.fd, "bridge.accept", interest: .read) { [unowned self] _ in self.accept() }
            } catch {
                l.close()
                throw SystemError(errno: 24, call: "epoll_ctl", context: "\(path): \(error)")
            }
            log.log(.info, "waiting for the sensor bridge on \(path) (on the board: sudo systemctl start bikebridge; board/bridge/ sets it up)")
        case .serial:
            openSerial()
        }
        onInputs?()
    }

    /// Stops listening and closes the connection (shutdown).
    public func close() {
        dropConnection(announce: false)
        if let r = listenerRegistration { loop.deregister(r) }
        listenerRegistration = nil
        listener?.close()
        listener = nil
        closeSerial(announce: false)
        if let t = reopenTimer { loop.cancelTimer(t) }
        reopenTimer = nil
    }

    // MARK: Socket

    func accept() {
        guard let l = listener else { return }
        for _ in 0..<4 {
            let c: SeqPacketConnection?
            do { c = try l.accept() } catch {
                note("accepting a bridge connection failed: \(error)")
                return
            }
            guard let c else { return }
            if connection != nil {
                // A second bridge: the new one wins (the old one is a dead process whose
                // socket has not been closed yet, or a restart).
                log.log(.warning, "a new bridge connected; closing the previous connection")
                dropConnection(announce: true)
            }
            do {
                connectionRegistration = try loop.register(c.fd, "bridge.packet", interest: .read) { [unowned self] r in self.receive(r) }
            } catch {
                c.close()
                note("cannot watch the bridge connection: \(error)")
                continue
            }
            connection = c
            bridgeVersionMax = 1
            bridgeRadios = 0
            connectionsAccepted &+= 1
            runtime.bridgeConnected(at: now)
            log.log(.info, "sensor bridge connected")
        }
    }

    func receive(_ readiness: IOReadiness) {
        guard let c = connection else { return }
        var fed = false
        for _ in 0..<Limits.packetsPerWakeMax {
            let result: ReceiveResult
            var passed: FileDescriptor?
            var lost = false
            do {
                result = try buffer.withUnsafeMutableBytes { b throws(SystemError) in
                    try c.receive(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<(BridgeFrame.bytesMax + 1)]), descriptor: &passed, lost: &lost)
                }
            } catch {
                note("reading from the bridge failed: \(error)")
                dropConnection(announce: true)
                break
            }
            if lost { note("the bridge passed more descriptors than fit one packet; the extra were dropped") }
            switch result {
            case .data(let count, let truncated):
                let at = now
                if let fd = passed {
                    // Only a notification-socket frame carries a descriptor.
                    adoptSocket(fd, frameBytes: count, truncated: truncated)
                    fed = true
                    continue
                }
                buffer.withUnsafeBytes { b in
                    let packet = UnsafeRawBufferPointer(rebasing: b[0..<count])
                    if !truncated { peek(packet) }
                    onPacket?(packet)
                    runtime.receive(.bridgePacket(packet, truncated: truncated), at: at)
                }
                onPacketDone?()
                fed = true
                continue
            case .wouldBlock:
                passed?.close()
                break
            case .closed where !Self.hungUp(c.fd):
                // A packet of 0 bytes on a connection still open (a SOCK_SEQPACKET read of 0 is
                // that or the end): bad input, counted by the runtime as a malformed frame, not
                // a disconnect that would lose every sensor.
                passed?.close()
                let at = now
                buffer.withUnsafeBytes { b in runtime.receive(.bridgePacket(UnsafeRawBufferPointer(rebasing: b[0..<0]), truncated: false), at: at) }
                emptyPackets &+= 1
                fed = true
                continue
            case .closed:
                passed?.close()
                log.log(.warning, "sensor bridge disconnected; every sensor is lost until it reconnects")
                dropConnection(announce: true)
                fed = true
            }
            break
        }
        if fed { onInputs?() }
    }

    /// The session frames of protocol version 2 the link itself acts on: the bridge's hello is
    /// answered (version 2 and up), a search's frames are also handed to `onSearchFrame`.
    func peek(_ packet: UnsafeRawBufferPointer) {
        guard packet.count >= BridgeFrame.headerBytes else { return }
        switch packet[1] {
        case 1 where packet.count == 16:
            bridgeVersionMax = packet[10]
            bridgeRadios = packet[11]
            closeSockets()  // a (re)started bridge hands its sockets over again
            if bridgeVersionMax >= 2 {
                send(.appHello(protocolVersionMax: BridgeFrame.versionMax, flags: BridgeFrame.appTakesSockets))
            }
        case 5, 6:
            guard let onSearchFrame, let f = try? BridgeFrame.parse(packet) else { return }
            onSearchFrame(f.message)
        case 12:
            guard case let .configState(readable, line, note)? = try? BridgeFrame.parse(packet).message else { return }
            if readable {
                log.log(.info, "the sensor bridge reads the config file again")
            } else {
                log.log(.error, "the sensor bridge cannot read the config file\(line > 0 ? " (line \(line))" : ""): \(note.text); it keeps the sensors it had — `bikecomputer config check` shows the problem")
            }
        default:
            break
        }
    }

    /// The 1 Hz tick: bad sensor input since the last line is logged (what and how much), at
    /// most once a minute, so a sensor sending garbage is visible in the journal, not a flood.
    func logBadInput(at t: MonotonicInstant) {
        let bad = runtime.sensorStatus.bad
        guard bad != loggedBad else { return }
        // A kind not seen before is logged at once; more of the kinds already logged, once a minute.
        let newKind = BadInput.allCases.contains { loggedBad[$0] == 0 && bad[$0] > 0 }
        if !newKind, let last = lastBadLogMs, t.milliseconds - last < Self.badInputLogPeriodMs { return }
        var parts: [String] = []
        for k in BadInput.allCases where bad[k] != loggedBad[k] {
            parts.append("\(k) +\(bad[k] &- loggedBad[k]) (\(bad[k]) in all)")
        }
        log.log(.warning, "sensor input dropped or repaired: " + parts.joined(separator: ", ")
                + "; `bikecomputer decode` shows what a payload holds (docs/sensors.md)")
        loggedBad = bad
        lastBadLogMs = t.milliseconds
    }

    // MARK: Frames to the bridge (version 2)

    /// Whether the connected bridge takes the app's requests (search, reload).
    public var bridgeTakesRequests: Bool { connection != nil && bridgeVersionMax >= 2 }

    /// Sends a frame to the bridge (socket only); false when there is no version-2 bridge or the
    /// send failed (logged).
    @discardableResult
    public func send(_ message: BridgeMessage) -> Bool {
        guard let c = connection, bridgeVersionMax >= 2 else { return false }
        let frame = BridgeFrame(bridgeTimeUs: UInt64(max(0, loop.nowMs)) &* 1000, message).encoded()
        do {
            try c.send(frame.bytes)  // rare (requests, not values): an array is fine
            framesSent &+= 1
            return true
        } catch {
            sendFailures &+= 1
            log.log(.warning, "could not send \(message) to the bridge: \(error)")
            return false
        }
    }

    /// Asks the bridge to search (or stop searching) for sensors with every radio it has.
    @discardableResult
    public func requestSearch(start: Bool, seconds: Int) -> Bool {
        send(.scanRequest(start: start, radios: bridgeRadios == 0 ? 3 : bridgeRadios, seconds: UInt16(clamping: seconds)))
    }

    /// Tells the bridge the paired sensors in the config file changed.
    @discardableResult
    public func requestReload() -> Bool { send(.reload) }

    // MARK: Notification sockets

    /// A socket the bridge handed over with a notification-socket frame: read here from now on.
    func adoptSocket(_ fd: FileDescriptor, frameBytes count: Int, truncated: Bool) {
        let parsed: BridgeFrame? = truncated ? nil : buffer.withUnsafeBytes { b in try? BridgeFrame.parse(UnsafeRawBufferPointer(rebasing: b[0..<count])) }
        guard let parsed, case let .notificationSocket(who, code) = parsed.message else {
            note("the bridge passed a descriptor with a frame that is not a notification socket; closed")
            fd.close()
            return
        }
        guard sockets.count < Limits.notificationSocketsMax else {
            fd.close()
            socketsReturned &+= 1
            log.log(.warning, "\(who) \(code): \(Limits.notificationSocketsMax) notification sockets already read here; the bridge forwards its values")
            send(.socketReturned(who, profileCode: code))
            return
        }
        let header = BridgeFrame(bridgeTimeUs: 0, .link(who, profileCode: code, .connected)).encoded()
        let conn = SeqPacketConnection(fd: fd)
        do { try fd.setNonBlocking() } catch { log.log(.warning, "notification socket: \(error)") }
        let s = NotificationSocket(conn, who: who, profileCode: code, header: header, countIndex: countIndex(who, code))
        do {
            s.registration = try loop.register(fd, "bridge.notification", interest: .read) { [unowned self, unowned s] _ in self.readSocket(s) }
        } catch {
            fd.close()
            socketsReturned &+= 1
            send(.socketReturned(who, profileCode: code))
            note("cannot watch a notification socket: \(error); the bridge forwards its values")
            return
        }
        sockets.append(s)
        socketsAccepted &+= 1
        log.log(.info, "\(who) \(code): reading its notifications here")
    }

    func countIndex(_ who: SourceIdentity, _ code: UInt16) -> Int {
        if let i = socketCounts.firstIndex(where: { $0.who == who && $0.profileCode == code }) { return i }
        guard socketCounts.count < Limits.socketCountsMax else { return -1 }
        socketCounts.append((who, code, 0))
        return socketCounts.count - 1
    }

    /// One wake-up of a notification socket: each value becomes a data frame for the runtime.
    func readSocket(_ s: NotificationSocket) {
        var fed = false
        for _ in 0..<Limits.packetsPerWakeMax {
            let result: ReceiveResult
            do {
                result = try s.frame.withUnsafeMutableBytes { b throws(SystemError) in
                    try s.connection.receive(into: UnsafeMutableRawBufferPointer(rebasing: b[21..<(21 + Payload.bytesMax + 1)]))
                }
            } catch {
                log.log(.warning, "\(s.who): notification socket: \(error)")
                closeSocket(s)
                break
            }
            switch result {
            case .data(let n, let truncated):
                let at = now
                let count = min(n, Payload.bytesMax)
                // The frame's time is when the value was read (µs, CLOCK_MONOTONIC like a bridge's).
                let us = MonotonicClock.nowNs / 1000
                for i in 0..<8 { s.frame[2 + i] = UInt8(truncatingIfNeeded: us >> UInt64(8 * i)) }
                s.frame[20] = UInt8(count)
                if s.countIndex >= 0 { socketCounts[s.countIndex].values &+= 1 }
                s.frame.withUnsafeBytes { b in
                    let packet = UnsafeRawBufferPointer(rebasing: b[0..<(21 + count)])
                    onPacket?(packet)  // --measure-latency: from this read to the page on the bus
                    runtime.receive(.bridgePacket(packet, truncated: truncated || n > Payload.bytesMax), at: at)
                }
                onPacketDone?()
                fed = true
                continue
            case .wouldBlock:
                break
            case .closed where Self.hungUp(s.connection.fd):
                // bluetoothd closed it: the sensor disconnected (the bridge reports the link).
                closeSocket(s)
                fed = true
            case .closed:
                // An empty value (a recv of 0 bytes on a socket still open): a data frame with no
                // payload, which the decoder counts as truncated.
                let at = now
                let us = MonotonicClock.nowNs / 1000
                for i in 0..<8 { s.frame[2 + i] = UInt8(truncatingIfNeeded: us >> UInt64(8 * i)) }
                s.frame[20] = 0
                if s.countIndex >= 0 { socketCounts[s.countIndex].values &+= 1 }
                s.frame.withUnsafeBytes { b in runtime.receive(.bridgePacket(UnsafeRawBufferPointer(rebasing: b[0..<21]), truncated: false), at: at) }
                fed = true
                continue
            }
            break
        }
        if fed { onInputs?() }
    }

    /// Whether the peer of a socket hung up (a SOCK_SEQPACKET read of 0 bytes is either that or
    /// an empty packet).
    static func hungUp(_ fd: FileDescriptor) -> Bool {
        var p = Glibc.pollfd(fd: fd.rawValue, events: Int16(Glibc.POLLHUP | 0x2000), revents: 0)  // 0x2000: POLLRDHUP
        return Glibc.poll(&p, 1, 0) > 0 && p.revents & Int16(Glibc.POLLHUP | 0x2000) != 0
    }

    func closeSocket(_ s: NotificationSocket) {
        if let r = s.registration { loop.deregister(r) }
        s.registration = nil
        s.connection.close()
        sockets.removeAll { $0 === s }
    }

    func closeSockets() {
        for s in sockets { closeSocket(s) }
    }

    func dropConnection(announce: Bool) {
        closeSockets()
        guard let c = connection else { return }
        if let r = connectionRegistration { loop.deregister(r) }
        connectionRegistration = nil
        c.close()
        connection = nil
        disconnections &+= 1
        if announce { runtime.bridgeDisconnected(at: now) }
    }

    // MARK: Serial

    func openSerial() {
        guard case .serial(let path, let baud) = transport else { return }
        do {
            let port = try SerialPort.open(path, baud: baud)
            serialRegistration = try? loop.register(port.fd, "bridge.serial", interest: .read) { [unowned self] r in self.readSerial(r) }
            guard serialRegistration != nil else {
                port.close()
                note("cannot watch the serial bridge \(path)")
                scheduleReopen()
                return
            }
            serial = port
            runtime.bridgeConnected(at: now)
            log.log(.info, "serial sensor bridge opened: \(path) at \(baud) baud")
        } catch {
            note("cannot open the serial bridge \(path): \(error); retrying every \(Limits.serialReopenMs / 1000) s")
            scheduleReopen()
        }
    }

    func scheduleReopen() {
        guard reopenTimer == nil else { return }
        reopenTimer = loop.scheduleTimer("bridge.reopen", afterMs: Limits.serialReopenMs) { [unowned self] in
            self.reopenTimer = nil
            self.openSerial()
        }
    }

    func readSerial(_ readiness: IOReadiness) {
        guard let port = serial else { return }
        var fed = false
        for attempt in 0..<Limits.serialReadsPerWakeMax {
            let result: ReceiveResult
            do {
                result = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try port.read(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<Limits.serialBytesPerReadMax])) }
            } catch {
                note("reading the serial bridge failed: \(error)")
                closeSerial(announce: true)
                scheduleReopen()
                fed = true
                break
            }
            if case .data(let count, _) = result {
                let at = now
                buffer.withUnsafeBytes { b in
                    runtime.receive(.serialBytes(UnsafeRawBufferPointer(rebasing: b[0..<count])), at: at)
                }
                fed = true
                continue
            }
            // A raw tty (VMIN 0, VTIME 0) reads 0 bytes when it is merely empty: only a first
            // read of a wake-up that finds nothing (or EIO) is a hang-up.
            if case .closed = result, attempt == 0 {
                log.log(.warning, "serial bridge hung up; every sensor is lost until it is back")
                closeSerial(announce: true)
                scheduleReopen()
                fed = true
            }
            break
        }
        if fed { onInputs?() }
    }

    func closeSerial(announce: Bool) {
        guard let port = serial else { return }
        if let r = serialRegistration { loop.deregister(r) }
        serialRegistration = nil
        port.close()
        serial = nil
        disconnections &+= 1
        if announce { runtime.bridgeDisconnected(at: now) }
    }

    func note(_ message: String) {
        transportErrors &+= 1
        lastError = message
        log.log(.error, message)
    }
}

extension BridgeLink {
    static func hex4(_ v: UInt16) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        return String((0..<4).reversed().map { digits[Int((v >> UInt16(4 * $0)) & 0xF)] })
    }
}

extension BridgeLink: BoardComponent {
    /// Starts listening (or opening the serial device); after every wake-up that fed the runtime
    /// the wiring re-arms its deadlines.
    public func start(_ board: BoardWiring) throws {
        onInputs = { [unowned board] in board.afterInputs() }
        try start()
    }

    public var state: String { isConnected ? "connected" : "waiting for the bridge" }
    /// The bridge is a process or a dongle, not board hardware: its errors are in `bridge`.
    public var hardwareErrors: UInt64 { 0 }

    public func writeStatus(into w: inout JSONWriter) {
        let src = runtime.sensorStatus
        w.beginObject("bridge")
        w.bool("connected", isConnected)
        w.int("connections", Int64(clamping: connectionsAccepted))
        w.int("disconnections", Int64(clamping: disconnections))
        w.int("empty_packets", Int64(clamping: emptyPackets))
        w.int("frames", Int64(clamping: src.framesReceived))
        w.int("heartbeats", Int64(clamping: src.heartbeats))
        w.int("samples", Int64(clamping: src.samplesEmitted))
        w.string("counters", src.logLine)
        w.int("protocol_version", Int64(bridgeVersionMax))
        // Whether the bridge could read the config file (protocol version 3; null: not said):
        // when not, it keeps the sensors it had (docs/bridge-protocol.md, "Config state").
        w.bool("config_readable", src.bridgeConfig?.readable)
        if let c = src.bridgeConfig, !c.readable {
            w.int("config_error_line", Int64(c.line))
            w.string("config_error", c.note.text)
        }
        w.int("frames_sent", Int64(clamping: framesSent))
        w.int("sockets_open", Int64(sockets.count))
        w.int("sockets_accepted", Int64(clamping: socketsAccepted))
        w.int("sockets_returned", Int64(clamping: socketsReturned))
        // Values read from notification sockets, per sensor and characteristic.
        w.beginArray("socket_values")
        for c in socketCounts {
            w.beginObject()
            w.string("sensor", c.who.description)
            w.string("characteristic", Self.hex4(c.profileCode))
            w.int("values", Int64(clamping: c.values))
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }
}
