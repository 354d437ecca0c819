import AppCore
import Control
import Foundation
import RideModel
import Testing

/// Drives a real app core and feeds its effects to a `ControlStream` the way the runtime does
/// (`DeviceRuntime.drain` → observers; the 1 Hz timer → `tick`).
final class StreamHarness {
    var core = AppCore(randomSeed: 11)
    let stream = ControlStream(streamID: 0xB1C0_FFEE)
    var lines: [String] = []
    var nowMs: Int64 = 1_000

    init() { stream.sink = { [unowned self] in self.lines.append($0) } }

    var now: MonotonicInstant { MonotonicInstant(milliseconds: nowMs) }

    func input(_ i: AppInput) {
        core.handle(i)
        while let e = core.drainEffect() { stream.observe(e, core: core, at: i.instant) }
    }

    func command(_ c: ControlCommand) { input(.command(c, at: now)) }

    /// `seconds` run-loop seconds: the core's tick, then the stream's 1 Hz line.
    func run(seconds: Int) {
        for _ in 0..<seconds {
            nowMs += 1_000
            input(.tick(now))
            stream.tick(core: core, at: now)
        }
    }

    static func json(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    var parsed: [[String: Any]] { lines.map(Self.json) }
}

struct ControlStreamTests {
    @Test func linesAreNumberedJSONAndFollowTheRide() throws {
        let h = StreamHarness()
        h.command(.start)
        h.run(seconds: 5)
        h.command(.pause)
        h.run(seconds: 2)
        h.command(.resume)
        h.command(.lap)
        h.command(.marker(.water, value: 250))
        h.run(seconds: 2)
        h.command(.end)
        h.run(seconds: 1)

        let parsed = h.parsed
        #expect(parsed.count == h.lines.count)
        for (i, p) in parsed.enumerated() {
            #expect(p["seq"] as? Int == i + 1, "line \(i): \(h.lines[i])")
            #expect(p["type"] is String, "line \(i) has no type: \(h.lines[i])")
        }
        #expect(UInt64(parsed.count) == h.stream.seq)
        #expect(parsed.filter { $0["type"] as? String == "metrics" }.count == 10)

        let states = parsed.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        // prepared (countdown) → running → paused → running → stopped/ended, each once in order.
        var collapsed: [String] = []
        for s in states where collapsed.last != s { collapsed.append(s) }
        #expect(collapsed.starts(with: ["prepared", "running", "paused", "running"]), "\(collapsed)")
        #expect(collapsed.contains("stopped") || collapsed.contains("ended") || collapsed.last == "idle", "\(collapsed)")

        let marker = try #require(parsed.first { $0["type"] as? String == "marker" })
        #expect(marker["kind"] as? String == "water")
        #expect(marker["value"] as? Int == 250)
        #expect(marker["unit"] as? String == "ml")
        #expect(parsed.contains { $0["type"] as? String == "lap" && $0["lap"] as? Int == 2 })
        #expect(parsed.contains { $0["type"] as? String == "ride_finished" && $0["saved"] as? Bool == true })

        // The metrics line carries the live view; after 5 s of countdown+ride the timer moved.
        let running = try #require(parsed.last { $0["type"] as? String == "metrics" && $0["state"] as? String == "running" })
        #expect((running["timer_ms"] as? Int ?? 0) > 0)
        #expect(running["metrics"] is [String: Any])
        #expect((running["sensors"] as? [String: Any])?.count == 4)
        let z = try #require(running["zones"] as? [String: Any])
        #expect(z["heart_rate"] is [String: Any] && z["power"] is [String: Any])
    }

    @Test func refusalsAreStreamedAsReplies() throws {
        let h = StreamHarness()
        h.command(.start)
        h.run(seconds: 4)
        h.command(.start)
        let reply = try #require(h.parsed.last { $0["type"] as? String == "reply" })
        #expect(reply["ok"] as? Bool == false)
        #expect((reply["message"] as? String ?? "").lowercased().contains("progress"), "\(reply)")
    }

    @Test func freshSubscriberGetsSnapshotOfTheCurrentView() throws {
        let h = StreamHarness()
        h.command(.start)
        h.run(seconds: 6)
        let sub = h.stream.subscribe(from: nil, streamID: nil, core: h.core, at: h.now)
        #expect(sub.reply.hasPrefix("ok subscribed stream=00000000b1c0ffee latest=\(h.stream.seq) missed=unknown"), "\(sub.reply)")
        #expect(sub.lines.count == 1)
        let snap = StreamHarness.json(sub.lines[0])
        #expect(snap["type"] as? String == "snapshot")
        #expect(snap["seq"] as? Int == Int(h.stream.seq))
        #expect(snap["state"] as? String == "running")
        #expect(snap["timer_ms"] as? Int == Int(h.core.screen.timerMs))
        #expect(snap["missed"] is NSNull)
        #expect(snap["stream"] as? String == h.stream.streamID)
    }

