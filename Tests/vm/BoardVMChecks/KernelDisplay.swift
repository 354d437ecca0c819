import Display
import Glibc

/// The project's ssd1306-sim kernel module, through its debugfs files.
struct KernelDisplay {
    let debugfs: String

    func state() -> [String: Int] {
        var out: [String: Int] = [:]
        for line in SysFile.text("\(debugfs)/state").split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "controller" { out["sh1106"] = parts[1] == "sh1106" ? 1 : 0; continue }
            out[String(parts[0])] = Int(parts[1])
        }
        return out
    }

    func gddram() -> [UInt8] { SysFile.read("\(debugfs)/gddram") ?? [] }
    func powerOnReset() { SysFile.write("\(debugfs)/power_on_reset", "1") }
    func setUnplugged(_ on: Bool) { SysFile.write("\(debugfs)/unplugged", on ? "1" : "0") }
    func setController(_ c: OLEDController) { SysFile.write("\(debugfs)/controller", c == .ssd1306 ? "ssd1306" : "sh1106") }
    func setNackErrno(_ e: Int32) { SysFile.write("/sys/module/ssd1306_sim/parameters/nack_errno", "\(e)") }

    /// The emulator's registers under the module's names.
    static func registers(_ e: SSD1306Emulator) -> [String: Int] {
        [
            "sh1106": e.controller == .sh1106 ? 1 : 0,
            "addressing_mode": Int(e.addressingMode.rawValue),
            "column_start": e.columnStart, "column_end": e.columnEnd, "page_start": e.pageStart, "page_end": e.pageEnd,
            "column": e.column, "page": e.page,
            "display_on": e.displayOn ? 1 : 0, "charge_pump_on": e.chargePumpOn ? 1 : 0, "contrast": Int(e.contrast),
            "inverse": e.inverse ? 1 : 0, "entire_display_on": e.entireDisplayOn ? 1 : 0,
            "segment_remap": e.segmentRemap ? 1 : 0, "com_scan_remapped": e.comScanRemapped ? 1 : 0,
            "start_line": e.startLine, "display_offset": e.displayOffset, "multiplex_rows": e.multiplexRows,
        ]
    }

    /// The emulator's counters under the module's names.
    static func counters(_ e: SSD1306Emulator) -> [String: Int] {
        [
            "transactions": e.transactions, "bytes_received": e.bytesReceived, "data_bytes_written": e.dataBytesWritten,
            "commands_executed": e.commandsExecuted, "unknown_commands": e.unknownCommands,
            "dropped_data_bytes": e.droppedDataBytes, "resets": e.resets,
        ]
    }

    /// Differences between the module and the emulator: memory, registers, and counters since
    /// `baseline` (the module's counters when the emulator was new). Empty when they agree.
    func differences(from e: SSD1306Emulator, baseline: [String: Int]) -> [String] {
        var out: [String] = []
        let k = state()
        for (name, value) in Self.registers(e) where k[name] != value {
            out.append("\(name): kernel \(k[name].map(String.init) ?? "missing"), emulator \(value)")
        }
        for (name, value) in Self.counters(e) {
            let kv = (k[name] ?? -1) - (baseline[name] ?? 0)
            if kv != value { out.append("\(name) since the start: kernel \(kv), emulator \(value)") }
        }
        let memory = gddram()
        if memory != e.memory {
            if memory.count != e.memory.count {
                out.append("GDDRAM: kernel \(memory.count) bytes, emulator \(e.memory.count)")
            } else {
                let columns = e.controller.memoryColumns
                let first = zip(memory, e.memory).enumerated().first { $0.element.0 != $0.element.1 }!.offset
                let count = zip(memory, e.memory).filter { $0 != $1 }.count
                out.append("GDDRAM: \(count) bytes differ, first at page \(first / columns) column \(first % columns): kernel \(hex([memory[first]])), emulator \(hex([e.memory[first]]))")
            }
        }
        return out
    }
}

/// Writes every transaction to two buses (the kernel's and an emulator).
struct TeeBus<A: DisplayBus>: DisplayBus {
    var first: A
    var emulator: SSD1306Emulator
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        try first.write(control: control, bytes)
        try emulator.write(control: control, bytes)
    }
}
