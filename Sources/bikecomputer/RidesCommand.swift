import ArgumentParser
import BoardIO
import Control
import Device
import DeviceAdapters
import Glibc
import RideFiles
import RideModel

/// The ride library on the board's file system (BoardIO's atomic file operations).
struct DataDirectoryOption: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "The data directory holding rides/.")
    var dataDirectory = "/var/lib/bikecomputer"

    func library() -> RideLibrary {
        let lib = RideLibrary(dataDirectory: dataDirectory, ops: BoardRideFiles())
        return lib
    }
}

/// A failure at run time: ArgumentParser prints "Error: <description>" (no usage) and exits 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fails the command with the library's message (which says what to do).
func orExit<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let e as RideLibraryError {
        throw CommandFailure(e.description)
    }
}

struct Rides: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show, export and delete the saved rides.",
        subcommands: [List.self, Show.self, Export.self, Delete.self, Import.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the saved rides, oldest first.")
        @OptionGroup var data: DataDirectoryOption
        @Flag(help: "Print JSON instead of a table.") var json = false

        func run() throws {
            let lib = data.library()
            let rides = try orExit { try lib.list() }
            if json {
                var w = JSONWriter()
                w.beginArray()
                for r in rides {
                    w.beginObject()
                    w.string("id", r.rideID.description)
                    w.int("version", Int64(r.version))
                    w.string("start_utc", r.startText)
                    w.beginObject("files")
                    for f in r.formats {
                        w.beginObject(f.rawValue)
                        w.string("name", r.fileName(f))
                        w.int("bytes", lib.size(r, f))
                        w.endObject()
                    }
                    w.endObject()
                    w.endObject()
                }
                w.endArray()
                print(w.text)
            } else if rides.isEmpty {
                print("No rides in \(lib.directory).")
            } else {
                print("START (UTC)        ID                                    VER  FIT BYTES")
                for r in rides {
                    print("\(r.startText)  \(r.rideID)  \(pad(String(r.version), 3))  \(lib.size(r, .fit).map(String.init) ?? "?")")
                }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a ride's files and summary (from its FIT file).")
        @OptionGroup var data: DataDirectoryOption
        @Argument(help: "The ride id (or its first characters).") var id: String
        @Flag(help: "Print the summary, laps and intervals as JSON (for charts).") var json = false
        @Flag(name: .customLong("no-intervals"), help: "Leave out the per-interval table.") var noIntervals = false
        @Option(help: ArgumentHelp("Also draw the ride as an SVG picture: speed, heart rate, power, cadence (and altitude) over time, laps marked, zones shaded.", valueName: "FILE.svg"))
        var plot: String?

        func validate() throws { try validatePlotPath(plot) }

        func run() throws {
            let lib = data.library()
            let r = try orExit { try lib.find(id) }
            if json {
                let bytes = try orExit { try lib.bytes(r, .fit) }
                let file: FITFile
                do { file = try FITFile(bytes: bytes) } catch { throw CommandFailure("\(lib.path(r, .fit)): \(error.description)") }
                print(try Self.tablesJSON(file, FITActivity(file), rideID: r.rideID))
                if let plot { try writePlot(r, lib, to: plot) }
                return
            }
            print("id:       \(r.rideID)")
            print("version:  \(r.version)")
            print("start:    \(r.startText) UTC")
            for f in r.formats { print("\(f.rawValue):      \(lib.path(r, f)) (\(lib.size(r, f).map(String.init) ?? "?") bytes)") }
            let bytes = try orExit { try lib.bytes(r, .fit) }
            let file: FITFile
            do { file = try FITFile(bytes: bytes) } catch {
                throw CommandFailure("\(lib.path(r, .fit)): \(error.description)")
            }
            let a = FITActivity(file)
            print("records:  \(a.records.count)")
            print("laps:     \(a.laps.count)")
            let course = CourseInFile(file, a)
            if let name = course.name {
                print("course:   \(name)")
                print("off course: " + (course.periods.isEmpty ? "never" : course.periods.map { p in
                    "\(clockText(p.startS))-\(clockText(p.endS)) (\(p.wrongWay ? "wrong way, " : "")up to \(p.maxDistanceM) m)"
                }.joined(separator: ", ")))
            }
            if let s = a.sessions.first {
                func show(_ label: String, _ v: Double?, _ unit: String, _ decimals: Int = 0) {
                    print("\(label)\(v.map { decimalText($0, decimals: decimals) + unit } ?? "--")")
                }
                show("timer:    ", s.timerS, " s", 1)
                show("moving:   ", s.movingS, " s", 1)
                show("elapsed:  ", s.elapsedS, " s", 1)
                show("distance: ", s.distanceM.map { $0 / 1000 }, " km", 2)
                show("avg speed:", s.avgSpeedMps.map { $0 * 3.6 }, " km/h", 1)
                show("avg HR:   ", s.avgHeartRate, " bpm")
                show("max HR:   ", s.maxHeartRate, " bpm")
                show("avg power:", s.avgPowerW, " W")
                show("max power:", s.maxPowerW, " W")
                show("avg cad:  ", s.avgCadence, " rpm")
            }
            if let radar = Self.radarLine(a) { print("radar:    \(radar)") }
            let ride = try Self.rebuild(a, rideID: r.rideID)
            print("averages: cadence \(ride.builder.zeroAveraging[Quantity.cadence.index]), power \(ride.builder.zeroAveraging[Quantity.power.index]), time-weighted over timer time (docs/statistics.md)")
            print("")
            print(Self.lapTable(a))
            if !noIntervals {
                print("")
                print(Self.intervalTable(ride.builder.intervals))
            }
            if let plot { try writePlot(r, lib, to: plot) }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Copy a ride's file out of the library (written atomically).")
        @OptionGroup var data: DataDirectoryOption
        @Argument(help: "The ride id (or its first characters).") var id: String
        @Option(help: "fit, gpx or tcx.") var format: String = "fit"
        @Option(name: .shortAndLong, help: "Where to write the file.") var output: String

        func run() throws {
            guard let f = RideFileFormat(rawValue: format.lowercased()) else {
                throw ValidationError("unknown format \"\(format)\"; use fit, gpx or tcx")
            }
            let lib = data.library()
            let r = try orExit { try lib.find(id) }
            let bytes = try orExit { try lib.bytes(r, f) }
            do { try AtomicFiles.write(output, bytes) } catch {
                throw CommandFailure("cannot write \(output): \(error); check the directory exists and is writable")
            }
            print("\(output): \(bytes.count) bytes (\(r.fileName(f)))")
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a ride (every version and format).")
        @OptionGroup var data: DataDirectoryOption
        @Argument(help: "The ride id (or its first characters).") var id: String
        @Flag(help: "Do not ask.") var yes = false

        func run() throws {
            let lib = data.library()
            let r = try orExit { try lib.find(id) }
            if !yes {
                guard isatty(0) != 0 else { throw CommandFailure("not deleting \(r.rideID) without confirmation; add --yes") }
                print("Delete the ride of \(r.startText) UTC (\(r.rideID))? [y/N] ", terminator: "")
                guard let answer = readLine(), answer.lowercased().hasPrefix("y") else { print("Kept."); return }
            }
            try orExit { try lib.deleteTyped(rideID: r.rideID) }
            print("Deleted \(r.rideID).")
        }
    }
}

extension Rides {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a FIT activity (e.g. from another device) to the library, replayed through the app's statistics.",
            discussion: "The ride id is derived from the file's bytes, so importing the same file again stores a new version of the same ride.")
        @OptionGroup var data: DataDirectoryOption
        @Argument(help: "The FIT file.") var file: String

        func run() throws {
            let bytes: [UInt8]
            do { bytes = try AtomicFiles.readAll(file) } catch { throw CommandFailure("cannot read \(file): \(error)") }
            let fit: FITFile
            do { fit = try FITFile(bytes: bytes) } catch { throw CommandFailure("\(file): \(error.description)") }
            var h1: UInt64 = 0xcbf2_9ce4_8422_2325, h2: UInt64 = 0x8422_2325_cbf2_9ce4
            for b in bytes {
                h1 = (h1 ^ UInt64(b)) &* 0x0000_0100_0000_01B3
                h2 = (h2 ^ UInt64(b)) &* 0x0000_0100_0000_01B3 &+ 7
            }
            let id = RideID(random: h1, h2)
            let records = FITActivity(fit).rideRecords(rideID: id)
            let stored = try orExit { try data.library().storeTyped(rideID: id, records: records) }
            print("\(id): \(stored)")
        }
    }
}

// MARK: rides show: the radar's figures (the file's radar_threat_alert events)

/// What a ride's radar_threat_alert events add up to.
/// Another device's file says neither how many vehicles an event stands for (one is counted) nor
/// whether the rider was beeped (then no beep count is given).
struct RadarFigures {
    var vehicles = 0
    var beeps: Int? = 0
    var maxThreat = "none"
    var maxApproachMps: Double?

    init(_ a: FITActivity) {
        var level: UInt8 = 0
        for r in a.radarAlerts {
            vehicles += r.vehiclesArrived ?? 1
            if let b = r.beeped { if b { beeps? += 1 } } else { beeps = nil }
            level = max(level, r.threatLevel ?? 0)
            if let s = r.maxApproachMps { maxApproachMps = max(maxApproachMps ?? 0, s) }
        }
        maxThreat = level >= 3 ? "fast_approach" : level == 2 ? "approaching" : "none"
    }
}

extension Rides.Show {
    /// "12 vehicles, 9 beeps, worst threat fast approach, fastest 14.2 m/s"; nil without radar events.
    static func radarLine(_ a: FITActivity) -> String? {
        guard !a.radarAlerts.isEmpty else { return nil }
        let r = RadarFigures(a)
        var s = "\(r.vehicles) vehicle\(r.vehicles == 1 ? "" : "s"), " + (r.beeps.map { "\($0) beep\($0 == 1 ? "" : "s"), " } ?? "") + "worst threat \(String(r.maxThreat.map { $0 == "_" ? " " : $0 }))"
        if let m = r.maxApproachMps { s += ", fastest \(decimalText(m, decimals: 1)) m/s" }
        return s
    }
}

// MARK: rides show: lap and interval tables (docs/statistics.md)

extension Rides.Show {
    /// The ride rebuilt from its FIT file through the app's own statistics (its intervals are
    /// not in the file).
    static func rebuild(_ a: FITActivity, rideID: RideID) throws -> RideExport {
        do { return try RideExport(records: a.rideRecords(rideID: rideID)) } catch {
            throw CommandFailure("the ride's file holds no ride to rebuild: \(error.description)")
        }
    }

    static func clock(_ seconds: Double?) -> String {
        guard let s = seconds, s.isFinite, s >= 0 else { return "--" }
        let t = Int(s.rounded())
        let h = t / 3600, m = (t / 60) % 60, sec = t % 60
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(two(m)):\(two(sec))" : "\(m):\(two(sec))"
    }

    static func cell(_ v: Double?, _ decimals: Int = 0) -> String { v.map { decimalText($0, decimals: decimals) } ?? "--" }

    static func row(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { pad($0, $1) }.joined(separator: " ")
    }

    static let lapWidths = [3, 8, 8, 8, 7, 7, 6, 6, 6, 6, 6]

    /// One row per lap message of the file: what the recording wrote.
    static func lapTable(_ a: FITActivity) -> String {
        var lines = ["LAPS", row(["#", "trigger", "timer", "moving", "km", "km/h", "avg HR", "max HR", "avg W", "max W", "avg rpm"], lapWidths)]
        for (i, l) in a.laps.enumerated() {
            let trigger = switch l.trigger { case 0: "manual"; case 1: "time"; case 2: "distance"; case 7: "end"; case nil: "--"; default: "other" }
            lines.append(row([String(i + 1), trigger, clock(l.timerS), clock(l.movingS), cell(l.distanceM.map { $0 / 1000 }, 2),
                              cell(l.avgSpeedMps.map { $0 * 3.6 }, 1), cell(l.avgHeartRate), cell(l.maxHeartRate),
                              cell(l.avgPowerW), cell(l.maxPowerW), cell(l.avgCadence)], lapWidths))
        }
        return lines.joined(separator: "\n")
    }

    static let intervalWidths = [8, 6, 6, 6, 6, 7, 6, 7]

    /// One row per interval bucket (timer time) with data.
    static func intervalTable(_ t: IntervalTable) -> String {
        var lines = ["INTERVALS (every \(t.intervalMs / 1000) s of timer time)",
                     row(["from", "avg HR", "max HR", "avg W", "max W", "avg rpm", "km/h", "alt m"], intervalWidths)]
        for b in 0..<t.bucketCount {
            let hr = t.statistics(bucket: b, .heartRate), p = t.statistics(bucket: b, .power)
            lines.append(row([clock(Double(t.bucketStartMs(b)) / 1000), cell(hr.average), cell(hr.max), cell(p.average), cell(p.max),
                              cell(t.statistics(bucket: b, .cadence).average), cell(t.statistics(bucket: b, .speed).average.map { $0 * 3.6 }, 1),
                              cell(t.statistics(bucket: b, .altitude).average)], intervalWidths))
        }
        return lines.joined(separator: "\n")
    }

    /// `rides show --json`: the session, the laps (from the file) and the intervals (rebuilt):
    /// every average states its convention.
    static func tablesJSON(_ file: FITFile, _ a: FITActivity, rideID: RideID) throws -> String {
        let ride = try rebuild(a, rideID: rideID)
        let b = ride.builder
        var w = JSONWriter()
        w.beginObject()
        w.string("id", rideID.description)
        w.beginObject("averaging")
        w.string("cadence", RideBuilder.averagingValue(b.zeroAveraging[Quantity.cadence.index]))
        w.string("power", RideBuilder.averagingValue(b.zeroAveraging[Quantity.power.index]))
        w.string("weighting", "time-weighted over timer time")
        w.endObject()
        func summary(_ s: FITActivity.Summary) {
            w.number("timer_time_s", s.timerS); w.number("moving_time_s", s.movingS); w.number("elapsed_time_s", s.elapsedS)
            w.number("distance_m", s.distanceM, decimals: 2); w.number("avg_speed_mps", s.avgSpeedMps); w.number("max_speed_mps", s.maxSpeedMps)
            w.number("avg_hr_bpm", s.avgHeartRate); w.number("max_hr_bpm", s.maxHeartRate)
            w.number("avg_power_w", s.avgPowerW); w.number("max_power_w", s.maxPowerW); w.number("normalized_power_w", s.normalizedPowerW)
            w.number("avg_cadence_rpm", s.avgCadence); w.number("max_cadence_rpm", s.maxCadence)
        }
        if let s = a.sessions.first { w.beginObject("session"); summary(s); w.endObject() } else { w.raw("session", "null") }
        if !a.radarAlerts.isEmpty {
            let r = RadarFigures(a)
            w.beginObject("radar")
            w.int("vehicles", Int64(r.vehicles)); if let b = r.beeps { w.int("beeps", Int64(b)) } else { w.raw("beeps", "null") }
            w.string("max_threat", r.maxThreat); w.number("max_approach_speed_mps", r.maxApproachMps)
            w.endObject()
        }
        let course = CourseInFile(file, a)
        if let name = course.name {
            w.beginObject("course")
            w.string("name", name)
            w.beginArray("off_course")
            for p in course.periods {
                w.beginObject()
                w.int("start_elapsed_s", p.startS); w.int("end_elapsed_s", p.endS); w.int("max_distance_m", Int64(p.maxDistanceM))
                w.bool("wrong_way", p.wrongWay)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        } else {
            w.raw("course", "null")
        }
        w.beginArray("laps")
        for (i, l) in a.laps.enumerated() { w.beginObject(); w.int("index", Int64(i)); summary(l); w.endObject() }
        w.endArray()
        let t = b.intervals
        w.beginObject("intervals")
        w.int("interval_s", t.intervalMs / 1000)
        w.beginArray("buckets")
        for k in 0..<t.bucketCount {
            w.beginObject()
            w.number("start_timer_s", Double(t.bucketStartMs(k)) / 1000)
            for q in IntervalTable.chartedQuantities {
                let st = t.statistics(bucket: k, q)
                w.beginObject(q.name)
                w.number("avg", st.average); w.number("min", st.min); w.number("max", st.max)
                w.number("data_s", Double(st.weightMs) / 1000)
                w.endObject()
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.endObject()
        return w.text
    }
}

func pad(_ s: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - s.count)) + s }

/// The course a ride file says the ride followed (docs/navigation.md): the `course` message's
/// name and the `off_course` events (start; stop with the farthest distance), seconds from the
/// first timer start.
struct CourseInFile {
    struct Period { var startS: Int64; var endS: Int64; var maxDistanceM: UInt32; var wrongWay: Bool }
    var name: String?
    var periods: [Period] = []

    init(_ file: FITFile, _ a: FITActivity) {
        name = file.messages(31).first?.strings[5]
        let start = Int64(a.startTimestamp ?? 0)
        var open: (Int64, Bool)?
        for e in a.events where e.event == 7 {
            let t = Int64(e.timestamp) - start
            if e.eventType == 0 { open = (t, e.data == 1) }
            if e.eventType == 1, let (s, w) = open {
                periods.append(Period(startS: s, endS: t, maxDistanceM: e.data ?? 0, wrongWay: w))
                open = nil
            }
        }
    }
}

/// "1:02:03" / "2:03" for seconds.
func clockText(_ s: Int64) -> String {
    let h = s / 3600, m = (s / 60) % 60, sec = s % 60
    func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return h > 0 ? "\(h):\(two(m)):\(two(sec))" : "\(m):\(two(sec))"
}
