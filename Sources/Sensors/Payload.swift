/// A raw sensor payload (an ANT+ data page or a GATT characteristic value), held inline so that
/// parsing a frame allocates nothing.
public struct Payload: Sendable, Hashable {
    /// The longest payload the protocol carries. The longest value a supported profile defines is
    /// a Cycling Power Measurement with every optional field (34 bytes); a Heart Rate Measurement
    /// may carry RR intervals up to the ATT MTU, which bridges cut to this limit.
    public static let bytesMax = 64

    @usableFromInline var storage = InlineArray<64, UInt8>(repeating: 0)
    public private(set) var count = 0

    public init() {}

    /// Copies `bytes` (at most `bytesMax`; returns nil when longer).
    public init?<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        guard bytes.count <= Self.bytesMax else { return nil }
        var i = 0
        for b in bytes { storage[i] = b; i += 1 }
        count = i
    }

    /// Appends one byte; returns false (and changes nothing) when full.
    @discardableResult
    public mutating func append(_ b: UInt8) -> Bool {
        guard count < Self.bytesMax else { return false }
        storage[count] = b
        count += 1
        return true
    }

    public mutating func removeAll() { count = 0 }

    @inlinable public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < count, "payload index out of range")
        return storage[i]
    }

    public var bytes: [UInt8] { (0..<count).map { storage[$0] } }

    public static func == (a: Payload, b: Payload) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a.storage[i] != b.storage[i] { return false }
        return true
    }

    public func hash(into h: inout Hasher) {
        h.combine(count)
        for i in 0..<count { h.combine(storage[i]) }
    }

    /// Lower-case hex, for logs.
    public var hex: String {
        let digits: [Character] = Array("0123456789abcdef")
        var s = ""
        for i in 0..<count { s.append(digits[Int(storage[i] >> 4)]); s.append(digits[Int(storage[i] & 15)]) }
        return s
    }

    /// Parses hex digits (spaces, ':' and '-' ignored); nil on a bad digit, an odd digit count or
    /// more than `bytesMax` bytes.
    public init?(hex: String) {
        var high: UInt8? = nil
        for c in hex.utf8 {
            if c == 32 || c == 9 || c == 58 || c == 45 { continue }
            let v: UInt8
            switch c {
            case 48...57: v = c - 48
            case 65...70: v = c - 55
            case 97...102: v = c - 87
            default: return nil
            }
            if let h = high {
                guard append(h << 4 | v) else { return nil }
                high = nil
            } else {
                high = v
            }
        }
        if high != nil { return nil }
    }
}

/// Little-endian field reads with bounds checks: a read past the end returns nil, never traps.
@usableFromInline
struct PayloadReader {
    @usableFromInline let payload: Payload
    @usableFromInline var offset: Int

    @inlinable init(_ payload: Payload, offset: Int = 0) { self.payload = payload; self.offset = offset }

    @inlinable var remaining: Int { payload.count - offset }

    @inlinable mutating func u8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { offset += 1 }
        return payload[offset]
    }

    @inlinable mutating func u16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(payload[offset]) | UInt16(payload[offset + 1]) << 8
    }

    @inlinable mutating func s16() -> Int16? { u16().map { Int16(bitPattern: $0) } }

    @inlinable mutating func u24() -> UInt32? {
        guard remaining >= 3 else { return nil }
        defer { offset += 3 }
        return UInt32(payload[offset]) | UInt32(payload[offset + 1]) << 8 | UInt32(payload[offset + 2]) << 16
    }

    @inlinable mutating func u32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(payload[offset]) | UInt32(payload[offset + 1]) << 8
            | UInt32(payload[offset + 2]) << 16 | UInt32(payload[offset + 3]) << 24
    }
}

extension Payload {
    @inlinable func u16(at i: Int) -> UInt16 { UInt16(self[i]) | UInt16(self[i + 1]) << 8 }
    @inlinable func u24(at i: Int) -> UInt32 { UInt32(self[i]) | UInt32(self[i + 1]) << 8 | UInt32(self[i + 2]) << 16 }
    @inlinable func u32(at i: Int) -> UInt32 { UInt32(u16(at: i)) | UInt32(u16(at: i + 2)) << 16 }
}
