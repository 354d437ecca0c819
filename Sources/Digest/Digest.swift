// Digest: SHA-256 (FIPS 180-4) over bytes, for the companion's token file. Pure: no Foundation,
// no system calls.
//
// Must not import: Foundation, Glibc, RideModel, AppCore, BoardIO, Control, Device.

/// SHA-256 (FIPS 180-4, section 6.2), one-shot over a byte collection: what the companion stores
/// its tokens' hashes with (bikecompanion's `TokenStore`). Pure Swift without Foundation. It
/// replaced swift-crypto, whose BoringSSL (about 380 C and C++ files, for one hash) was most of
/// the companion's compile in the x86 build and in the board's aarch64 cross build.
///
/// Not a general cryptographic library: no streaming, no HMAC, nothing secret-dependent beyond
/// the message itself (SHA-256's rounds are branch-free on the message; the token comparison is
/// the caller's, in constant time).
public enum SHA256 {
    public static let digestBytes = 32
    static let blockBytes = 64

    /// FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first
    /// 64 primes.
    static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
    /// FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the square roots of the
    /// first 8 primes.
    static let initial: [UInt32] = [0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19]

    /// The 32-byte digest of `message`.
    public static func hash<Bytes: Collection>(_ message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        // The padded message (5.1.1): the bytes, 0x80, zeros to 56 mod 64, the bit length (64-bit
        // big-endian).
        var padded = Array(message)
        let bitLength = UInt64(padded.count) &* 8
        padded.append(0x80)
        while padded.count % blockBytes != blockBytes - 8 { padded.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { padded.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        precondition(padded.count % blockBytes == 0, "SHA-256 padding is whole blocks")

        var h = initial
        var w = [UInt32](repeating: 0, count: 64)
        for block in stride(from: 0, to: padded.count, by: blockBytes) {
            for t in 0..<16 {
                let i = block + 4 * t
                w[t] = UInt32(padded[i]) << 24 | UInt32(padded[i + 1]) << 16 | UInt32(padded[i + 2]) << 8 | UInt32(padded[i + 3])
            }
            for t in 16..<64 {
                let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7]
            for t in 0..<64 {
                let t1 = hh &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[t] &+ w[t]
                let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                hh = g; g = f; f = e; e = d &+ t1
                d = c; c = b; b = a; a = t1 &+ t2
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d
            h[4] = h[4] &+ e; h[5] = h[5] &+ f; h[6] = h[6] &+ g; h[7] = h[7] &+ hh
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(digestBytes)
        for word in h {
            for shift in stride(from: 24, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        precondition(digest.count == digestBytes)
        return digest
    }

    /// The digest of `message` as 64 lower-case hex digits.
    public static func hex<Bytes: Collection>(_ message: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(2 * digestBytes)
        for byte in hash(message) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always) static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }
}
