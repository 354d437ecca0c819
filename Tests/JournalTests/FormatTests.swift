import TestSupport
import Journal
import RideModel
import Testing

struct FormatTests {
    @Test func crc32cMatchesTheStandardCheckValues() {
        // RFC 3720 / iSCSI check value of "123456789", and 32 zero bytes (RFC 3720 B.4).
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        // Incremental equals one-shot.
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let split = data.withUnsafeBytes { b in
            CRC32C.update(CRC32C.update(0, UnsafeRawBufferPointer(rebasing: b[0..<333])), UnsafeRawBufferPointer(rebasing: b[333...]))
        }
        #expect(split == CRC32C.checksum(data))
    }

    static func randomValue(_ rng: inout SeededRandom) -> Double {
        switch rng.next() % 8 {
        case 0: return Double(Int64(rng.next() % 2000)) - 500
        case 1: return Double(Int64(rng.next() % 100_000)) / 10
        case 2: return Double(Int64(rng.next() % 100_000)) / 100
        case 3: return Double(Int64(rng.next() % 1_000_000)) / 1000
        case 4: return Double(Int64(rng.next() % 2000)) / 1024
        case 5: return Double(bitPattern: rng.next()) // anything, NaN and infinities included
        case 6: return -0.0
        default: return Double(rng.next() % 1_000_000) / 7.0
        }
    }

    static func randomRecord(_ rng: inout SeededRandom, at t: Int64) -> RideRecord {
        let q = Quantity(rawValue: UInt8(rng.next() % UInt64(Quantity.countMax)))!
        let s = Sample(q, randomValue(&rng), at: ms(t), origin: rng.next() % 2 == 0 ? .measured : .generated)
        switch rng.next() % 11 {
        case 10: return .elapsed(ms(t))
        case 0:
            var settings = RideSettings(ftpW: rng.next() % 2 == 0 ? nil : 251.5)
            settings.powerZones = try? ZoneConfiguration(quantity: .power, boundaries: [100, 150, 200.5], names: ["a", "b", "c", "ü"])
            settings.heartRateZones = rng.next() % 3 == 0 ? nil : .defaultHeartRate
            settings.intervalMs = 30_000
            return .header(RideHeader(rideID: RideID(random: rng.next(), rng.next()),
                                      anchor: WallClockAnchor(monotonic: ms(t), wall: WallClockTime(unixMs: Int64(rng.next() % 1 << 42), trusted: rng.next() % 2 == 0)),
                                      settings: settings, activity: "cycling_road"))
        case 1:
            let kind = RideEvent.Kind(rawValue: UInt8(rng.next() % 7))!
            return .event(RideEvent(kind, at: ms(t), trigger: Trigger(rawValue: UInt8(rng.next() % 6))!,
                                    markerKind: RideEvent.MarkerKind(rawValue: UInt8(rng.next() % 5))!, value: Int64(rng.next() % 100_000) - 5))
        case 2: return .wallClock(WallClockAnchor(monotonic: ms(t), wall: WallClockTime(unixMs: -Int64(rng.next() % 1000), trusted: true)))
        case 3: return .finished(saved: rng.next() % 2 == 0, at: ms(t))
        case 4: return .metadata(key: "sensor.hr", value: "ANT+ \(rng.next() % 65536) «strap»")
        case 5, 6: return .series(s)
        default: return .sample(s)
        }
    }

    /// Random record lists are framed, written to a segment and read back bit for bit.
    @Test func everyRecordTypeRoundTrips() throws {
        for seed: UInt64 in 1...40 {
            var rng = SeededRandom(seed: seed)
            var records: [RideRecord] = []
            var t = Int64(rng.next() % 1_000_000) - 500_000
            for _ in 0..<300 {
                t += Int64(rng.next() % 3) * Int64(rng.next() % 2000)
                if rng.next() % 5 == 0 { t -= 300 } // out-of-order instants must survive too
                records.append(Self.randomRecord(&rng, at: t))
            }
            let flash = SimulatedFlash(segmentBytes: 64 * 1024)
            let writer = JournalWriter(storage: flash, after: JournalScan.scan(flash, repair: true))
            for r in records { writer.append(r, at: ms(t)) }
            #expect(writer.commit(at: ms(t)))
            let scan = JournalScan.scan(flash, repair: false)
            var decoded: [RideRecord] = []
            scan.forEachRecord(in: 0..<scan.records.count) { decoded.append($0) }
            #expect(decoded.count == records.count, "seed \(seed)")
            for (a, b) in zip(decoded, records) where !Self.sameBits(a, b) {
                Issue.record("seed \(seed): \(describe(a)) != \(describe(b))")
                break
            }
            #expect(scan.truncation == nil, "seed \(seed)")
        }
    }

