import AppCore
import Configuration
import Control
import Device
import DeviceAdapters
import RideModel
import Sensors

/// Finding and pairing sensors on the board: what the Sensors screen asks (`AppEffect.sensors`)
/// and what `bikecomputer sensors scan|found|pair|forget` asks over the control socket
/// (`SensorsControl`, which the runtime hands here). A search goes to the bridge (protocol version
/// 2); pairing and forgetting rewrite the config file (`ConfigFileRewrite`: only that [[sensor]]
/// block changes; written atomically with the file's permissions and owner kept), give the data
/// source the new list (no restart) and tell the bridge to read the file again (it also watches
/// the file). The Sensors screen is kept told of
/// the paired sensors' states and batteries while it is open.
public final class SensorsComponent: BoardComponent {
    /// Named limits.
    public enum Limits {
        public static let foundMax = 32
        public static let searchSecondsMax = SensorsControl.scanSecondsMax
    }

    /// The config file pairing writes (the one `run` loaded, or the default path).
    public let configPath: String
    let log: LogPort
    weak var board: BoardWiring?
    /// The paired sensors as the config file has them (role and name for the screen).
    public private(set) var paired: [DeviceConfig.Sensor] = []
    /// What the current (or last) search found, for `sensors found`.
    public private(set) var found: [FoundSensor] = []
    public private(set) var searching = false
    var lastRows: [SensorsMenu.Paired] = []
    var menuOpen = false
    public private(set) var pairings: UInt64 = 0
    public private(set) var failures: UInt64 = 0

    public init(configPath: String, initial: DeviceConfig, log: LogPort) {
        self.configPath = configPath
        self.log = log
        paired = initial.sensors
    }

    public func start(_ board: BoardWiring) throws {
        self.board = board
        board.bridge.onSearchFrame = { [unowned self] m in self.searchFrame(m) }
        board.runtime.sensorsControl = { [unowned self] r in self.control(r) }
    }

    public var state: String { "ok (\(paired.count) paired; \(configPath))" }
    public var hardwareErrors: UInt64 { 0 }

    public func close() {
        board?.bridge.onSearchFrame = nil
        board?.runtime.sensorsControl = nil
    }

    public func writeStatus(into w: inout JSONWriter) {
        w.beginObject("sensors_setup")
        w.string("config", configPath)
        w.bool("searching", searching)
        w.int("found", Int64(found.count))
        w.int("pairings", Int64(clamping: pairings))
        w.int("failures", Int64(clamping: failures))
        w.endObject()
    }

    var now: MonotonicInstant { board?.now ?? .zero }

    // MARK: The Sensors screen

    /// After every input: carries out what the Sensors screen asked.
    func process() {
        guard let board else { return }
        for r in board.runtime.takeSensorRequests() {
            switch r {
            case .open:
                menuOpen = true
                lastRows = []
                refreshMenu()
            case .close:
                menuOpen = false
            case .search(let seconds):
                if !search(seconds: seconds) { tellMenu(.outcome(noSearchReason(), selecting: nil)) }
            case .stopSearch:
                stopSearch()
            case let .pair(id, kind, name):
                let (ok, message) = pair(id: id, kind: kind, name: name, comment: "paired on the unit")
                tellMenu(.outcome(ok ? "PAIRED" : short(message), selecting: ok ? normalizedID(id) : nil))
            case .forget(let id):
                let (ok, message) = forget(id: id)
                tellMenu(.outcome(ok ? "FORGOTTEN" : short(message), selecting: nil))
            }
        }
    }

    /// The 1 Hz tick: the paired sensors' states and batteries to the open Sensors screen.
    func tick() {
        if menuOpen { refreshMenu() }
    }

    func refreshMenu() {
        let rows = menuRows()
        guard rows != lastRows else { return }
        lastRows = rows
        tellMenu(.paired(rows))
    }

    func tellMenu(_ u: SensorsUpdate) {
        guard let board else { return }
        board.runtime.handle(.sensors(u, at: now))
    }

    /// The paired sensors in config order, with the data source's state and battery.
    public func menuRows() -> [SensorsMenu.Paired] {
        guard let board else { return [] }
        let reports = board.runtime.sensorReports
        return paired.map { s in
            let id = ConfigMapping.identity(of: s)
            let report = id.flatMap { i in reports.first { $0.sensor.identity == i } }
            return SensorsMenu.Paired(id: id?.description ?? "?", kind: s.role, name: s.name ?? "",
                                      state: report?.state ?? .searching, batteryPercent: report?.batteryPercent)
        }
    }

    func short(_ message: String) -> String { String(message.prefix(21)).uppercased() }

