import Journal
import Testing

/// `JournalScan.isZero` (the word-at-a-time check of a segment's preallocated tail) against the
/// per-byte definition, on every alignment and position of a single stray byte.
struct ZeroTailTests {
    @Test func isZeroAgreesWithAPerByteCheck() {
        var rng = SystemRandomNumberGenerator()
        for size in [0, 1, 7, 8, 9, 63, 64, 65, 130, 1_000] {
            for _ in 0..<40 {
                var bytes = [UInt8](repeating: 0, count: size)
                if size > 0, Bool.random(using: &rng) { bytes[Int.random(in: 0..<size, using: &rng)] = UInt8.random(in: 1...255, using: &rng) }
                let from = size == 0 ? 0 : Int.random(in: 0...size, using: &rng)
                let expected = bytes[from...].allSatisfy { $0 == 0 }
                let got = bytes.withUnsafeBytes { JournalScan.isZero($0, from: from) }
                #expect(got == expected, "size \(size) from \(from): \(bytes.firstIndex { $0 != 0 } ?? -1)")
            }
        }
    }
}
