import BoardHardware
import Display
import Testing

@Suite struct I2CBusTests {
    @Test func missingBusSaysToEnableI2C() {
        do {
            _ = try I2CBus(bus: 97, address: 0x3C)
            Issue.record("/dev/i2c-97 should not exist")
        } catch {
            #expect(error == .noSuchBus(path: "/dev/i2c-97"))
            #expect(error.description.contains("dtparam=i2c_arm=on"))
        }
    }

    @Test func errorsSayWhatToDo() {
        #expect(DisplayBusError.permissionDenied(path: "/dev/i2c-1").description.contains("i2c group"))
        #expect(DisplayBusError.noDevice(path: "/dev/i2c-1", address: 0x3C).description.contains("0x3C"))
    }

    @Test func aFileThatIsNotABusIsAnIOError() {
        // /dev/null opens but refuses the I2C_SLAVE ioctl.
        do {
            _ = try I2CBus(path: "/dev/null", address: 0x3C)
            Issue.record("/dev/null is not an I2C bus")
        } catch {
            guard case .io = error else { Issue.record("expected an io error, got \(error)"); return }
        }
    }
}
