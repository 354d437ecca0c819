import BoardHardware
import Display
import Glibc

/// The kernel module against SSD1306Emulator on the same byte streams: random transactions
/// (known commands with their arguments, stray bytes, data bursts, control bytes with and
/// without the Co bit, commands cut across transactions, power-on resets), each sent three ways
/// (SMBus I2C-block write through I2CBus, one write() of a whole message, I2C_RDWR with several
/// messages), for both controllers. After every stream, GDDRAM, registers and counters must
/// agree. A disagreement prints the seed and the stream.
struct StreamChecks {
    let bus: Int
    let debugfs: String
    let seed: UInt64
    let count: Int

    var path: String { "/dev/i2c-\(bus)" }
    var kernel: KernelDisplay { KernelDisplay(debugfs: debugfs) }

    /// Commands with their argument counts (both controllers' sets; the other's are stray bytes).
    static let commands: [(UInt8, Int)] = [
        (0x20, 1), (0x21, 2), (0x22, 2), (0x81, 1), (0x8D, 1), (0xAD, 1), (0xA8, 1), (0xD3, 1), (0xD5, 1),
        (0xD9, 1), (0xDA, 1), (0xDB, 1), (0xA3, 2), (0x26, 6), (0x29, 5),
        (0xA0, 0), (0xA1, 0), (0xA4, 0), (0xA5, 0), (0xA6, 0), (0xA7, 0), (0xAE, 0), (0xAF, 0), (0xC0, 0), (0xC8, 0),
        (0x2E, 0), (0x2F, 0), (0xE3, 0), (0x30, 0), (0x40, 0), (0x5F, 0),
    ]

    func run() {
        print("stream checks on \(path): seed 0x\(String(seed, radix: 16)), \(count) streams per controller")
        for controller in [OLEDController.ssd1306, .sh1106] { streams(controller) }
        kernel.setController(.ssd1306)
    }

    func streams(_ controller: OLEDController) {
        kernel.setController(controller)
        var emulator = SSD1306Emulator(controller: controller)
        let baseline = kernel.state()
        let resetsAtStart = baseline["resets"] ?? 0
        var g = Generator(state: seed ^ (controller == .ssd1306 ? 0 : 0xABCDEF))
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0, ioctl(fd, UInt(0x0703), CInt(0x3C)) == 0 else {  // I2C_SLAVE
            Checks.fail("\(controller): open \(path)", String(cString: strerror(errno)))
            return
        }
        defer { close(fd) }
        let smbus: I2CBus
        do { smbus = try I2CBus(path: path, address: 0x3C, probe: false) } catch {
            Checks.fail("\(controller): I2CBus", "\(error)")
            return
        }
        var sent = [0, 0, 0]
        var bytes = 0
        for n in 0..<count {
            if g.chance(4) {
                kernel.powerOnReset()
                emulator.powerOnReset()
            }
            var log: [String] = []
            for _ in 0..<(1 + g.below(4)) {
                let transport = g.below(3)
                let messages = transport == 2 ? 1 + g.below(3) : 1
                var batch: [[UInt8]] = []
                for _ in 0..<messages {
                    let limit = transport == 0 ? DisplayBusLimits.transactionBytesMax : 200
                    batch.append(message(&g, controller: controller, payloadMax: limit))
                }
                let ok: Bool
                switch transport {
                case 0:
                    ok = batch[0].dropFirst().withUnsafeBufferPointer { p in
                        do throws(DisplayBusError) { try smbus.write(control: batch[0][0], p); return true } catch {
                            print("smbus write: \(error)")
                            return false
                        }
                    }
                case 1:
                    ok = batch[0].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == batch[0].count
                default:
                    ok = rdwr(fd, batch)
                }
                guard ok else {
                    Checks.fail("\(controller): stream \(n) transport \(transport)", String(cString: strerror(errno)))
                    return
                }
                sent[transport] += 1
                for m in batch {
                    bytes += m.count
                    m.dropFirst().withUnsafeBufferPointer { p in try? emulator.write(control: m[0], p) }
                    log.append("\(["smbus", "write", "rdwr"][transport]):\(hex(m))")
                }
            }
            let diffs = kernel.differences(from: emulator, baseline: baseline.merging(["resets": resetsAtStart]) { $1 })
            if !diffs.isEmpty {
                Checks.fail("\(controller): kernel module and emulator agree on every stream",
                            "seed 0x\(String(seed, radix: 16)) stream \(n): \(diffs.joined(separator: "; ")); stream: \(log.joined(separator: " "))")
                return
            }
        }
        Checks.check(true, "\(controller): \(count) random streams (\(sent[0]) SMBus block writes, \(sent[1]) write(), \(sent[2]) I2C_RDWR; \(bytes) bytes): kernel module = emulator in GDDRAM, registers and counters")
    }

