/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seeded generator whose whole state is one
/// word, so a value type can carry it and replay exactly from its seed. The one copy the app core
/// (ride IDs), the simulator's synthetic ride, the benchmarks and the tests use.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    public var state: UInt64

    @inlinable public init(seed: UInt64) { state = seed }

    @inlinable public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
