import AppCore
import BoardIO
import Control
import Device
import RideModel
import Sensors

/// The bridge transport on the run loop: a SOCK_SEQPACKET listener the bridge process connects
/// to, or a serial device a dongle writes COBS records on. It only moves bytes: each packet or
/// serial read goes to `DeviceRuntime.receive` as it arrived (the runtime parses, decodes and
/// counts), and the link's ups and downs to `bridgeConnected`/`bridgeDisconnected`. Work per
/// wake-up is bounded; the receive buffer is allocated once, so a frame allocates nothing here.
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
    public private(set) var connectionsAccepted: UInt64 = 0
    public private(set) var disconnections: UInt64 = 0
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
            do {
                result = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try c.receive(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<(BridgeFrame.bytesMax + 1)])) }
            } catch {
                note("reading from the bridge failed: \(error)")
                dropConnection(announce: true)
                break
            }
            switch result {
            case .data(let count, let truncated):
                let at = now
                buffer.withUnsafeBytes { b in
                    let packet = UnsafeRawBufferPointer(rebasing: b[0..<count])
                    onPacket?(packet)
                    runtime.receive(.bridgePacket(packet, truncated: truncated), at: at)
                }
                onPacketDone?()
                fed = true
                continue
            case .wouldBlock:
                break
            case .closed:
                log.log(.warning, "sensor bridge disconnected; every sensor is lost until it reconnects")
                dropConnection(announce: true)
                fed = true
            }
            break
        }
        if fed { onInputs?() }
    }

    func dropConnection(announce: Bool) {
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
        w.int("frames", Int64(clamping: src.framesReceived))
        w.int("samples", Int64(clamping: src.samplesEmitted))
        w.string("counters", src.logLine)
        w.endObject()
    }
}
