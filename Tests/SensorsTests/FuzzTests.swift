import TestSupport
import Testing
import Glibc
import RideModel
@testable import Sensors

/// A long seeded randomized test over frame parsing, serial deframing, every decoder and the data
/// source: never a crash, never a NaN, infinite or negative rate. Seeds from the corpus under
/// Corpus/ are mutated (bit flips, truncation, extension, splicing). Set SENSORS_FUZZ_SEED to
/// replay a seed, SENSORS_FUZZ_ITERATIONS for a longer run.
@Suite struct FuzzTests {
    static var corpusDir: String {
        let file = #filePath
        let dir = file[..<file.lastIndex(of: "/")!]
        return String(dir) + "/Corpus/"
    }

    static func readLines(_ name: String) -> [String] {
        guard let f = fopen(corpusDir + name, "r") else { return [] }
        defer { fclose(f) }
        var lines: [String] = []
        var buf = [CChar](repeating: 0, count: 1024)
        while fgets(&buf, Int32(buf.count), f) != nil {
            let line = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.trimmingSpacesAndNewlines
            if !line.isEmpty && !line.hasPrefix("#") { lines.append(line) }
        }
        return lines
    }

    static func env(_ name: String) -> UInt64? { getenv(name).flatMap { UInt64(String(cString: $0)) } }

