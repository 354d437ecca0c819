import BoardHardware
import BoardIO
import Glibc
import Testing

/// The libgpiod adapter links against the installed library and fails with the documented
/// errors when the hardware is not there. What it does with real lines (bias, edges, outputs,
/// busy lines) is checked on a real kernel with gpio-sim, against libgpiod v1 and v2, by the VM
/// tests (Tests/vm/test_vm_hardware.py, docs/testing.md).
struct GPIOTests {
    /// The shim picks the v1 or v2 code by a macro only v1's header defines: it must agree with
    /// the header this build used (the default build: /usr/include/gpiod.h) and with the version
    /// the linked library reports.
    @Test func builtAgainstTheInstalledHeader() throws {
        let header = try #require(SysText.read("/usr/include/gpiod.h"), "libgpiod-dev is installed (scripts/test.sh installs it)")
        let expected = header.contains("GPIOD_LINE_BULK_MAX_LINES") ? 1 : 2
        #expect(gpiodAPIVersion == expected, "the shim compiled the v\(gpiodAPIVersion) code against a v\(expected) header")
        #expect(gpiodLibraryVersion.hasPrefix("\(expected)."), "linked libgpiod says \(gpiodLibraryVersion)")
    }

    @Test func missingChipIsReported() {
        let path = "/dev/gpiochip97"
        #expect(throws: GPIOError.noSuchChip(path: path)) {
            _ = try GPIOInputLine(chip: path, offset: 17, activeLow: true, bias: .pullUp)
        }
        #expect(throws: GPIOError.noSuchChip(path: path)) {
            _ = try GPIOButtons(chip: path, offsets: [17, 27], activeLow: true, bias: .pullUp)
        }
        #expect(throws: GPIOError.noSuchChip(path: path)) {
            _ = try GPIOOutputLine(chip: path, offset: 18)
        }
        let message = GPIOError.noSuchChip(path: path).description
        #expect(message.contains(path) && message.contains("gpiodetect"))
    }

    /// A file that is not a GPIO chip is reported as no such chip (the same with libgpiod v2 in
    /// the VM tests).
    @Test func notAChipIsReported() {
        #expect(throws: GPIOError.noSuchChip(path: "/dev/null")) {
            _ = try GPIOInputLine(chip: "/dev/null", offset: 0, activeLow: false, bias: .asIs)
        }
    }

    @Test func errorMessagesSayWhatToDo() {
        #expect(GPIOError.lineBusy(chip: "/dev/gpiochip0", offset: 17, consumer: "gpio-keys").description.contains("gpio-keys"))
        #expect(GPIOError.permissionDenied(path: "/dev/gpiochip0").description.contains("gpio"))
        #expect(GPIOError.permissionDenied(path: "/dev/gpiochip0").description.contains("99-bikecomputer.rules"))
        #expect(GPIOError.noSuchLine(chip: "/dev/gpiochip0", offset: 99, lineCount: 54).description.contains("54 lines"))
    }
}

/// A whole small text file, or nil.
enum SysText {
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
