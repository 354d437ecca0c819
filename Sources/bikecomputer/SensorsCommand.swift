import AppCore
import ArgumentParser
import BoardIO
import Configuration
import Control
import Device
import DeviceAdapters
import Glibc
import RideModel
import Sensors

/// `bikecomputer sensors [list] | scan | pair | forget`: the paired sensors of the config with
/// their connection state and last battery level, as the running device sees them (from `ctl
/// status`); a search for the sensors around (through the running device and its bridge);
/// pairing and forgetting one (the running device rewrites the config file; without one running,
/// this command does, and the bridge picks the change up).
struct SensorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sensors",
        abstract: "List, find, pair and forget sensors (asks the running bikecomputer).",
        discussion: """
            The sensors are the config's [[sensor]] blocks; their state and battery come from the \
            running device over the control socket. A battery under \(AppCoreBattery.lowPercent) % \
            is marked LOW (the device also alerts when a ride starts). Without a running device \
            the states are unknown and `list` exits 2 after listing the sensors.

            Find and pair:  bikecomputer sensors scan --seconds 10
                            bikecomputer sensors pair ble:C0:FF:EE:00:11:22 --role power
                            bikecomputer sensors forget ant:12345/11
            A sensor is named as `scan` and `list` print it: ble:ADDRESS or ant:NUMBER/TYPE.
            """,
        subcommands: [List.self, Scan.self, Pair.self, Forget.self, Kinds.self],
        defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The paired sensors, their state and battery (the default).")

        @Option(help: "The config file (default: /etc/bikecomputer/config.toml if it exists).")
        var config: String?

        @Option(help: "The control socket (default: [control] socket from the config).")
        var socket: String?

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func run() throws {
            let device: DeviceConfig
            do { device = try ConfigFile.load(path: config).0 } catch {
                printError("bikecomputer sensors: \(error.description)")
                throw ExitCode(2)
            }
            let paired = ConfigMapping.dataSource(device).sensors
            let path = socket ?? device.control.socket
            var live: [String: (state: String, battery: Int?)] = [:]
            var unreachable: String?
            do {
                let reply = try ControlSocketClient.request("status", path: path)
                let (ok, body) = ControlProtocol.parseReply(reply)
                guard ok else { throw CommandFailure("bikecomputer sensors: status refused: \(body)") }
                for item in JSONValue.parse(body.utf8)?["paired"]?.array ?? [] {
                    guard let id = item["sensor"]?.string else { continue }
                    live[id] = (item["state"]?.string ?? "?", item["battery_percent"]?.double.map { Int($0) })
                }
            } catch let e as CommandFailure {
                throw e
            } catch {
                unreachable = "cannot reach \(path) (\(error)): is bikecomputer running? (systemctl status bikecomputer)"
            }
            let roles = device.sensors.map(\.role.rawValue)
            if json {
                var w = JSONWriter(pretty: false)
                w.beginObject()
                w.bool("device_running", unreachable == nil)
                w.beginArray("sensors")
                for (i, p) in paired.enumerated() {
                    let id = p.identity.description
                    w.beginObject()
                    w.string("sensor", id)
                    w.string("role", i < roles.count ? roles[i] : nil)
                    w.string("state", live[id]?.state)
                    w.int("battery_percent", live[id]?.battery.map(Int64.init))
                    w.endObject()
                }
                w.endArray()
                w.endObject()
                print(w.text)
            } else if paired.isEmpty {
                print("No sensors paired: add [[sensor]] blocks to the config (docs/config.md).")
            } else {
                print("SENSOR" .padding(30) + "ROLE".padding(14) + "STATE".padding(14) + "BATTERY")
                for (i, p) in paired.enumerated() {
                    let id = p.identity.description
                    let state = unreachable == nil ? (live[id]?.state ?? "?") : "unknown"
                    var battery = live[id]?.battery.map { "\($0) %" } ?? "--"
                    if let b = live[id]?.battery, b < AppCoreBattery.lowPercent { battery += " LOW: replace or charge it" }
                    print(id.padding(30) + (i < roles.count ? roles[i] : "?").padding(14) + state.padding(14) + battery)
                }
            }
            if let unreachable {
                printError("bikecomputer sensors: \(unreachable)")
                throw ExitCode(2)
            }
        }
    }
}

extension SensorsCommand {
    /// The sensor vocabulary as JSON: what the bridge's table (bikebridge/kinds.py) must equal.
    struct Kinds: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The kinds of sensor this bikecomputer pairs, and their radio profiles, as JSON.")

