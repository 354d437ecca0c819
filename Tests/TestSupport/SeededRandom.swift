import RideModel

/// The seeded generator every test target uses (RideModel's `SplitMix64`), so randomized and
/// property tests repeat exactly from their seed; failing tests print it.
public typealias SeededRandom = SplitMix64

extension SplitMix64 {
    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    public mutating func int(_ r: ClosedRange<Int>) -> Int { Int.random(in: r, using: &self) }
    public mutating func double(_ r: ClosedRange<Double>) -> Double { Double.random(in: r, using: &self) }
}

/// The name the sensor tests use.
public typealias SeededGenerator = SeededRandom
