// screen-oracle: what the project's SSD1306Emulator holds for a screen value, for the VM
// tests (Tests/vm/test_vm_run.py, docs/testing.md). The real `bikecomputer run` in the guest
// drives the kernel's simulated controller; the test reads the kernel's GDDRAM and asks this
// tool for the GDDRAM of the same screen value, drawn by the renderer, sent by the driver and
// interpreted by the emulator: they must be equal byte for byte.
//
//   screen-oracle --out DIR SPEC...
//
// SPEC: comma-separated key=value: mode=idle|countdown:N|running:P|paused|summary:P|confirm,
// timer_ms, elapsed_ms, lap_timer_ms, lap, metric.<name>=<value> (Metric descriptions:
// speed, distance, heart_rate...), sensor.<role>=<state> (HR, PWR, SPD, CAD; not_configured,
// searching, connected, stale, lost), storage=ok|low|full|failing, controller=ssd1306|sh1106,
// height=64|32, contrast (the config's [display] contrast), panel=sharp-ls027|sharp-ls013 (a
// memory LCD: the Sharp driver into SharpMemoryEmulator). Writes DIR/<i>.bin (the emulator's
// memory: 8 pages of 128 or 132 columns; a memory LCD's lines of width/8 bytes) and prints one
// line per spec: i display_on charge_pump_on contrast segment_remap com_scan_remapped (a memory
// LCD: i 1 1 0 0 0).
import AppCore
import Display
import RideModel
import Glibc
import Screens

func fail(_ message: String) -> Never {
    let text = Array("screen-oracle: \(message)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { fail("cannot create \(path)") }
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard n == bytes.count else { fail("short write to \(path)") }
}

var args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 3, args[0] == "--out" else { fail("usage: screen-oracle --out DIR SPEC...") }
let outDirectory = args[1]
args.removeFirst(2)

for (index, spec) in args.enumerated() {
    var model = ScreenModel()
    var controller = OLEDController.ssd1306
    var height = 64
    var contrast: UInt8 = 0xCF
    var memoryLCD: SharpMemoryDriver.Model?
    for pair in spec.split(separator: ",") {
        let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard kv.count == 2 else { fail("\(pair): expected key=value") }
        let (key, value) = (kv[0], kv[1])
        func int() -> Int64 {
            guard let v = Int64(value) else { fail("\(key)=\(value): not a whole number") }
            return v
        }
        switch key {
        case "mode":
            let parts = value.split(separator: ":").map(String.init)
            let n = parts.count > 1 ? Int(parts[1]) : nil
            switch parts[0] {
            case "idle": model.mode = .idle
            case "countdown": model.mode = .countdown(n ?? 3)
            case "running": model.mode = .running(page: n ?? 0)
            case "paused": model.mode = .paused
            case "summary": model.mode = .summary(page: n ?? 0)
            case "confirm": model.mode = .confirmDiscard
            default: fail("unknown mode \(value)")
            }
        case "timer_ms": model.timerMs = int()
        case "elapsed_ms": model.elapsedMs = int()
        case "lap_timer_ms": model.lapTimerMs = int()
        case "lap": model.lapNumber = Int(int())
        case "storage":
            switch value {
            case "ok": model.storage = .ok
            case "low": model.storage = .low
            case "full": model.storage = .full
            case "failing": model.storage = .failing
            default: fail("unknown storage \(value)")
            }
        case "controller": controller = value == "sh1106" ? .sh1106 : .ssd1306
        case "height": height = Int(int())
        case "contrast": contrast = UInt8(clamping: int())
        case "panel":
            switch value {
            case "sharp-ls027": memoryLCD = .ls027b7dh01
            case "sharp-ls013": memoryLCD = .ls013b7dh03
            default: fail("unknown panel \(value)")
            }
        default:
            if key.hasPrefix("metric.") {
                let name = String(key.dropFirst(7))
                guard let m = Metric.allCases.first(where: { $0.description == name }), let v = Double(value) else { fail("unknown metric \(key)=\(value)") }
                model[m] = v
            } else if key.hasPrefix("sensor.") {
                let name = String(key.dropFirst(7))
                guard let role = SensorRole.allCases.first(where: { $0.description == name }) else { fail("unknown sensor role \(name)") }
                let states: [SensorState] = [.notConfigured, .searching, .connected, .stale, .lost]
                guard let state = states.first(where: { $0.description == value }) else { fail("unknown sensor state \(value)") }
                model.sensors[Int(role.rawValue)] = state
            } else {
                fail("unknown key \(key)")
            }
        }
    }
    if let lcd = memoryLCD {
        var pipeline = PanelPipeline(driver: SharpMemoryDriver(model: lcd))
        var emulator = SharpMemoryEmulator(model: lcd)
        do {
            try pipeline.start(bus: &emulator)
            pipeline.show(model)
            try pipeline.flushAll(bus: &emulator)
        } catch {
            fail("the emulator refused a write: \(error)")
        }
        writeFile("\(outDirectory)/\(index).bin", emulator.memory)
        print("\(index) 1 1 0 0 0")
        continue
    }
    // As ConfigMapping.panel builds it from [display] contrast.
    let panel = PanelConfiguration(controller: controller, height: height, contrastActive: contrast, contrastIdle: min(contrast, 0x10))
    var pipeline = DisplayPipeline(panel: panel)
    var emulator = SSD1306Emulator(controller: controller, height: height)
    do {
        try pipeline.start(bus: &emulator)
        pipeline.show(model)
        try pipeline.applyBrightness(for: model, bus: &emulator)
        try pipeline.flushAll(bus: &emulator)
    } catch {
        fail("the emulator refused a write: \(error)")
    }
    writeFile("\(outDirectory)/\(index).bin", emulator.memory)
    print("\(index) \(emulator.displayOn ? 1 : 0) \(emulator.chargePumpOn ? 1 : 0) \(emulator.contrast) \(emulator.segmentRemap ? 1 : 0) \(emulator.comScanRemapped ? 1 : 0)")
}
