/// Image files from a framebuffer, without Foundation or zlib: PBM (plain "P1", diffable text)
/// and PNG (1-bit greyscale, zlib stream of stored deflate blocks, CRC-32 and Adler-32).
/// These run in tests and the simulator, not on the ride path, so they allocate freely.
public enum ImageEncoding {
    /// Plain PBM ("P1"): 1 = lit pixel, one text row per pixel row.
    public static func pbm(_ image: Framebuffer) -> [UInt8] {
        var out = Array("P1\n\(image.width) \(image.height)\n".utf8)
        out.reserveCapacity(out.count + image.height * (image.width + 1))
        for y in 0..<image.height {
            for x in 0..<image.width { out.append(image[x, y] ? UInt8(ascii: "1") : UInt8(ascii: "0")) }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    public enum PBMError: Error, Sendable, Hashable, CustomStringConvertible {
        case notPlainPBM
        case badSize
        case truncated
        /// A pixel that is neither `0` nor `1` (a corrupted golden read as unlit pixels would
        /// pass for a picture it is not).
        case badPixel(x: Int, y: Int)

        public var description: String {
            switch self {
            case .notPlainPBM: "not a plain PBM (P1) file: regenerate it with UPDATE_GOLDENS=1"
            case .badSize: "PBM size must be a panel size (up to 800x512, a multiple of 8 rows): regenerate it with UPDATE_GOLDENS=1"
            case .truncated: "PBM file ends early: regenerate it with UPDATE_GOLDENS=1"
            case .badPixel(let x, let y): "PBM pixel (\(x), \(y)) is neither 0 nor 1: regenerate it with UPDATE_GOLDENS=1"
            }
        }
    }

    /// Reads a plain PBM (comments and any whitespace allowed) back into a framebuffer.
    public static func parsePBM(_ bytes: [UInt8]) throws(PBMError) -> Framebuffer {
        var i = 0
        func skipSpace() {
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "#") {
                    while i < bytes.count && bytes[i] != UInt8(ascii: "\n") { i += 1 }
                } else if bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
                    i += 1
                } else { return }
            }
        }
        func number() -> Int? {
            skipSpace()
            var v = 0, digits = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39, digits < 6 {
                v = v * 10 + Int(bytes[i] - 0x30)
                i += 1
                digits += 1
            }
            return digits > 0 ? v : nil
        }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "P"), bytes[1] == UInt8(ascii: "1") else { throw .notPlainPBM }
        i = 2
        guard let w = number(), let h = number() else { throw .notPlainPBM }
        guard w >= 1, w <= Framebuffer.widthMaxPx, h >= 8, h <= Framebuffer.heightMaxPx, h % Framebuffer.pageHeightPx == 0 else { throw .badSize }
        var image = Framebuffer(width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                skipSpace()
                guard i < bytes.count else { throw .truncated }
                switch bytes[i] {
                case UInt8(ascii: "1"): image.setPixel(x: x, y: y)
                case UInt8(ascii: "0"): break
                default: throw .badPixel(x: x, y: y)
                }
                i += 1
            }
        }
        return image
    }

    /// PNG, 1-bit greyscale (lit = white), each panel pixel drawn as a `scale`x`scale` square.
    public static func png(_ image: Framebuffer, scale: Int = 1) -> [UInt8] {
        precondition(scale >= 1 && scale <= 16)
        let w = image.width * scale, h = image.height * scale
        let rowBytes = (w + 7) / 8
        // Raw scanlines: filter byte 0 (none), then 8 pixels per byte, leftmost in the high bit.
        var raw = Array(repeating: UInt8(0), count: h * (rowBytes + 1))
        for y in 0..<h {
            let row = y * (rowBytes + 1) + 1
            for x in 0..<w where image[x / scale, y / scale] {
                raw[row + x / 8] |= 0x80 >> UInt8(x % 8)
            }
        }
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr: [UInt8] = []
        appendBigEndian(UInt32(w), to: &ihdr)
        appendBigEndian(UInt32(h), to: &ihdr)
        ihdr += [1, 0, 0, 0, 0]  // bit depth 1, colour type 0 (grey), deflate, filter 0, no interlace
        appendChunk("IHDR", ihdr, to: &out)
        appendChunk("IDAT", zlibStored(raw), to: &out)
        appendChunk("IEND", [], to: &out)
        return out
    }

    /// A zlib stream (RFC 1950) holding `data` in stored (uncompressed) deflate blocks (RFC 1951
    /// §3.2.4), each at most 65,535 bytes.
    public static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        let blockMax = 65_535
        var out: [UInt8] = [0x78, 0x01]  // CM 8 (deflate), 32K window; FCHECK makes 0x7801 % 31 == 0
        var offset = 0
        repeat {
            let n = min(blockMax, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out.append(final)  // BFINAL, BTYPE 00 (stored), padded to the byte
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        appendBigEndian(adler32(data), to: &out)
        return out
    }

    /// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320), as PNG chunks use.
    public static func crc32<S: Sequence>(_ bytes: S) -> UInt32 where S.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// Adler-32 (RFC 1950 §8).
    public static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func appendBigEndian(_ v: UInt32, to out: inout [UInt8]) {
        out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    private static func appendChunk(_ type: String, _ body: [UInt8], to out: inout [UInt8]) {
        appendBigEndian(UInt32(body.count), to: &out)
        let typed = Array(type.utf8) + body
        out += typed
        appendBigEndian(crc32(typed), to: &out)
    }
}