    /// The elapsed record (type 9) came with format version 2: it decodes there, and a version 1
    /// segment that holds one is damaged, not read as something else.
    @Test func theElapsedRecordBelongsToVersionTwo() throws {
        var enc = RecordEncoder()
        let (type, payload) = enc.encode(.elapsed(ms(-1_234_567)))
        #expect(type == .elapsed && type.rawValue == 9)
        let n = payload.count
        let back = try payload.withUnsafeBytes { b in try RecordDecoder.decode(type: 9, version: 2, b, from: 0, length: n) }
        #expect(back == .records([.elapsed(ms(-1_234_567))]))
        #expect(throws: DecodeError.self) {
            try payload.withUnsafeBytes { b in _ = try RecordDecoder.decode(type: 9, version: 1, b, from: 0, length: n) }
        }
        #expect(JournalFormat.version >= 2 && JournalFormat.versionsReadable.contains(1))
    }

    /// The timeline record (type 10) came with format version 3.
    @Test func theTimelineRecordBelongsToVersionThree() throws {
        var enc = RecordEncoder()
        let t = RideTimeline(boot: BootIdentity(high: 0x6F1C_0000_0000_4ABC, low: 0x8000_0000_0000_0042), offsetMs: -123_456_789)
        let (type, payload) = enc.encode(.timeline(t))
        #expect(type == .timeline && type.rawValue == 10)
        let n = payload.count
        let back = try payload.withUnsafeBytes { b in try RecordDecoder.decode(type: 10, version: 3, b, from: 0, length: n) }
        #expect(back == .records([.timeline(t)]))
        #expect(throws: DecodeError.self) {
            try payload.withUnsafeBytes { b in _ = try RecordDecoder.decode(type: 10, version: 2, b, from: 0, length: n) }
        }
        #expect(BootIdentity("6f1c2a3b-0000-4abc-8000-000000000042\n") == BootIdentity(high: 0x6F1C_2A3B_0000_4ABC, low: 0x8000_0000_0000_0042))
        #expect(BootIdentity("not a boot id") == nil)
        #expect(JournalFormat.version == 3)
    }

    /// Equality that compares sample values bit for bit (NaN == NaN, -0 != +0).
    static func sameBits(_ a: RideRecord, _ b: RideRecord) -> Bool {
        switch (a, b) {
        case (.sample(let x), .sample(let y)), (.series(let x), .series(let y)):
            x.quantity == y.quantity && x.instant == y.instant && x.origin == y.origin && x.value.bitPattern == y.value.bitPattern
        default: a == b
        }
    }

    @Test func oneSecondOfFourQuantitiesIsCompact() {
        var enc = RecordEncoder()
        let t = ms(3_600_000)
        let records: [RideRecord] = [
            .sample(Sample(.power, 231, at: t)), .sample(Sample(.heartRate, 141, at: t)),
            .sample(Sample(.cadence, 88.5, at: t)), .sample(Sample(.speed, 9.123, at: t)),
        ]
        let (type, payload) = enc.encodeGroup(records[...])
        #expect(type == .group)
        // base instant (4) + count (1) + 4 × (tag 1 + value ≤ 3)
        #expect(payload.count <= 21, "payload \(payload.count) bytes")
    }

    @Test func segmentHeaderVersionsAreChecked() {
        let h = SegmentHeader(segmentID: 3, firstSequence: 77, segmentBytes: 65536)
        let bytes = h.encoded()
        #expect(bytes.count == JournalFormat.segmentHeaderBytes)
        #expect(bytes.withUnsafeBytes { SegmentHeader.decode($0) } == .success(h))
        var newer = SegmentHeader(segmentID: 3, firstSequence: 77, segmentBytes: 65536)
        newer.version = JournalFormat.version + 1
        #expect(newer.encoded().withUnsafeBytes { SegmentHeader.decode($0) } == .failure(.newerVersion(JournalFormat.version + 1)))
        var flipped = bytes
        flipped[9] ^= 0x10
        #expect(flipped.withUnsafeBytes { SegmentHeader.decode($0) } == .failure(.badChecksum))
    }

    @Test func truncatedAndGarbagePayloadsThrowInsteadOfCrashing() {
        var rng = SeededRandom(seed: 99)
        for _ in 0..<5_000 {
            let n = Int(rng.next() % 40)
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let type = UInt8(rng.next() % 10)
            _ = bytes.withUnsafeBytes { b in try? RecordDecoder.decode(type: type, version: 1, b, from: 0, length: n) }
        }
        // A valid record cut short never decodes.
        var enc = RecordEncoder()
        let (_, payload) = enc.encode(.event(RideEvent(.lap, at: ms(123_456), value: 9)))
        for cut in 0..<payload.count {
            let r: Bool = payload.withUnsafeBytes { b in (try? RecordDecoder.decode(type: 2, version: 1, b, from: 0, length: cut)) != nil }
            #expect(!r, "decoded a record cut at \(cut)")
        }
    }
}
