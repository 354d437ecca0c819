import BoardHardware
import BoardIO
import Testing

/// The libgpiod adapter links against the installed library and fails with the documented
/// errors when the hardware is not there.
struct GPIOTests {
    @Test func builtAgainstTheInstalledAPI() {
        // Debian 12 ships libgpiod 1.6 (v1 API); Debian 13 ships 2.x.
        #expect(gpiodAPIVersion == 1 || gpiodAPIVersion == 2)
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

    /// A file that is not a GPIO chip is reported as no such chip, not as a crash.
    @Test func notAChipIsReported() {
        do {
            _ = try GPIOInputLine(chip: "/dev/null", offset: 0, activeLow: false, bias: .asIs)
            Issue.record("/dev/null accepted as a GPIO chip")
        } catch {
            if case .noSuchChip = error {} else if case .failed = error {} else { Issue.record("unexpected \(error)") }
        }
    }

    @Test func errorMessagesSayWhatToDo() {
        #expect(GPIOError.lineBusy(chip: "/dev/gpiochip0", offset: 17, consumer: "gpio-keys").description.contains("gpio-keys"))
        #expect(GPIOError.permissionDenied(path: "/dev/gpiochip0").description.contains("gpio"))
        #expect(GPIOError.permissionDenied(path: "/dev/gpiochip0").description.contains("99-bikecomputer.rules"))
        #expect(GPIOError.noSuchLine(chip: "/dev/gpiochip0", offset: 99, lineCount: 54).description.contains("54 lines"))
    }
}