    /// One transaction: a control byte, then commands/data.
    func message(_ g: inout Generator, controller: OLEDController, payloadMax: Int) -> [UInt8] {
        let controls: [UInt8] = [0x00, 0x40, 0x80, 0xC0, 0x00, 0x40]
        var m: [UInt8] = [g.chance(5) ? g.byte() : controls[g.below(controls.count)]]
        let target = 1 + g.below(payloadMax)
        var isData = m[0] & 0x40 != 0
        let singles = m[0] & 0x80 != 0
        while m.count - 1 < target {
            if singles {
                // Co=1: one byte, then a new control byte.
                m.append(isData ? g.byte() : g.byte())
                if m.count - 1 < target {
                    let next = controls[g.below(controls.count)]
                    m.append(next)
                    isData = next & 0x40 != 0
                    if next & 0x80 == 0 { break }  // the rest would be a plain stream; keep it short
                }
                continue
            }
            if isData {
                m.append(g.byte())
            } else {
                m += command(&g, controller: controller)
            }
        }
        return Array(m.prefix(payloadMax + 1))
    }

    func command(_ g: inout Generator, controller: OLEDController) -> [UInt8] {
        switch g.below(10) {
        case 0: return [g.byte()]                                           // anything at all
        case 1: return [0xB0 | UInt8(g.below(8)), UInt8(g.below(16)), 0x10 | UInt8(g.below(controller == .sh1106 ? 9 : 8))]
        case 2: return [0x20, UInt8(g.below(4))]
        case 3: return [0x21, UInt8(g.below(128)), UInt8(g.below(128))]
        case 4: return [0x22, UInt8(g.below(8)), UInt8(g.below(8))]
        default:
            let (op, n) = Self.commands[g.below(Self.commands.count)]
            var c = [op]
            let cut = g.chance(10) ? g.below(n + 1) : n                   // arguments cut off: the next bytes finish it
            for _ in 0..<cut { c.append(g.byte()) }
            return c
        }
    }

    /// I2C_RDWR with every message written to 0x3C in one call.
    func rdwr(_ fd: Int32, _ batch: [[UInt8]]) -> Bool {
        struct Msg { var addr: UInt16; var flags: UInt16; var len: UInt16; var buf: UnsafeMutablePointer<UInt8>? }
        struct RdwrData { var msgs: UnsafeMutablePointer<Msg>?; var nmsgs: UInt32; var padding: UInt32 = 0 }
        precondition(MemoryLayout<Msg>.size == 16 && MemoryLayout<RdwrData>.size == 16, "i2c_msg / i2c_rdwr_ioctl_data layout")
        let buffers = batch.map { m -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: m.count)
            p.initialize(from: m, count: m.count)
            return p
        }
        defer { for p in buffers { p.deallocate() } }
        var msgs = zip(batch, buffers).map { Msg(addr: 0x3C, flags: 0, len: UInt16($0.count), buf: $1) }
        let r = msgs.withUnsafeMutableBufferPointer { p -> Int32 in
            var data = RdwrData(msgs: p.baseAddress, nmsgs: UInt32(p.count))
            return ioctl(fd, UInt(0x0707), &data)  // I2C_RDWR
        }
        return r == Int32(batch.count)
    }
}
