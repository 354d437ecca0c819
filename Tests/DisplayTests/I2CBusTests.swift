@testable import BoardHardware
import Display
import Glibc
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

    @Test func errnoValuesMapToTypedErrors() {
        #expect(I2CBus.openError(errno: ENOENT, path: "/dev/i2c-1") == .noSuchBus(path: "/dev/i2c-1"))
        #expect(I2CBus.openError(errno: EACCES, path: "/dev/i2c-1") == .permissionDenied(path: "/dev/i2c-1"))
        #expect(I2CBus.openError(errno: EPERM, path: "/dev/i2c-1") == .permissionDenied(path: "/dev/i2c-1"))
        #expect(I2CBus.writeError(errno: ENXIO, path: "/dev/i2c-1", address: 0x3D) == .noDevice(path: "/dev/i2c-1", address: 0x3D))
        #expect(I2CBus.writeError(errno: EREMOTEIO, path: "/dev/i2c-1", address: 0x3C) == .noDevice(path: "/dev/i2c-1", address: 0x3C))
        guard case .io(_, let e, _) = I2CBus.writeError(errno: ETIMEDOUT, path: "/dev/i2c-1", address: 0x3C) else {
            Issue.record("a timeout is an io error")
            return
        }
        #expect(e == ETIMEDOUT)
    }
}
