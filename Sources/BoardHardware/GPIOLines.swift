import BoardIO
import CGpiodShim
import Glibc

/// Why a GPIO line could not be used. Each message says what to do.
public enum GPIOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The chip device does not exist (wrong `chip` in the config, or not a Linux GPIO board).
    case noSuchChip(path: String)
    /// The chip has fewer lines than `offset` needs.
    case noSuchLine(chip: String, offset: UInt32, lineCount: UInt32)
    /// Another program holds the line.
    case lineBusy(chip: String, offset: UInt32, consumer: String)
    /// The user may not open the chip.
    case permissionDenied(path: String)
    /// Anything else, with the libgpiod step and errno.
    case failed(chip: String, offset: UInt32, step: String, SystemError)

    public var description: String {
        switch self {
        case .noSuchChip(let path):
            "GPIO chip \(path) does not exist: check [buttons] chip in the config (`gpiodetect` lists the chips; a Raspberry Pi's header is /dev/gpiochip0)"
        case .noSuchLine(let chip, let offset, let count):
            "GPIO line \(offset) does not exist on \(chip) (it has \(count) lines): use the BCM GPIO number, not the header pin number"
        case .lineBusy(let chip, let offset, let consumer):
            "GPIO line \(offset) on \(chip) is busy, held by \"\(consumer.isEmpty ? "unknown" : consumer)\": stop that program or remove the dtoverlay that claims the pin (`gpioinfo` shows the holder)"
        case .permissionDenied(let path):
            "permission denied opening \(path): add the service user to the `gpio` group (`usermod -aG gpio bike`) and install board/udev/99-bikecomputer.rules, or run as root"
        case .failed(let chip, let offset, let step, let error):
            "GPIO line \(offset) on \(chip): \(step) failed: \(error)"
        }
    }

    static func from(_ e: cgs_error, chip: String, offset: UInt32) -> GPIOError {
        let sys = SystemError(errno: e.error, call: "libgpiod", context: "\(chip) line \(offset)")
        if e.error == EACCES || e.error == EPERM { return .permissionDenied(path: chip) }
        switch Int(e.stage) {
        case CGS_STAGE_OPEN_CHIP:
            if sys.isNotFound || e.error == ENOTTY { return .noSuchChip(path: chip) }
            return .failed(chip: chip, offset: offset, step: "opening the chip", sys)
        case CGS_STAGE_GET_LINE:
            return .noSuchLine(chip: chip, offset: offset, lineCount: e.line_count)
        case CGS_STAGE_REQUEST:
            if e.error == EBUSY {
                let consumer = withUnsafeBytes(of: e.consumer) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                return .lineBusy(chip: chip, offset: offset, consumer: consumer)
            }
            if e.error == EINVAL, e.line_count > 0, offset >= e.line_count {
                return .noSuchLine(chip: chip, offset: offset, lineCount: e.line_count)
            }
            return .failed(chip: chip, offset: offset, step: "requesting the line", sys)
        default:
            return .failed(chip: chip, offset: offset, step: "getting the event fd", sys)
        }
    }
}

/// Internal resistor setting for an input line.
public enum GPIOBias: String, Sendable, Hashable, CaseIterable {
    case asIs = "as-is", pullUp = "pull-up", pullDown = "pull-down", disabled = "disabled"

    var shimValue: Int32 {
        switch self {
        case .asIs: Int32(CGS_BIAS_AS_IS)
        case .pullUp: Int32(CGS_BIAS_PULL_UP)
        case .pullDown: Int32(CGS_BIAS_PULL_DOWN)
        case .disabled: Int32(CGS_BIAS_DISABLED)
        }
    }
}

/// The libgpiod API the binary was built against (1 or 2).
public var gpiodAPIVersion: Int { Int(cgs_api_version()) }

/// The libgpiod linked into the binary, as the library itself reports it ("1.6.3", "2.1.3").
public var gpiodLibraryVersion: String { String(cString: cgs_library_version()) }