    func noSearchReason() -> String {
        guard let board else { return "NO BRIDGE" }
        if !board.bridge.isConnected { return "NO BRIDGE" }
        return board.bridge.bridgeTakesRequests ? "SEARCH FAILED" : "BRIDGE TOO OLD"
    }

    // MARK: Searching

    func search(seconds: Int) -> Bool {
        guard let board, board.bridge.bridgeTakesRequests else { return false }
        found = []
        guard board.bridge.requestSearch(start: true, seconds: min(max(1, seconds), Limits.searchSecondsMax)) else { return false }
        searching = true
        return true
    }

    func stopSearch() {
        searching = false
        board?.bridge.requestSearch(start: false, seconds: 0)
    }

    func searchFrame(_ m: BridgeMessage) {
        switch m {
        case .found(let f):
            let s = SensorInputs.found(f)
            if let i = found.firstIndex(where: { $0.id == s.id }) {
                found[i] = s
            } else if found.count < Limits.foundMax {
                found.append(s)
            }
        case let .scanState(running, _, _):
            searching = running
        default:
            break
        }
    }

    // MARK: Pairing and forgetting

    /// Pairs the sensor `id` ("ble:C0:FF:EE:00:11:22", "ant:12345/11[/0]") as `kind`. Returns
    /// whether it worked and what to tell the rider.
    public func pair(id: String, kind: SensorKind, name: String?, comment: String) -> (Bool, String) {
        guard let identity = SensorPairing.Identity(parsing: id) else { return fail("\(id) is not \(SensorPairing.Identity.usage)") }
        return rewrite(.pair(identity, kind: kind, name: name, comment: comment))
    }

    public func forget(id: String) -> (Bool, String) {
        guard let identity = SensorPairing.Identity(parsing: id) else { return fail("\(id) is not \(SensorPairing.Identity.usage)") }
        return rewrite(.forget(identity))
    }

    func fail(_ message: String) -> (Bool, String) {
        failures &+= 1
        log.log(.warning, "sensors: \(message)")
        return (false, message)
    }

    /// Makes the change to the config file (`ConfigFileRewrite`), then the data source and the
    /// bridge follow.
    func rewrite(_ change: SensorPairing.Change) -> (Bool, String) {
        let config: DeviceConfig
        switch ConfigFileRewrite.apply(change, path: configPath) {
        case .success(let c): config = c
        case .failure(let f):
            return fail("\(f)\(f.isPermissionDenied ? " (the bikecomputer user needs write access to its directory)" : "")")
        }
        paired = config.sensors
        pairings &+= 1
        if let board {
            board.runtime.replaceSensors(ConfigMapping.dataSource(config).sensors, at: now)
            board.bridge.requestReload()
        }
        if menuOpen { refreshMenu() }
        log.log(.info, "sensors: \(change); \(configPath) rewritten")
        return (true, change.description)
    }

    /// The id as the status and the screen write it.
    func normalizedID(_ id: String) -> String {
        SensorPairing.Identity(parsing: id).flatMap(ConfigMapping.identity(of:))?.description ?? id
    }

    // MARK: Control socket

    /// A `sensors …` line (`SensorsControl`, parsed by `ControlProtocol`); `bikecomputer sensors`
    /// is the client.
    public func control(_ request: SensorsControl) -> ControlAnswer {
        let answer = answer(request)
        log.log(answer.isError ? .warning : .info, "control: sensors \(request) → \(answer.line)")
        return answer
    }

    func answer(_ request: SensorsControl) -> ControlAnswer {
        switch request {
        case .scan(let seconds):
            guard search(seconds: seconds) else { return ControlAnswer("error \(noSearchReason().lowercased()): the bridge cannot search (it must run and speak protocol version 2)", isError: true) }
            return ControlAnswer("ok searching for \(seconds) s")
        case .stop:
            stopSearch()
            return ControlAnswer("ok search stopped")
        case .found:
            var w = JSONWriter(pretty: false)
            w.beginObject()
            w.bool("searching", searching)
            w.beginArray("found")
            for f in found {
                w.beginObject()
                w.string("sensor", f.id)
                w.string("kind", f.kind?.description)
                w.string("name", f.name)
                w.int("rssi", f.rssi.map(Int64.init))
                w.bool("paired", paired.contains { ConfigMapping.identity(of: $0)?.description == f.id })
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return ControlAnswer("ok " + w.text)
        case let .pair(id, kind, name):
            let (ok, message) = pair(id: id, kind: kind, name: name, comment: "paired with `bikecomputer sensors pair`")
            return ControlAnswer((ok ? "ok " : "error ") + message, isError: !ok)
        case .forget(let id):
            let (ok, message) = forget(id: id)
            return ControlAnswer((ok ? "ok " : "error ") + message, isError: !ok)
        }
    }
}