    /// (profile, payload) seeds.
    static func payloadCorpus() -> [(Profile, Payload)] {
        readLines("payloads.txt").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let code = parts[0].hasPrefix("0x") ? UInt16(parts[0].dropFirst(2), radix: 16) : UInt16(parts[0])
            let transport: Transport = parts[0].hasPrefix("0x") ? .ble : .ant
            guard let code, let profile = Profile(transport: transport, code: code) else { return nil }
            return Payload(hex: String(parts[1])).map { (profile, $0) } ?? (profile, Payload())
        }
    }

    static func mutate(_ p: Payload, _ rng: inout SeededGenerator) -> Payload {
        var bytes = p.bytes
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: if !bytes.isEmpty { let i = Int.random(in: 0..<bytes.count, using: &rng); bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng) }
        case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
        case 2: for _ in 0..<Int.random(in: 1...8, using: &rng) where bytes.count < Payload.bytesMax { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
        case 3: if !bytes.isEmpty { bytes[Int.random(in: 0..<bytes.count, using: &rng)] = [0, 0xFF, 0x7F, 0x80][Int.random(in: 0..<4, using: &rng)] }
        case 4: bytes = (0..<Int.random(in: 0...Payload.bytesMax, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        default: break
        }
        return Payload(bytes)!
    }

    static func checkDerived(_ d: DerivedValues, seed: UInt64, iteration: Int) {
        for q in Quantity.allCases {
            if let v = d.value(q) {
                #expect(v.isFinite && v >= 0, "seed \(seed) iteration \(iteration): \(q) = \(v)")
            }
        }
        if let a = d.averagePowerW { #expect(a.isFinite && a >= 0, "seed \(seed): avg power \(a)") }
        for i in 0..<d.rrCount { #expect(d.rrIntervalS(i) > 0, "seed \(seed): rr") }
        if let r = d.radar {
            #expect(r.count <= RadarPicture.targetsMax)
            for i in 0..<r.count {
                #expect(r[i].rangeM.isFinite && r[i].rangeM >= 0 && (i == 0 || r[i - 1].rangeM <= r[i].rangeM), "seed \(seed): radar ranges")
                if let s = r[i].closingSpeedMps { #expect(s.isFinite, "seed \(seed): closing speed") }
            }
        }
    }

    @Test func decodersNeverCrashOrProduceBadRates() {
        let seed = Self.env("SENSORS_FUZZ_SEED") ?? 0x5EED_0001
        let iterations = Int(Self.env("SENSORS_FUZZ_ITERATIONS") ?? 200_000)
        var rng = SeededGenerator(seed: seed)
        let corpus = Self.payloadCorpus()
        #expect(corpus.count >= 15, "corpus missing under \(Self.corpusDir)")
        var decoders = Profile.allCases.map { SensorDecoder(profile: $0, wheelCircumferenceMm: Int.random(in: 500...3000, using: &rng)) }
        var nowMs: Int64 = 0
        var errors = 0
        for i in 0..<iterations {
            nowMs += [0, 1, 250, 500, 1000, 5000, 70_000][Int.random(in: 0..<7, using: &rng)]
            let (profile, seedPayload) = corpus[Int.random(in: 0..<corpus.count, using: &rng)]
            let p = Self.mutate(seedPayload, &rng)
            let k = Int(profile.rawValue)
            do {
                let d = try decoders[k].decode(p, at: ms(nowMs))
                Self.checkDerived(d, seed: seed, iteration: i)
            } catch {
                errors += 1
                #expect(!error.description.isEmpty)
            }
            if Int.random(in: 0..<1000, using: &rng) == 0 { decoders[k].reset() }
        }
        #expect(errors > 0 && errors < iterations, "seed \(seed): mutations should give both good and bad payloads")
    }

    /// Valid payloads with random counters: rates are always finite, non-negative and within the
    /// spike limits.
    @Test func randomValidCountersStayWithinLimits() {
        let seed = Self.env("SENSORS_FUZZ_SEED") ?? 0x5EED_0002
        var rng = SeededGenerator(seed: seed)
        var d = SensorDecoder(profile: .bleSpeedCadence)
        var nowMs: Int64 = 0
        for i in 0..<50_000 {
            nowMs += Int64.random(in: 0...2000, using: &rng)
            var w = LE()
            w.u8(3)
            w.u32(UInt32.random(in: 0...UInt32.max, using: &rng)); w.u16(UInt16.random(in: 0...UInt16.max, using: &rng))
            w.u16(UInt16.random(in: 0...UInt16.max, using: &rng)); w.u16(UInt16.random(in: 0...UInt16.max, using: &rng))
            let v = try! d.decode(payload(w.bytes), at: ms(nowMs))
            Self.checkDerived(v, seed: seed, iteration: i)
            if let c = v.cadenceRpm { #expect(c <= 250.0001, "seed \(seed): cadence \(c)") }
            if let s = v.speedMps { #expect(s <= 30 * d.wheelCircumferenceM + 1e-9, "seed \(seed): speed \(s)") }
        }
    }

    @Test func framesAndSerialStreamNeverCrash() {
        let seed = Self.env("SENSORS_FUZZ_SEED") ?? 0x5EED_0003
        var rng = SeededGenerator(seed: seed)
        let frames = Self.readLines("frames.txt").compactMap { Payload(hex: $0)?.bytes }
        #expect(frames.count >= 5)
        let paired = SourceIdentity.ant(deviceNumber: 0x1234, deviceType: 120, transmissionType: 1)
        var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(paired),
            PairedSensor(.ble(BLEAddress("C0:FF:EE:00:11:22")!), provides: .all)]))
        var deframer = SerialDeframer()
        var good = 0
        var nowMs: Int64 = 0
        for i in 0..<100_000 {
            nowMs += Int64.random(in: 0...300, using: &rng)
            var bytes = frames[Int.random(in: 0..<frames.count, using: &rng)]
            for _ in 0..<Int.random(in: 0...3, using: &rng) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Bool.random(using: &rng) { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng))) }
            let handle: (SensorEvent) -> Void = { o in
                if case .sample(let s) = o { #expect(s.value.isFinite && s.value >= 0, "seed \(seed) iteration \(i): \(s)") }
            }
            if let f = try? BridgeFrame.parse(bytes) {
                good += 1
                ds.handle(f, at: ms(nowMs), handle)
                #expect((try? BridgeFrame.parse(f.encoded().bytes)) == f, "seed \(seed): re-encode")
            }
            if i % 10 == 0 { ds.tick(at: ms(nowMs), handle) }
            // The serial path sees the same bytes COBS-framed with noise in between.
            var stream = bytes
            if Int.random(in: 0..<3, using: &rng) == 0, let f = try? BridgeFrame.parse(bytes) {
                stream = SerialFraming.encode(f).bytes
            }
            deframer.feed(stream) { f in ds.handle(f, at: ms(nowMs), handle) }
        }
        #expect(good > 1000, "seed \(seed): too few valid frames survived mutation")
        #expect(deframer.framesOK > 0 && deframer.bad.total > 0)
        #expect(ds.status.bad.total > 0)
    }
}

extension String {
    var trimmingSpacesAndNewlines: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\n" || c == "\r" || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\n" || c == "\r" || c == "\t" { s.removeLast() }
        return String(s)
    }
}
