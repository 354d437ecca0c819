// Serial framing for the bridge protocol: each frame is followed by its CRC-16/CCITT-FALSE
// (big-endian), COBS-encoded so that it contains no zero byte, and ended by one 0x00. A receiver
// that starts mid-stream or meets line noise drops at most the frame in progress and resumes at
// the next 0x00.

/// CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection): "123456789" → 0x29B1. Python's
/// `binascii.crc_hqx(data, 0xFFFF)` computes the same.
@inlinable
public func crc16CCITT(_ bytes: UnsafeRawBufferPointer, initial: UInt16 = 0xFFFF) -> UInt16 {
    var crc = initial
    for b in bytes {
        crc ^= UInt16(b) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
    }
    return crc
}

public enum SerialFraming {
    /// A frame plus CRC, COBS overhead (one byte per 254) and the delimiter.
    public static let encodedBytesMax = BridgeFrame.bytesMax + 2 + 1 + 1

    /// COBS(frame ‖ crc) ‖ 0x00.
    public static func encode(_ frame: BridgeFrame) -> FrameBytes {
        let raw = frame.encoded()
        var plain = FrameBytes()
        for i in 0..<raw.count { plain.append(raw[i]) }
        let crc = raw.withBytes { crc16CCITT($0) }
        plain.append(UInt8(crc >> 8)); plain.append(UInt8(crc & 0xFF))
        var out = FrameBytes()
        var codeIndex = 0
        out.append(0) // placeholder for the first code byte
        var code: UInt8 = 1
        for i in 0..<plain.count {
            let b = plain[i]
            if b == 0 {
                out.storage[codeIndex] = code
                codeIndex = out.count
                out.append(0)
                code = 1
            } else {
                out.append(b)
                code += 1
                if code == 0xFF {
                    out.storage[codeIndex] = code
                    codeIndex = out.count
                    out.append(0)
                    code = 1
                }
            }
        }
        out.storage[codeIndex] = code
        out.append(0)
        return out
    }
}

/// Splits a serial byte stream into bridge frames. Fixed buffer; garbage, oversize records, bad
/// COBS and CRC mismatches are counted and skipped.
public struct SerialDeframer: Sendable {
    var buffer = InlineArray<96, UInt8>(repeating: 0)
    var count = 0
    var overflow = false
    public private(set) var bad = BadInputCounters()
    public private(set) var framesOK: UInt64 = 0

    public init() {}

    /// Feeds received bytes; calls `body` for each good frame, in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (BridgeFrame) -> Void) {
        for b in bytes { push(b, body) }
    }

    public mutating func feed(_ bytes: [UInt8], _ body: (BridgeFrame) -> Void) {
        for b in bytes { push(b, body) }
    }

    @inline(__always)
    mutating func push(_ byte: UInt8, _ body: (BridgeFrame) -> Void) {
        if byte != 0 {
            if count < FrameBytes.capacity { buffer[count] = byte; count += 1 } else { overflow = true }
            return
        }
        defer { count = 0; overflow = false }
        if overflow { bad.count(.serialOversize); return }
        if count == 0 { return } // idle delimiters are fine
        guard let n = decodeInPlace() else { bad.count(.serialEncoding); return }
        guard n >= 3 else { bad.count(.serialEncoding); return }
        let result: Result<BridgeFrame, DecodeError> = withUnsafeBytes(of: buffer) { raw in
            let body = UnsafeRawBufferPointer(rebasing: raw[0..<(n - 2)])
            let crc = crc16CCITT(body)
            guard UInt16(raw[n - 2]) << 8 | UInt16(raw[n - 1]) == crc else { return .failure(DecodeError(.serialChecksum)) }
            do throws(DecodeError) { return .success(try BridgeFrame.parse(body)) } catch { return .failure(error) }
        }
        switch result {
        case .success(let f): framesOK &+= 1; body(f)
        case .failure(let e): bad.count(e.kind)
        }
    }

    /// COBS-decodes `buffer[0..<count]` in place; returns the decoded length or nil.
    mutating func decodeInPlace() -> Int? {
        var read = 0, write = 0
        while read < count {
            let code = Int(buffer[read])
            guard code != 0, read + code <= count else { return nil }
            read += 1
            for _ in 1..<code { buffer[write] = buffer[read]; write += 1; read += 1 }
            if code != 0xFF && read < count { buffer[write] = 0; write += 1 }
        }
        return write
    }
}