    @Test func reconnectingSubscriberGetsMissedCountAndReplay() throws {
        let h = StreamHarness()
        h.command(.start)
        h.run(seconds: 4)
        let last = h.stream.seq
        h.command(.pause)
        h.run(seconds: 3)
        h.command(.marker(.note, value: 7))
        h.command(.resume)
        let sub = h.stream.subscribe(from: last, streamID: h.stream.streamID, core: h.core, at: h.now)
        #expect(sub.missed == h.stream.seq - last)
        #expect(sub.complete)
        let expected = h.lines.filter { let p = StreamHarness.json($0); return (p["seq"] as! Int) > Int(last) && p["type"] as? String != "metrics" }
        let replayed = Array(sub.lines.dropFirst())
        #expect(replayed.count == expected.count && sub.replayed == expected.count)
        for (r, e) in zip(replayed, expected) {
            let rp = StreamHarness.json(r)
            #expect(rp["replay"] as? Bool == true)
            #expect(rp["seq"] as? Int == StreamHarness.json(e)["seq"] as? Int)
            #expect(r.replacingOccurrences(of: "\"replay\":true,", with: "") == e)
        }
        let snap = StreamHarness.json(sub.lines[0])
        #expect(snap["state"] as? String == "running")
        #expect(snap["missed"] as? Int == Int(h.stream.seq - last))

        // Up to date: nothing missed, nothing replayed.
        let again = h.stream.subscribe(from: h.stream.seq, streamID: nil, core: h.core, at: h.now)
        #expect(again.missed == 0 && again.replayed == 0 && again.lines.count == 1 && again.complete)
        // Another stream (the device restarted) or a sequence number from the future: unknown.
        let other = h.stream.subscribe(from: last, streamID: "0000000000000001", core: h.core, at: h.now)
        #expect(other.missed == nil && other.replayed == 0 && !other.complete)
        let future = h.stream.subscribe(from: h.stream.seq + 5, streamID: nil, core: h.core, at: h.now)
        #expect(future.missed == nil && future.replayed == 0)
    }

    /// Random rides (seeded): whatever `from` a client passes, the replay is exactly the
    /// discrete events after it that are among the last `replayEventsMax`, in order, and
    /// `complete` says whether that is all of them.
    @Test func replayRingIsBoundedAndExact() throws {
        for seed in UInt64(1)...6 {
            var rng = SplitMix64(seed: seed)
            let h = StreamHarness()
            h.command(.start)
            h.run(seconds: 4)
            let steps = Int.random(in: 50...400, using: &rng)
            for _ in 0..<steps {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: h.command(.pause)
                case 1: h.command(.resume)
                case 2: h.command(.lap)
                case 3: h.command(.marker(.water, value: Int64.random(in: 0...1000, using: &rng)))
                default: h.run(seconds: Int.random(in: 1...3, using: &rng))
                }
            }
            let events = h.lines.filter { !$0.contains("\"type\":\"metrics\"") }
            let eventSeqs = events.map { StreamHarness.json($0)["seq"] as! Int }
            for _ in 0..<20 {
                let from = UInt64.random(in: 0...h.stream.seq, using: &rng)
                let sub = h.stream.subscribe(from: from, streamID: nil, core: h.core, at: h.now)
                let kept = Array(eventSeqs.suffix(ControlStream.Limits.replayEventsMax))
                let want = kept.filter { $0 > Int(from) }
                let got = sub.lines.dropFirst().map { StreamHarness.json($0)["seq"] as! Int }
                #expect(got == want, "seed \(seed) from \(from)")
                #expect(sub.replayed <= ControlStream.Limits.replayEventsMax)
                let allMissedEvents = eventSeqs.filter { $0 > Int(from) }
                #expect(sub.complete == (allMissedEvents == want), "seed \(seed) from \(from)")
                #expect(sub.missed == h.stream.seq - from)
            }
        }
    }

    @Test func streamRequestsParse() {
        typealias R = ControlProtocol.StreamRequest
        func parse(_ s: String) -> Result<R, ControlProtocol.StreamRequestError>? { ControlProtocol.parseStreamRequest(s) }
        #expect(parse("subscribe") == .success(.subscribe(fromSeq: nil, streamID: nil)))
        #expect(parse("SUBSCRIBE 42") == .success(.subscribe(fromSeq: 42, streamID: nil)))
        #expect(parse("subscribe 42 00000000B1C0FFEE") == .success(.subscribe(fromSeq: 42, streamID: "00000000b1c0ffee")))
        #expect(parse("subscribe -1") == .failure(.badSequence("-1")))
        #expect(parse("subscribe 1 xyz") == .failure(.badStreamID("xyz")))
        #expect(parse("subscribe 1 00000000b1c0ffee extra") == .failure(.unexpectedArgument(command: "subscribe", argument: "extra")))
        #expect(parse("pairing-code 123456") == .success(.pairingCode(123_456)))
        #expect(parse("pairing-code 012345") == .success(.pairingCode(12_345)), "drawn with its leading zero")
        #expect(parse("pairing-code clear") == .success(.pairingCode(nil)))
        // One rule, six digits: a shorter code or letters would be drawn as a code the companion
        // never issued (the screen pads to six digits), so they are refused here.
        #expect(parse("pairing-code ab12") == .failure(.badPairingCode("ab12")))
        #expect(parse("pairing-code 1234") == .failure(.badPairingCode("1234")))
        #expect(parse("pairing-code 12345a") == .failure(.badPairingCode("12345a")))
        #expect(parse("pairing-code") == .failure(.missingPairingCode))
        #expect(parse("pairing-code 12") == .failure(.badPairingCode("12")))
        #expect(parse("pairing-code 123456789") == .failure(.badPairingCode("123456789")))
        #expect(parse("pairing-code 12-34") == .failure(.badPairingCode("12-34")))
        #expect(parse("pause") == nil)
        #expect(parse("") == nil)
        // Every error message says what to send instead.
        if case .failure(let e)? = parse("subscribe x") { #expect(ControlProtocol.format(e).hasPrefix("error ")) }
    }

    @Test func pairingCodeRefusalSaysSixDigits() {
        guard case .failure(let e)? = ControlProtocol.parseStreamRequest("pairing-code ABCD1234") else {
            Issue.record("a code of letters must be refused")
            return
        }
        #expect(ControlProtocol.format(e).contains("six digits"))
    }
}
