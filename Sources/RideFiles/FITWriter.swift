/// FIT base types as written on the wire (wire-formats.md §3).
public enum FITBaseType: UInt8, Sendable {
    case enumeration = 0x00
    case sint8 = 0x01
    case uint8 = 0x02
    case string = 0x07
    case uint8z = 0x0A
    case byte = 0x0D
    case sint16 = 0x83
    case uint16 = 0x84
    case sint32 = 0x85
    case uint32 = 0x86
    case float32 = 0x88
    case uint16z = 0x8B
    case uint32z = 0x8C

    public var size: Int {
        switch self {
        case .enumeration, .sint8, .uint8, .string, .uint8z, .byte: 1
        case .sint16, .uint16, .uint16z: 2
        case .sint32, .uint32, .float32, .uint32z: 4
        }
    }
}

/// One field of a definition message: field number, size in bytes (a multiple of the base type
/// size for arrays) and base type.
public struct FITFieldDefinition: Sendable, Hashable {
    public var number: UInt8
    public var sizeBytes: Int
    public var baseType: FITBaseType

    public init(_ number: UInt8, _ baseType: FITBaseType, count: Int = 1) {
        self.number = number
        self.baseType = baseType
        self.sizeBytes = baseType.size * count
    }
}

/// FIT CRC-16 (CRC-16/ARC), nibble-table form.
public enum FITCRC {
    @usableFromInline static let table: [UInt16] = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
                                  0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]

    @inlinable
    public static func update(_ crc: UInt16, _ byte: UInt8) -> UInt16 {
        var c = crc
        var t = table[Int(c & 0xF)]
        c = (c >> 4) & 0x0FFF
        c = c ^ t ^ table[Int(byte & 0xF)]
        t = table[Int(c & 0xF)]
        c = (c >> 4) & 0x0FFF
        c = c ^ t ^ table[Int((byte >> 4) & 0xF)]
        return c
    }

    public static func compute<C: Collection>(_ bytes: C, start: UInt16 = 0) -> UInt16 where C.Element == UInt8 {
        var c = start
        for b in bytes { c = update(c, b) }
        return c
    }
}

/// Writes a FIT file into one growing byte buffer: a 14-byte header (patched by `finish`),
/// definition and data messages with normal headers (never compressed timestamps), and the file
/// CRC. Little-endian throughout. Data messages are checked against their definition's size.
public struct FITWriter: Sendable {
    public static let headerSizeBytes = 14
    /// Profile version written in the header (21.18 as major×100+minor, as most tools expect).
    public static let profileVersion: UInt16 = 2118
    public static let localTypesMax = 16

    public private(set) var bytes: [UInt8]
    private var definedSize: [Int]
    private var messageStart = 0
    private var messageLocal = -1

    public init(capacityBytes: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(max(capacityBytes, 64))
        bytes.append(contentsOf: repeatElement(0, count: Self.headerSizeBytes))
        definedSize = Array(repeating: -1, count: Self.localTypesMax)
    }

    /// Writes a definition message for `local` (0–15).
    public mutating func define(local: Int, global: UInt16, fields: [FITFieldDefinition]) {
        precondition(local >= 0 && local < Self.localTypesMax && fields.count <= 255)
        bytes.append(0x40 | UInt8(local))
        bytes.append(0)      // reserved
        bytes.append(0)      // little-endian
        bytes.append(UInt8(global & 0xFF)); bytes.append(UInt8(global >> 8))
        bytes.append(UInt8(fields.count))
        var size = 0
        for f in fields {
            precondition(f.sizeBytes > 0 && f.sizeBytes <= 255)
            bytes.append(f.number); bytes.append(UInt8(f.sizeBytes)); bytes.append(f.baseType.rawValue)
            size += f.sizeBytes
        }
        definedSize[local] = size
    }

    /// Whether `local` has a definition (a message type written only when needed).
    public func isDefined(local: Int) -> Bool { definedSize[local] >= 0 }

