/// Why bytes could not be decoded. Decoding never traps on bad input.
public enum DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    case truncated(needed: Int, available: Int)
    case badVarint
    case badValue(String)
    case tooLong(String, length: Int, max: Int)

    public var description: String {
        switch self {
        case .truncated(let n, let a): "record ends early (\(n) bytes needed, \(a) left)"
        case .badVarint: "malformed variable-length integer"
        case .badValue(let what): "invalid value: \(what)"
        case .tooLong(let what, let l, let m): "\(what) is \(l) bytes; at most \(m) allowed"
        }
    }
}

/// Appends little-endian integers, LEB128 varints and length-prefixed strings to a byte array.
/// The array is reused between records (`removeAll(keepingCapacity:)`), so steady-state encoding
/// does not allocate.
public struct ByteWriter: Sendable {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always) public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    public mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    public mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    public mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }

    /// Unsigned LEB128: 7 bits a byte, high bit = more.
    public mutating func varint(_ v: UInt64) {
        var x = v
        while x >= 0x80 { bytes.append(UInt8(x & 0x7F) | 0x80); x >>= 7 }
        bytes.append(UInt8(x))
    }

    /// Signed values as zigzag LEB128 (small magnitudes stay short).
    public mutating func svarint(_ v: Int64) { varint(zigzag(v)) }

    public mutating func double(_ v: Double) { u64(v.bitPattern) }

    /// A UTF-8 string with a varint length, refused (truncated to nothing) above `max` bytes.
    public mutating func string(_ s: String, max: Int = JournalFormat.stringBytesMax) {
        let utf8 = Array(s.utf8.prefix(max))
        varint(UInt64(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    public mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    /// Overwrites 4 bytes at `offset` (little-endian).
    public mutating func patchU32(_ v: UInt32, at offset: Int) {
        for i in 0..<4 { bytes[offset + i] = UInt8((v >> (8 * UInt32(i))) & 0xFF) }
    }
    public mutating func patchU16(_ v: UInt16, at offset: Int) {
        bytes[offset] = UInt8(v & 0xFF); bytes[offset + 1] = UInt8(v >> 8)
    }
}

@inline(__always) public func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }
@inline(__always) public func unzigzag(_ v: UInt64) -> Int64 { Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1) }

/// Reads what `ByteWriter` wrote, bounds-checked: every read throws on short input.
public struct ByteReader {
    public let bytes: UnsafeRawBufferPointer
    public private(set) var offset: Int
    public let end: Int

    public init(_ bytes: UnsafeRawBufferPointer, from: Int = 0, to: Int? = nil) {
        self.bytes = bytes
        offset = from
        end = to ?? bytes.count
    }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }

    @inline(__always) mutating func need(_ n: Int) throws(DecodeError) {
        if n > end - offset { throw .truncated(needed: n, available: end - offset) }
    }

    public mutating func u8() throws(DecodeError) -> UInt8 {
        try need(1); defer { offset += 1 }; return bytes[offset]
    }
    public mutating func u16() throws(DecodeError) -> UInt16 {
        try need(2); defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
    public mutating func u32() throws(DecodeError) -> UInt32 {
        try need(4); defer { offset += 4 }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        return v
    }
    public mutating func u64() throws(DecodeError) -> UInt64 {
        try need(8); defer { offset += 8 }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return v
    }
    public mutating func bool() throws(DecodeError) -> Bool {
        let b = try u8()
        guard b <= 1 else { throw .badValue("boolean byte \(b)") }
        return b == 1
    }
    public mutating func varint() throws(DecodeError) -> UInt64 {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try u8()
            if shift == 63 && b > 1 { throw .badVarint }
            v |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return v }
            shift += 7
            if shift > 63 { throw .badVarint }
        }
    }
    public mutating func svarint() throws(DecodeError) -> Int64 { unzigzag(try varint()) }
    public mutating func double() throws(DecodeError) -> Double { Double(bitPattern: try u64()) }
    public mutating func string(max: Int = JournalFormat.stringBytesMax) throws(DecodeError) -> String {
        let n = try varint()
        guard n <= UInt64(max) else { throw .tooLong("string", length: Int(clamping: n), max: max) }
        try need(Int(n))
        let s = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(n))]), as: UTF8.self)
        offset += Int(n)
        return s
    }
    /// A count bounded by `max` (so a corrupt count cannot make a huge allocation).
    public mutating func count(max: Int, _ what: String) throws(DecodeError) -> Int {
        let n = try varint()
        guard n <= UInt64(max) else { throw .tooLong(what, length: Int(clamping: n), max: max) }
        return Int(n)
    }
}
