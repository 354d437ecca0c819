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
        // i2c-stub answers a write to an address it does not simulate with ENODEV (was an io error).
        #expect(I2CBus.writeError(errno: ENODEV, path: "/dev/i2c-1", address: 0x3C) == .noDevice(path: "/dev/i2c-1", address: 0x3C))
        #expect(I2CBus.writeError(errno: ENODEV, path: "/dev/i2c-1", address: 0x3C).description.contains("i2cdetect"))
        guard case .io(_, let e, _) = I2CBus.writeError(errno: ETIMEDOUT, path: "/dev/i2c-1", address: 0x3C) else {
            Issue.record("a timeout is an io error")
            return
        }
        #expect(e == ETIMEDOUT)
    }

    /// A deferred bus opens at its first write and reopens after a failure, so a bus that
    /// appears later is used without a restart.
    @Test func aDeferredBusOpensAtTheFirstWriteAndRetries() throws {
        let bus = I2CBus(deferredPath: "/dev/i2c-97", address: 0x3C)
        #expect(!bus.isOpen && bus.opens == 0)
        let nop: [UInt8] = [OLEDCommand.nop]
        for _ in 0..<3 {
            #expect(throws: DisplayBusError.noSuchBus(path: "/dev/i2c-97")) {
                try nop.withUnsafeBufferPointer { p throws(DisplayBusError) in try bus.write(control: 0, p) }
            }
        }
        #expect(!bus.isOpen && bus.opens == 0)
        // /dev/null opens but refuses I2C_SLAVE: an io error, and still closed for the next try.
        let null = I2CBus(deferredPath: "/dev/null", address: 0x3C)
        do {
            try nop.withUnsafeBufferPointer { p throws(DisplayBusError) in try null.write(control: 0, p) }
            Issue.record("/dev/null is not an I2C bus")
        } catch {
            guard case .io = error else { Issue.record("expected an io error, got \(error)"); return }
        }
        #expect(!null.isOpen)
    }
}