    /// Starts a data message of `local`; write its fields in definition order, then `end()`.
    public mutating func begin(local: Int) {
        precondition(definedSize[local] >= 0, "local message \(local) not defined")
        messageLocal = local
        bytes.append(UInt8(local))
        messageStart = bytes.count
    }

    public mutating func end() {
        precondition(bytes.count - messageStart == definedSize[messageLocal],
                     "message \(messageLocal): wrote \(bytes.count - messageStart) bytes, defined \(definedSize[messageLocal])")
        messageLocal = -1
    }

    // MARK: Field values (invalid when nil or out of range)

    @usableFromInline static func rounded(_ v: Double?, scale: Double, offset: Double, max: Double, min: Double = 0) -> Double? {
        guard let v, v.isFinite else { return nil }
        let r = ((v + offset) * scale).rounded()
        guard r >= min, r <= max else { return nil }
        return r
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u8(_ v: Double?, scale: Double = 1) {
        if let r = Self.rounded(v, scale: scale, offset: 0, max: 254) { bytes.append(UInt8(r)) } else { bytes.append(0xFF) }
    }
    public mutating func s8(_ v: Double?) {
        if let r = Self.rounded(v, scale: 1, offset: 0, max: 126, min: -127) { bytes.append(UInt8(bitPattern: Int8(r))) } else { bytes.append(0x7F) }
    }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    public mutating func u16(_ v: Double?, scale: Double = 1, offset: Double = 0) {
        if let r = Self.rounded(v, scale: scale, offset: offset, max: 65534) { u16(UInt16(r)) } else { u16(0xFFFF) }
    }
    /// uint16z: invalid is 0.
    public mutating func u16z(_ v: UInt16?) { u16(v ?? 0) }
    public mutating func u32(_ v: UInt32) {
        bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8((v >> 8) & 0xFF))
        bytes.append(UInt8((v >> 16) & 0xFF)); bytes.append(UInt8(v >> 24))
    }
    public mutating func u32(_ v: Double?, scale: Double = 1) {
        if let r = Self.rounded(v, scale: scale, offset: 0, max: 4_294_967_294) { u32(UInt32(r)) } else { u32(0xFFFF_FFFF) }
    }
    /// uint32z: invalid is 0.
    public mutating func u32z(_ v: UInt32?) { u32(v ?? 0) }
    public mutating func s32(_ v: Int32?) { u32(UInt32(bitPattern: v ?? Int32.max)) }
    /// A fixed-size, NUL-padded UTF-8 string (truncated on a character boundary).
    public mutating func string(_ s: String, sizeBytes: Int) {
        var n = 0
        for ch in s.unicodeScalars {
            let enc = Array(String(ch).utf8)
            if n + enc.count > sizeBytes - 1 { break }
            bytes.append(contentsOf: enc)
            n += enc.count
        }
        bytes.append(contentsOf: repeatElement(0, count: sizeBytes - n))
    }

    /// Patches the header (data size, header CRC) and appends the file CRC.
    public mutating func finish() -> [UInt8] {
        let dataSize = UInt32(bytes.count - Self.headerSizeBytes)
        bytes[0] = UInt8(Self.headerSizeBytes)
        bytes[1] = 0x20
        bytes[2] = UInt8(Self.profileVersion & 0xFF); bytes[3] = UInt8(Self.profileVersion >> 8)
        bytes[4] = UInt8(dataSize & 0xFF); bytes[5] = UInt8((dataSize >> 8) & 0xFF)
        bytes[6] = UInt8((dataSize >> 16) & 0xFF); bytes[7] = UInt8(dataSize >> 24)
        bytes[8] = 0x2E; bytes[9] = 0x46; bytes[10] = 0x49; bytes[11] = 0x54 // ".FIT"
        let headerCRC = FITCRC.compute(bytes[0..<12])
        bytes[12] = UInt8(headerCRC & 0xFF); bytes[13] = UInt8(headerCRC >> 8)
        let crc = FITCRC.compute(bytes)
        bytes.append(UInt8(crc & 0xFF)); bytes.append(UInt8(crc >> 8))
        return bytes
    }
}