        func run() {
            var w = JSONWriter(pretty: false)
            w.beginArray()
            for k in SensorKind.allCases {
                w.beginObject()
                w.string("kind", k.rawValue)
                w.string("label", k.label)
                w.beginArray("roles")
                for r in k.roles { w.string(nil, r.key) }
                w.endArray()
                w.int("ant_device_type", Int64(k.antDeviceType))
                w.int("ant_channel_period", Int64(k.antChannelPeriod))
                w.string("ble_service", k.bleService)
                w.int("found_service_bit", k.isSearchKind ? Int64(k.foundServiceBit) : nil)
                w.beginArray("ble_measurements")
                for c in k.bleMeasurements { w.int(nil, Int64(c)) }
                w.endArray()
                w.beginArray("ble_measurement_uuids")
                for u in k.bleMeasurementUUIDs { w.string(nil, u) }
                w.endArray()
                w.beginArray("ble_reads")
                for c in k.bleReads { w.int(nil, Int64(c)) }
                w.endArray()
                w.endObject()
            }
            w.endArray()
            print(w.text)
        }
    }
}

/// The config file and control socket a `sensors` subcommand talks to.
struct SensorsTarget {
    let configPath: String
    let device: DeviceConfig
    let socket: String

    init(config: String?, socket: String?) throws {
        do { device = try ConfigFile.load(path: config).0 } catch {
            printError("bikecomputer sensors: \(error.description)")
            throw ExitCode(2)
        }
        configPath = config ?? DeviceConfig.defaultPath
        self.socket = socket ?? device.control.socket
    }

    /// The device's reply to `line` ("ok ..." / "error ..."), or nil when no device answers.
    func ask(_ line: String) -> (ok: Bool, body: String)? {
        guard let reply = try? ControlSocketClient.request(line, path: socket) else { return nil }
        let (ok, body) = ControlProtocol.parseReply(reply)
        return (ok, body)
    }
}

extension SensorsCommand {
    struct Scan: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Search for sensors (BLE heart rate, power, speed/cadence; ANT+ with a stick) through the running bikecomputer's bridge.")

        @Option(help: "How long to search (1...300 s).")
        var seconds = 10
        @Option(help: "The config file (default: /etc/bikecomputer/config.toml if it exists).")
        var config: String?
        @Option(help: "The control socket (default: [control] socket from the config).")
        var socket: String?
        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func validate() throws {
            guard (1...300).contains(seconds) else { throw ValidationError("--seconds takes 1...300") }
        }

