import Display
import Testing

@Suite struct ImageEncodingTests {
    @Test func checksumsMatchPublishedCheckValues() {
        #expect(ImageEncoding.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(ImageEncoding.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(ImageEncoding.adler32([]) == 1)
    }

    /// Decodes the PNG independently (chunks, CRCs, stored deflate blocks, Adler-32, scanlines)
    /// and compares every pixel with the framebuffer.
    @Test(arguments: [1, 3])
    func pngDecodesToTheFramebuffer(scale: Int) throws {
        var fb = Framebuffer.oled128x64()
        fb.drawText("Hi 42", font: .medium, x: 3, y: 5)
        fb.line(x0: 0, y0: 63, x1: 127, y1: 30)
        let png = ImageEncoding.png(fb, scale: scale)
        #expect(Array(png[0..<8]) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var i = 8
        var idat: [UInt8] = []
        var width = 0, height = 0
        func be32(_ at: Int) -> Int { Int(png[at]) << 24 | Int(png[at + 1]) << 16 | Int(png[at + 2]) << 8 | Int(png[at + 3]) }
        var types: [String] = []
        while i < png.count {
            let length = be32(i)
            let type = String(decoding: png[i + 4..<i + 8], as: UTF8.self)
            types.append(type)
            let body = Array(png[i + 8..<i + 8 + length])
            #expect(UInt32(be32(i + 8 + length)) == ImageEncoding.crc32(Array(png[i + 4..<i + 8 + length])), "\(type) CRC")
            if type == "IHDR" { width = be32(i + 8); height = be32(i + 12); #expect(body[8] == 1 && body[9] == 0) }
            if type == "IDAT" { idat += body }
            i += 12 + length
        }
        #expect(types == ["IHDR", "IDAT", "IEND"])
        #expect(width == 128 * scale && height == 64 * scale)
        #expect((Int(idat[0]) << 8 | Int(idat[1])) % 31 == 0 && idat[0] & 0x0F == 8)
        var raw: [UInt8] = []
        var p = 2
        while true {
            let header = idat[p]
            #expect(header & 0x06 == 0, "stored block")
            let len = Int(idat[p + 1]) | Int(idat[p + 2]) << 8
            let nlen = Int(idat[p + 3]) | Int(idat[p + 4]) << 8
            #expect(len ^ nlen == 0xFFFF)
            raw += idat[p + 5..<p + 5 + len]
            p += 5 + len
            if header & 1 == 1 { break }
        }
        let adler = UInt32(idat[p]) << 24 | UInt32(idat[p + 1]) << 16 | UInt32(idat[p + 2]) << 8 | UInt32(idat[p + 3])
        #expect(adler == ImageEncoding.adler32(raw))
        let rowBytes = (width + 7) / 8
        #expect(raw.count == height * (rowBytes + 1))
        for y in 0..<height {
            #expect(raw[y * (rowBytes + 1)] == 0, "filter none")
            for x in 0..<width where (raw[y * (rowBytes + 1) + 1 + x / 8] & (0x80 >> UInt8(x % 8)) != 0) != fb[x / scale, y / scale] {
                Issue.record("pixel (\(x),\(y)) differs")
                return
            }
        }
    }

    @Test func largeImagesSpanSeveralStoredBlocks() {
        let data = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let z = ImageEncoding.zlibStored(data)
        #expect(z.count == 2 + 3 * 5 + data.count + 4)
        #expect(z[2] == 0 && z[2 + 5 + 65_535] == 0 && z[2 + 2 * (5 + 65_535)] == 1)
    }

    @Test func pbmRoundTrips() throws {
        var fb = Framebuffer.oled128x32()
        fb.drawText("PBM", font: .small, x: 1, y: 1)
        let back = try ImageEncoding.parsePBM(ImageEncoding.pbm(fb))
        #expect(back.bytes == fb.bytes)
        #expect(throws: ImageEncoding.PBMError.notPlainPBM) { try ImageEncoding.parsePBM(Array("P4\n".utf8)) }
        #expect(throws: ImageEncoding.PBMError.truncated) { try ImageEncoding.parsePBM(Array("P1\n128 32\n0 1".utf8)) }
        #expect(throws: ImageEncoding.PBMError.badSize) { try ImageEncoding.parsePBM(Array("P1\n5 5\n".utf8)) }
        // One pixel that is not 0 or 1 (a corrupted byte) is an error, not an unlit pixel.
        var text = ImageEncoding.pbm(fb)
        let at = try #require(text.lastIndex(of: UInt8(ascii: "0")))
        text[at] = 0xCF
        #expect(throws: ImageEncoding.PBMError.badPixel(x: 127, y: 31)) { try ImageEncoding.parsePBM(text) }
    }
}
