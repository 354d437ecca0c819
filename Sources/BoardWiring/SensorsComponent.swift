import AppCore
import BoardIO
import Configuration
import Control
import Device
import Glibc
import RideModel
import Sensors

/// Finding and pairing sensors on the board: what the Sensors screen asks (`AppEffect.sensors`)
/// and what `bikecomputer sensors scan|found|pair|forget` asks over the control socket. A search
/// goes to the bridge (protocol version 2); pairing and forgetting rewrite the config file
/// (`SensorPairing`: only that [[sensor]] block changes; written atomically with the file's
/// permissions and owner kept), give the data source the new list (no restart) and tell the
/// bridge to read the file again (it also watches the file). The Sensors screen is kept told of
/// the paired sensors' states and batteries while it is open.
public final class SensorsComponent: BoardComponent {
    /// Named limits.
    public enum Limits {
        public static let foundMax = 32
        public static let searchSecondsMax = 300
    }
    /// The mode of a config file pairing creates (one it replaces keeps its own): readable by the
    /// bridge, which runs as another user.
    public static let newConfigMode: mode_t = 0o644

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
    }

    public var state: String { "ok (\(paired.count) paired; \(configPath))" }
    public var hardwareErrors: UInt64 { 0 }

    public func close() {
        board?.bridge.onSearchFrame = nil
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
            case let .pair(id, role, name):
                let (ok, message) = pair(id: id, role: role, name: name, comment: "paired on the unit")
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
            let id = Self.identity(of: s)
            let report = id.flatMap { i in reports.first { $0.sensor.identity == i } }
            return SensorsMenu.Paired(id: id?.description ?? "?", kind: SensorsMenu.Kind(role: s.role.rawValue) ?? .power,
                                      name: s.name ?? "", state: report?.state.description ?? "searching",
                                      batteryPercent: report?.batteryPercent)
        }
    }

    static func identity(of s: DeviceConfig.Sensor) -> SourceIdentity? {
        switch s.transport {
        case .ant:
            guard let n = s.antDeviceNumber else { return nil }
            let t = s.antDeviceType.map { UInt8(clamping: $0) } ?? ConfigMapping.antDeviceType(for: s.role)
            return .ant(deviceNumber: UInt16(clamping: n), deviceType: t, transmissionType: 0)
        case .ble:
            return s.bleAddress.flatMap { BLEAddress($0) }.map { .ble($0) }
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

    /// Pairs the sensor `id` ("ble:C0:FF:EE:00:11:22", "ant:12345/11[/0]") with `role`. Returns
    /// whether it worked and what to tell the rider.
    public func pair(id: String, role: String, name: String?, comment: String) -> (Bool, String) {
        guard let identity = Self.pairingIdentity(id) else { return fail("\(id) is not a sensor id like ble:C0:FF:EE:00:11:22 or ant:12345/11") }
        guard DeviceConfig.Sensor.Role(rawValue: role) != nil else {
            return fail("role \(role) is not one of \(DeviceConfig.Sensor.Role.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return rewrite("paired \(identity) as \(role)") { text throws(SensorPairing.Failure) in
            try SensorPairing.pairing(identity, role: role, name: name, comment: comment, in: text)
        }
    }

    public func forget(id: String) -> (Bool, String) {
        guard let identity = Self.pairingIdentity(id) else { return fail("\(id) is not a sensor id like ble:C0:FF:EE:00:11:22 or ant:12345/11") }
        return rewrite("forgot \(identity)") { text throws(SensorPairing.Failure) in try SensorPairing.forgetting(identity, in: text) }
    }

    func fail(_ message: String) -> (Bool, String) {
        failures &+= 1
        log.log(.warning, "sensors: \(message)")
        return (false, message)
    }

    /// Reads the config file, edits it, checks the result loads, writes it atomically, then the
    /// data source and the bridge follow.
    func rewrite(_ what: String, _ edit: (String) throws(SensorPairing.Failure) -> String) -> (Bool, String) {
        var text = ""
        let existed = access(configPath, F_OK) == 0
        if existed {
            do {
                text = String(decoding: try AtomicFiles.readAll(configPath), as: UTF8.self)
            } catch {
                return fail("cannot read \(configPath): \(error)")
            }
        }
        let edited: String
        do throws(SensorPairing.Failure) { edited = try edit(text) } catch { return fail(error.description) }
        let config: DeviceConfig
        switch ConfigLoader.load(text: edited) {
        case .success(let c): config = c
        case .failure(let errors): return fail("the edited config would not load: \(errors.report(path: configPath))")
        }
        do {
            try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: configPath))
            try AtomicFiles.replace(configPath, Array(edited.utf8))
            // A new file is made under the service's umask (0077 in its unit): the bridge, the
            // companion and a shell read it too. (A replaced file keeps the old one's mode.)
            if !existed { _ = chmod(configPath, Self.newConfigMode) }
        } catch {
            return fail("cannot write \(configPath): \(error)\(error.isPermissionDenied ? " (the bikecomputer user needs write access to its directory)" : "")")
        }
        paired = config.sensors
        pairings &+= 1
        if let board {
            board.runtime.replaceSensors(ConfigMapping.dataSource(config).sensors, at: now)
            board.bridge.requestReload()
        }
        if menuOpen { refreshMenu() }
        log.log(.info, "sensors: \(what); \(configPath) rewritten")
        return (true, what)
    }

    /// "ble:C0:FF:EE:00:11:22[/random]" or "ant:12345/11[/0]" (also "ant:12345:11").
    public static func pairingIdentity(_ id: String) -> SensorPairing.Identity? {
        if id.hasPrefix("ble:") {
            let address = String(id.dropFirst(4).split(separator: "/").first ?? "")
            return SensorPairing.isAddress(address) ? .ble(address: address.uppercased()) : nil
        }
        if id.hasPrefix("ant:") {
            let parts = id.dropFirst(4).split(whereSeparator: { $0 == "/" || $0 == ":" })
            guard parts.count >= 2, let n = Int(parts[0]), let t = Int(parts[1]), (1...65_535).contains(n), (1...255).contains(t) else { return nil }
            return .ant(deviceNumber: n, deviceType: t)
        }
        return nil
    }

    /// The id as the status and the screen write it.
    func normalizedID(_ id: String) -> String {
        switch Self.pairingIdentity(id) {
        case .ble(let a)?: SourceIdentity.ble(BLEAddress(a)!).description
        case let .ant(n, t)?: SourceIdentity.ant(deviceNumber: UInt16(n), deviceType: UInt8(t), transmissionType: 0).description
        case nil: id
        }
    }

    // MARK: Control socket

    /// `sensors scan SECONDS | stop | found | pair ID ROLE [NAME...] | forget ID` (the words after
    /// "sensors"); `bikecomputer sensors` is the client.
    public func control(_ words: [Substring]) -> ControlAnswer {
        guard let verb = words.first else { return ControlAnswer("error sensors: scan SECONDS | stop | found | pair ID ROLE [NAME] | forget ID", isError: true) }
        switch verb {
        case "scan":
            let seconds = words.count > 1 ? Int(words[1]) ?? -1 : 10
            guard (1...Limits.searchSecondsMax).contains(seconds) else {
                return ControlAnswer("error sensors scan takes 1...\(Limits.searchSecondsMax) seconds", isError: true)
            }
            guard search(seconds: seconds) else { return ControlAnswer("error \(noSearchReason().lowercased()): the bridge cannot search (it must run and speak protocol version 2)", isError: true) }
            return ControlAnswer("ok searching for \(seconds) s")
        case "stop":
            stopSearch()
            return ControlAnswer("ok search stopped")
        case "found":
            var w = JSONWriter(pretty: false)
            w.beginObject()
            w.bool("searching", searching)
            w.beginArray("found")
            for f in found {
                w.beginObject()
                w.string("sensor", f.id)
                w.string("kind", f.role)
                w.string("name", f.name)
                w.int("rssi", f.rssi.map(Int64.init))
                w.bool("paired", paired.contains { Self.identity(of: $0)?.description == f.id })
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return ControlAnswer("ok " + w.text)
        case "pair":
            guard words.count >= 3 else { return ControlAnswer("error sensors pair ID ROLE [NAME]", isError: true) }
            let name = words.count > 3 ? words[3...].joined(separator: " ") : nil
            let (ok, message) = pair(id: String(words[1]), role: String(words[2]), name: name, comment: "paired with `bikecomputer sensors pair`")
            return ControlAnswer((ok ? "ok " : "error ") + message, isError: !ok)
        case "forget":
            guard words.count == 2 else { return ControlAnswer("error sensors forget ID", isError: true) }
            let (ok, message) = forget(id: String(words[1]))
            return ControlAnswer((ok ? "ok " : "error ") + message, isError: !ok)
        default:
            return ControlAnswer("error sensors \(verb): use scan, stop, found, pair or forget", isError: true)
        }
    }
}