        func run() throws {
            let t = try SensorsTarget(config: config, socket: socket)
            guard let started = t.ask("sensors scan \(seconds)") else {
                printError("bikecomputer sensors scan: cannot reach \(t.socket): searching needs bikecomputer and its bridge running (systemctl status bikecomputer bikebridge)")
                throw ExitCode(2)
            }
            guard started.ok else {
                printError("bikecomputer sensors scan: \(started.body)")
                throw ExitCode(1)
            }
            printError("searching for \(seconds) s...")
            var last = JSONValue.null
            var reported = 0
            let deadline = MonotonicClock.nowNs + UInt64(seconds) * 1_000_000_000 + 1_500_000_000
            repeat {
                _ = Glibc.usleep(500_000)
                guard let reply = t.ask("sensors found"), reply.ok, let j = JSONValue.parse(reply.body.utf8) else { continue }
                last = j
                let n = j["found"]?.array?.count ?? 0
                if n != reported {
                    printError("  \(n) found")
                    reported = n
                }
                if case .bool(false)? = j["searching"], MonotonicClock.nowNs > deadline - 1_500_000_000 { break }
            } while MonotonicClock.nowNs < deadline
            let found = last["found"]?.array ?? []
            if json {
                var w = JSONWriter(pretty: false)
                w.beginObject()
                w.beginArray("found")
                for f in found {
                    w.beginObject()
                    w.string("sensor", f["sensor"]?.string)
                    w.string("kind", f["kind"]?.string)
                    w.string("name", f["name"]?.string)
                    w.int("rssi", f["rssi"]?.double.map { Int64($0) })
                    w.bool("paired", { if case .bool(true)? = f["paired"] { return true } else { return false } }())
                    w.endObject()
                }
                w.endArray()
                w.endObject()
                print(w.text)
            } else if found.isEmpty {
                print("Nothing found. Wake the sensors up (spin the crank, wet the strap) and search again; a sensor connected to another device does not advertise.")
            } else {
                print("SENSOR".padding(30) + "KIND".padding(15) + "SIGNAL".padding(9) + "NAME")
                for f in found {
                    let rssi = f["rssi"]?.double.map { "\(Int($0)) dBm" } ?? "?"
                    var name = f["name"]?.string ?? ""
                    if case .bool(true)? = f["paired"] { name += " (paired)" }
                    print((f["sensor"]?.string ?? "?").padding(30) + (f["kind"]?.string ?? "?").padding(15) + rssi.padding(9) + name)
                }
                print("Pair one with: bikecomputer sensors pair SENSOR [--role KIND]")
            }
        }
    }

    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pair a sensor: add its [[sensor]] block to the config file (the device and the bridge pick it up).")

        @Argument(help: "The sensor, as `scan` prints it: ble:C0:FF:EE:00:11:22 or ant:12345/11.")
        var sensor: String
        @Option(help: "What it is: a sensor kind (\(SensorKind.names); default: the kind the last search found).")
        var role: String?
        @Option(help: "A name for it (shown on the Sensors screen; default: the name the last search heard).")
        var name: String?
        @Option(help: "The config file (default: /etc/bikecomputer/config.toml).")
        var config: String?
        @Option(help: "The control socket (default: [control] socket from the config).")
        var socket: String?

        func run() throws {
            let t = try SensorsTarget(config: config, socket: socket)
            var kind = role
            var name = name
            if kind == nil || name == nil, let reply = t.ask("sensors found"), reply.ok, let j = JSONValue.parse(reply.body.utf8),
               let seen = j["found"]?.array?.first(where: { $0["sensor"]?.string?.lowercased() == sensor.lowercased() }) {
                // What the last search found: its kind, and the name it advertised.
                kind = kind ?? seen["kind"]?.string
                if name == nil, let advertised = seen["name"]?.string.map(SensorsControl.withoutControlCharacters), !advertised.isEmpty {
                    name = advertised
                }
            }
            if let name, let why = SensorsControl.nameRefusal(name) {
                printError("bikecomputer sensors pair: --name: \(why)")
                throw ExitCode(1)
            }
            guard let word = kind else {
                printError("bikecomputer sensors pair: say what it is: --role \(SensorKind.allCases.map(\.rawValue).joined(separator: "|")) (a search through the device would know)")
                throw ExitCode(1)
            }
            guard let sensorKind = SensorKind(rawValue: word) else {
                printError("bikecomputer sensors pair: --role \(word) is not one of \(SensorKind.names)")
                throw ExitCode(1)
            }
            let id = try SensorsCommand.identity(sensor)
            let line = "sensors pair \(sensor) \(sensorKind)" + (name.map { " " + $0 } ?? "")
            try SensorsCommand.change(t, line: line, .pair(id, kind: sensorKind, name: name, comment: "paired with `bikecomputer sensors pair`"))
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget a sensor: remove its [[sensor]] block from the config file (the device and the bridge let it go).")

        @Argument(help: "The sensor, as `list` prints it: ble:C0:FF:EE:00:11:22 or ant:12345/11.")
        var sensor: String
        @Option(help: "The config file (default: /etc/bikecomputer/config.toml).")
        var config: String?
        @Option(help: "The control socket (default: [control] socket from the config).")
        var socket: String?

        func run() throws {
            let t = try SensorsTarget(config: config, socket: socket)
            try SensorsCommand.change(t, line: "sensors forget \(sensor)", .forget(try SensorsCommand.identity(sensor)))
        }
    }

    /// Asks the running device to make the change (it rewrites the file and follows at once);
    /// without one, makes it here (`ConfigFileRewrite`, as the device would).
    static func change(_ t: SensorsTarget, line: String, _ change: SensorPairing.Change) throws {
        if let reply = t.ask(line) {
            guard reply.ok else {
                printError("bikecomputer sensors: \(reply.body)")
                throw ExitCode(1)
            }
            print(reply.body)
            return
        }
        if case .failure(let f) = ConfigFileRewrite.apply(change, path: t.configPath) {
            printError("bikecomputer sensors: \(f)\(f.isPermissionDenied ? " (run it with sudo)" : "")")
            throw ExitCode(1)
        }
        print("\(t.configPath) updated (bikecomputer is not running: it reads the file when it starts; the bridge picks the change up now)")
    }

    /// The sensor id typed, or a message saying what one looks like.
    static func identity(_ id: String) throws -> SensorPairing.Identity {
        guard let i = SensorPairing.Identity(parsing: id) else {
            printError("bikecomputer sensors: \(id) is not \(SensorPairing.Identity.usage)")
            throw ExitCode(1)
        }
        return i
    }
}

/// The alert level, named once (AppCore's).
enum AppCoreBattery {
    static let lowPercent = AppCore.sensorBatteryLowPercent
}