/// One edge: the logical level after it (true = active, i.e. pressed for an active-low button
/// wired to ground) and the kernel's CLOCK_MONOTONIC timestamp.
public struct GPIOEdge: Sendable, Hashable {
    public var active: Bool
    public var timestampNs: UInt64
}

/// An input line with edge events on both edges. Its `eventFD` is registered with the loop;
/// when readable, `readEdges` drains at most `edgesPerReadMax` events.
public final class GPIOInputLine {
    public static let edgesPerReadMax = 16
    /// Kernel timestamps further than this from CLOCK_MONOTONIC are not trusted (uAPI v1 on
    /// kernels before 5.7 stamps events with CLOCK_REALTIME); the read time is used instead.
    public static let timestampSkewMaxNs: UInt64 = 10_000_000_000

    public let chip: String
    public let offset: UInt32
    private let handle: OpaquePointer
    private var edges = [cgs_edge](repeating: cgs_edge(), count: GPIOInputLine.edgesPerReadMax)
    public private(set) var untrustedTimestamps: UInt64 = 0

    public init(chip: String, offset: UInt32, activeLow: Bool, bias: GPIOBias, consumer: String = "bikecomputer") throws(GPIOError) {
        self.chip = chip
        self.offset = offset
        var err = cgs_error()
        guard let h = cgs_request_input(chip, offset, activeLow ? 1 : 0, bias.shimValue, consumer, &err) else {
            throw GPIOError.from(err, chip: chip, offset: offset)
        }
        handle = h
    }

    deinit { cgs_release(handle) }

    public var eventFD: FileDescriptor { FileDescriptor(rawValue: cgs_event_fd(handle)) }

    /// The current logical level (true = active).
    public func isActive() throws(GPIOError) -> Bool {
        let v = cgs_get_value(handle)
        if v < 0 { throw .failed(chip: chip, offset: offset, step: "reading the value", .current("gpiod get value")) }
        return v == 1
    }

    /// Reads the queued edges (without blocking) and calls `body` for each, oldest first.
    /// Returns how many were read.
    @discardableResult
    public func readEdges(_ body: (GPIOEdge) -> Void) throws(GPIOError) -> Int {
        let n = edges.withUnsafeMutableBufferPointer { cgs_read_edges(handle, $0.baseAddress, Int32($0.count)) }
        if n < 0 {
            if errno == EINTR { return 0 }
            throw .failed(chip: chip, offset: offset, step: "reading edge events", .current("gpiod read events"))
        }
        let now = MonotonicClock.nowNs
        for i in 0..<Int(n) {
            var ts = edges[i].timestamp_ns
            if ts > now || now - ts > Self.timestampSkewMaxNs {
                untrustedTimestamps += 1
                ts = now
            }
            body(GPIOEdge(active: edges[i].rising != 0, timestampNs: ts))
        }
        return Int(n)
    }
}

/// An output line (buzzer or LED).
public final class GPIOOutputLine {
    public let chip: String
    public let offset: UInt32
    private let handle: OpaquePointer

    public init(chip: String, offset: UInt32, activeLow: Bool = false, initiallyActive: Bool = false, consumer: String = "bikecomputer") throws(GPIOError) {
        self.chip = chip
        self.offset = offset
        var err = cgs_error()
        guard let h = cgs_request_output(chip, offset, activeLow ? 1 : 0, initiallyActive ? 1 : 0, consumer, &err) else {
            throw GPIOError.from(err, chip: chip, offset: offset)
        }
        handle = h
    }

    deinit { cgs_release(handle) }

    public func set(active: Bool) throws(GPIOError) {
        if cgs_set_value(handle, active ? 1 : 0) != 0 {
            throw .failed(chip: chip, offset: offset, step: "setting the value", .current("gpiod set value"))
        }
    }
}
