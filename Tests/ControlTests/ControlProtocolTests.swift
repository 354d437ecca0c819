@testable import AppCore
import Control
import Foundation
import RideModel
import Testing

struct ControlProtocolTests {
    @Test func commandsParse() {
        let cases: [(String, ControlProtocol.Request)] = [
            ("start", .command(.start)), ("PAUSE", .command(.pause)), ("  resume  ", .command(.resume)),
            ("lap", .command(.lap)), ("end", .command(.end)), ("stop", .command(.end)),
            ("discard", .command(.discard)), ("dismiss", .command(.dismiss)), ("page", .command(.nextPage)),
            ("status", .status), ("help", .help),
            ("marker", .command(.marker(.generic, value: 0))),
            ("marker water 500", .command(.marker(.water, value: 500))),
            ("marker\tfood\t250", .command(.marker(.food, value: 250))),
            ("marker 42", .command(.marker(.generic, value: 42))),
            ("marker note", .command(.marker(.note, value: 0))),
        ]
        for (line, expected) in cases {
            #expect(ControlProtocol.parse(line) == .success(expected), "\(line)")
        }
    }

    @Test func badLinesGiveTheirError() {
        let cases: [(String, ControlProtocol.ParseError)] = [
            ("", .empty), ("   ", .empty),
            ("jump", .unknownCommand("jump")),
            ("start now", .unexpectedArgument(command: "start", argument: "now")),
            ("status full", .unexpectedArgument(command: "status", argument: "full")),
            ("marker beer 1", .unknownMarkerKind("beer")),
            ("marker water lots", .badMarkerValue("lots")),
            ("marker water -1", .badMarkerValue("-1")),
            ("marker water 1000001", .badMarkerValue("1000001")),
            ("marker water 1 2", .unexpectedArgument(command: "marker", argument: "2")),
            ("sta\u{1}rt", .notText),
            (String(decoding: [0x73, 0xFF, 0x74], as: UTF8.self), .notText),
        ]
        for (line, expected) in cases {
            #expect(ControlProtocol.parse(line) == .failure(expected), "\(line.debugDescription)")
            let reply = ControlProtocol.format(expected)
            #expect(reply.hasPrefix("error ") && !reply.contains("\n"))
        }
    }

    /// Every command's word parses back to the same command.
    @Test func wordsRoundTrip() {
        let commands: [ControlCommand] = [.start, .pause, .resume, .lap, .end, .discard, .dismiss, .nextPage,
                                          .marker(.water, value: 750), .marker(.segment, value: 0)]
        for c in commands { #expect(ControlProtocol.parse(ControlProtocol.word(c)) == .success(.command(c))) }
    }

    @Test func repliesAreOneLineWithVerdict() {
        let ok = ControlProtocol.format(CommandReply(ok: true, message: "ride paused", state: .paused))
        #expect(ok == "ok paused: ride paused")
        let refused = ControlProtocol.format(CommandReply(ok: false, message: "a ride is\nin progress", state: .running))
        #expect(refused == "error running: a ride is in progress")
        #expect(ControlProtocol.parseReply(ok) == (true, "paused: ride paused"))
        #expect(ControlProtocol.parseReply(refused).ok == false)
        #expect(ControlProtocol.parseReply("").ok == false)
        #expect(ControlProtocol.parseReply("garbage").ok == false)
    }

    /// `status` is valid JSON with every documented field.
    @Test func statusJSON() throws {
        let report = StatusReport(
            state: .running, timerMs: 3_723_000, distanceM: 12_345.6,
            sensors: [SensorStatus(.heartRate, .connected, batteryPercent: 80), SensorStatus(.power, .lost)],
            loopTurns: 99, loopTurnMaxUs: 2_500, loopSlowTurns: [.init(ms: 50, turns: 7), .init(ms: 200, turns: 2)],
            handlers: [.init(name: "bridge \"socket\"", calls: 10, windowMaxUs: 900, windowP99Us: 400, totalUs: 5_000)],
            journal: .init(condition: .low, unsyncedRecords: 3, lastSyncAgoMs: 420, writeErrors: 1),
            uptimeMs: 5_000)
        let line = ControlProtocol.format(report)
        #expect(line.hasPrefix("ok {") && !line.contains("\n"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
        #expect(json["state"] as? String == "running")
        #expect(json["timer_ms"] as? Int == 3_723_000)
        #expect((json["distance_m"] as? Double).map { abs($0 - 12_345.6) < 0.01 } == true)
        let sensors = try #require(json["sensors"] as? [[String: Any]])
        #expect(sensors.count == 2)
        #expect(sensors[0]["battery_percent"] as? Int == 80)
        #expect(sensors[1]["state"] as? String == "lost")
        let loop = try #require(json["loop"] as? [String: Any])
        #expect(loop["turn_max_us"] as? Int == 2_500)
        let slow = try #require(loop["turns_at_least_ms"] as? [String: Any])
        #expect(slow["50"] as? Int == 7 && slow["200"] as? Int == 2 && slow.count == 2)
        let handlers = try #require(loop["handlers"] as? [[String: Any]])
        #expect(handlers[0]["name"] as? String == "bridge \"socket\"")
        #expect(handlers[0]["p99_us"] as? Int == 400)
        #expect(handlers[0]["total_us"] as? Int == 5_000)
        let journal = try #require(json["journal"] as? [String: Any])
        #expect(journal["condition"] as? String == "low")
        #expect(journal["last_sync_ago_ms"] as? Int == 420)
    }
}

/// `phone-time UNIX_MS` (docs/power.md, "Time from the phone").
struct PhoneTimeProtocolTests {
    @Test func phoneTimeParses() {
        #expect(ControlProtocol.parse("phone-time 1790000000123") == .success(.command(.phoneTime(unixMs: 1_790_000_000_123))))
        #expect(ControlProtocol.word(.phoneTime(unixMs: 1_790_000_000_123)) == "phone-time 1790000000123")
        for bad in ["phone-time", "phone-time soon", "phone-time 1790000000123 1", "phone-time 0", "phone-time 99999999999999"] {
            guard case .failure(.badArguments(let c, _)) = ControlProtocol.parse(bad) else {
                Issue.record("\(bad) parsed"); continue
            }
            #expect(c == "phone-time")
        }
    }
}
