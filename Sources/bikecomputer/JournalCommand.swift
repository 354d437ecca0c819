import AppCore
import ArgumentParser
import BoardIO
import Control
import Device
import DeviceAdapters
import Glibc
import Journal
import RideModel

struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Look at the ride journal (the crash-safe log of the ride in progress).",
        subcommands: [Inspect.self])

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the journal's records and what recovery would rebuild. Read-only.")

        @Argument(help: "The journal directory (holding seg-NNNNNNNN.jnl files).")
        var directory: String

        @Flag(help: "Machine-readable output.")
        var json = false

        @Flag(help: "Also list every sample and series value inside group records.")
        var values = false

        func run() throws {
            let dir: SegmentDirectory
            do {
                dir = try SegmentDirectory(path: directory, segmentBytes: RideJournalLocation.segmentBytes, readOnly: true)
            } catch {
                throw ValidationError("\(error)")
            }
            let inspection = JournalInspection(storage: FileSystemSegmentStorage(dir))
            let asideFiles = ((try? dir.list()) ?? []).filter { SegmentName.parse($0) == nil }
            print(json ? Self.json(inspection, asideFiles: asideFiles, values: values) : Self.text(inspection, asideFiles: asideFiles, values: values))
        }

        static func describe(_ r: RideRecord) -> String {
            switch r {
            case .header(let h): "header ride=\(h.rideID) activity=\(h.activity) start=\(h.anchor.monotonic.milliseconds)ms wall=\(h.anchor.wall)"
            case .event(let e): "event \(e.kind) at=\(e.instant.milliseconds)ms trigger=\(e.trigger)" + (e.kind == .marker || e.kind == .gap ? " value=\(e.value)" : "")
            case .sample(let s): "sample \(s.quantity)=\(s.value)\(s.quantity.unit) at=\(s.instant.milliseconds)ms"
            case .series(let s): "series \(s.quantity)=\(s.value)\(s.quantity.unit) at=\(s.instant.milliseconds)ms"
            case .wallClock(let a): "wall_clock at=\(a.monotonic.milliseconds)ms wall=\(a.wall)"
            case .finished(let saved, let at): "finished saved=\(saved) at=\(at.milliseconds)ms"
            case .metadata(let k, let v): "metadata \(k)=\(v)"
            case .elapsed(let at): "elapsed at=\(at.milliseconds)ms"
            case .timeline(let t): "timeline boot=\(t.boot) offset=\(t.offsetMs)ms"
            }
        }

        /// The values of every group record, by record index.
        static func groupValues(_ scan: JournalScan) -> [Int: [RideRecord]] {
            var out: [Int: [RideRecord]] = [:]
            scan.forEachRecordWithIndex(in: 0..<scan.records.count) { index, r in
                if scan.records[index].type == .group { out[index, default: []].append(r) }
            }
            return out
        }

        static func text(_ i: JournalInspection, asideFiles: [String], values: Bool) -> String {
            var out: [String] = []
            out.append("segments: \(i.scan.segments.map(SegmentName.name).joined(separator: " "))")
            let groupValues = values ? Self.groupValues(i.scan) : [:]
            for (index, r) in i.scan.records.enumerated() {
                let head = "#\(r.sequence) \(SegmentName.name(r.segmentID))+\(r.offset)"
                if r.type == .group {
                    out.append("\(head) group \(r.samples) samples, \(r.series) series values")
                    for x in groupValues[index] ?? [] { out.append("    " + describe(x)) }
                    continue
                }
                switch i.scan.entry(r) {
                case .records(let list): out.append("\(head) \(list.first.map(describe) ?? "-")")
                case .checkpoint(let c):
                    out.append("\(head) checkpoint ride=\(c.rideID) at=\(c.instant.milliseconds)ms records=\(c.recordCount) events=\(c.eventCount) samples=\(c.sampleCount) series=\(c.seriesCount) laps=\(c.lapCount)")
                case .rideFileDurable(let id): out.append("\(head) ride_file_durable ride=\(id)")
                }
            }
            out.append("next record: #\(i.scan.nextSequence)")
            for r in i.rides {
                let status = r.finished.map { $0 ? "ended (saved)" : "ended (discarded)" } ?? (r.started ? "in progress" : "not started")
                out.append("ride \(r.rideID): \(status), \(r.records) records (\(r.samples) samples, \(r.series) series values, \(r.events.count) events), file durable: \(r.fileDurable), checkpoints: \(r.checkpoints) (\(r.checkpointMismatches) disagree)")
            }
            if i.orphans > 0 { out.append("\(i.orphans) records without a ride header (ignored)") }
            if let b = i.rebuild {
                out.append("recovery would rebuild ride \(b.rideID): \(b.state), timer \(b.timerTimeMs / 1000) s, elapsed \(b.elapsedTimeMs / 1000) s, "
                    + "distance \(b.distanceM.map { JSONWriter.format($0, decimals: 1) + " m" } ?? "-"), laps \(b.laps), events \(b.events), "
                    + "avg power \(b.averagePowerW.map { JSONWriter.format($0, decimals: 1) + " W" } ?? "-"), avg HR \(b.averageHeartRate.map { JSONWriter.format($0, decimals: 1) } ?? "-"), "
                    + "earlier gaps \(b.gapsMs) ms, last durable instant \(b.lastInstant.map { "\($0.milliseconds) ms" } ?? "-")")
            } else {
                out.append("recovery would rebuild: nothing (no interrupted ride)")
            }
            let repairs = i.scan.repairs
            out.append(repairs.isEmpty ? "repairs needed: none" : "repairs recovery would make:")
            for r in repairs { out.append("  " + r) }
            for f in asideFiles { out.append("kept aside: \(f)") }
            return out.joined(separator: "\n")
        }

        static func json(_ i: JournalInspection, asideFiles: [String], values: Bool) -> String {
            var w = JSONWriter()
            w.beginObject()
            w.int("format_version", Int64(JournalFormat.version))
            w.beginArray("segments")
            for s in i.scan.segments { w.string(nil, SegmentName.name(s)) }
            w.endArray()
            let groupValues = values ? Self.groupValues(i.scan) : [:]
            w.beginArray("records")
            for (index, r) in i.scan.records.enumerated() {
                w.beginObject()
                w.int("sequence", Int64(r.sequence))
                w.string("segment", SegmentName.name(r.segmentID))
                w.int("offset", Int64(r.offset))
                w.string("type", r.type.description)
                if r.type == .group {
                    w.int("samples", Int64(r.samples))
                    w.int("series", Int64(r.series))
                    if values { w.beginArray("values"); for x in groupValues[index] ?? [] { w.string(nil, describe(x)) }; w.endArray() }
                    w.endObject()
                    continue
                }
                switch i.scan.entry(r) {
                case .records(let list):
                    w.string("record", list.first.map(describe) ?? "-")
                case .checkpoint(let c):
                    w.string("ride_id", c.rideID.description)
                    w.int("records", Int64(c.recordCount)); w.int("events", Int64(c.eventCount))
                    w.int("samples", Int64(c.sampleCount)); w.int("series", Int64(c.seriesCount)); w.int("laps", Int64(c.lapCount))
                case .rideFileDurable(let id): w.string("ride_id", id.description)
                }
                w.endObject()
            }
            w.endArray()
            w.beginArray("rides")
            for r in i.rides {
                w.beginObject()
                w.string("ride_id", r.rideID.description)
                w.int("records", Int64(r.records)); w.int("samples", Int64(r.samples)); w.int("series", Int64(r.series))
                w.int("events", Int64(r.events.count))
                w.bool("started", r.started); w.bool("finished", r.finished != nil); w.bool("saved", r.finished)
                w.bool("file_durable", r.fileDurable)
                w.int("checkpoints", Int64(r.checkpoints)); w.int("checkpoint_mismatches", Int64(r.checkpointMismatches))
                w.endObject()
            }
            w.endArray()
            if let b = i.rebuild {
                w.beginObject("rebuild")
                w.string("ride_id", b.rideID.description)
                w.string("state", b.state.description)
                w.int("timer_time_ms", b.timerTimeMs); w.int("elapsed_time_ms", b.elapsedTimeMs)
                w.number("distance_m", b.distanceM); w.int("laps", Int64(b.laps)); w.int("events", Int64(b.events))
                w.number("average_power_w", b.averagePowerW); w.number("average_heart_rate_bpm", b.averageHeartRate)
                w.int("gaps_ms", b.gapsMs); w.int("last_instant_ms", b.lastInstant?.milliseconds)
                w.endObject()
            } else {
                w.raw("rebuild", "null")
            }
            w.beginArray("repairs")
            for r in i.scan.repairs { w.string(nil, r) }
            w.endArray()
            w.beginArray("kept_aside")
            for f in asideFiles { w.string(nil, f) }
            w.endArray()
            w.int("orphan_records", Int64(i.orphans))
            w.endObject()
            return w.text
        }
    }
}
