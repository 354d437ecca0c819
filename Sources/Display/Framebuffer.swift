/// A 1-bit framebuffer of any panel size up to `widthMaxPx` × `heightMaxPx`, stored in bands of
/// 8 rows ("pages", after the OLED controllers' memory pages): `pageCount` bands of `width`
/// column bytes; in each byte bit 0 is the top pixel of the band's 8 rows. An SSD1306/SH1106
/// page is a band as it is; a row-addressed panel (a Sharp memory LCD, an e-paper) takes its
/// rows with `packRow`. A set bit is a drawn pixel (lit on an OLED, black on a reflective LCD).
///
/// Every write that changes a byte marks its band dirty; `takeDirtyPages()` hands the set to the
/// driver. Drawing never allocates: the storage is allocated once in `init`.
public struct Framebuffer: Sendable, Hashable {
    /// Rows per page (one column byte).
    public static let pageHeightPx = 8
    /// The largest height supported (64 bands: the dirty mask has one bit per band). A 400×240
    /// Sharp memory LCD is 30 bands.
    public static let heightMaxPx = 512
    public static let widthMaxPx = 800

    public let width: Int
    public let height: Int
    public let pageCount: Int
    /// Page-major column bytes: byte `page * width + x`.
    public private(set) var bytes: [UInt8]
    /// Bit p set = page p changed since the last `takeDirtyPages()`.
    public private(set) var dirtyPages: UInt64
    /// Drawing asked of pixels outside the buffer (clipped away) since `init`: the tests check
    /// that no screen draws outside its panel.
    public private(set) var inkOutside = 0

    /// A 128x64 framebuffer (0.96"/1.3" SSD1306 and SH1106 modules).
    public static func oled128x64() -> Framebuffer { Framebuffer(width: 128, height: 64) }
    /// A 128x32 framebuffer (0.91" SSD1306 modules).
    public static func oled128x32() -> Framebuffer { Framebuffer(width: 128, height: 32) }

    public init(width: Int, height: Int) {
        precondition(width > 0 && width <= Self.widthMaxPx, "framebuffer width must be 1...\(Self.widthMaxPx)")
        precondition(height > 0 && height <= Self.heightMaxPx && height % Self.pageHeightPx == 0,
                     "framebuffer height must be a multiple of 8 up to \(Self.heightMaxPx)")
        self.width = width
        self.height = height
        pageCount = height / Self.pageHeightPx
        bytes = Array(repeating: 0, count: width * pageCount)
        dirtyPages = Self.mask(pages: pageCount)
    }

    /// The mask with one bit for each of `pages` bands.
    @inlinable public static func mask(pages: Int) -> UInt64 { pages >= 64 ? UInt64.max : (1 << UInt64(pages)) - 1 }

    public var bounds: Rect { Rect(x: 0, y: 0, width: width, height: height) }
    public var allPagesMask: UInt64 { Self.mask(pages: pageCount) }

    /// Returns the dirty pages and forgets them.
    public mutating func takeDirtyPages() -> UInt64 {
        let d = dirtyPages
        dirtyPages = 0
        return d
    }

    /// Marks every page dirty (after the controller lost its memory, for instance).
    public mutating func markAllDirty() { dirtyPages = allPagesMask }

    /// The column byte at column `x` of page `page`.
    @inlinable public func columnByte(page: Int, x: Int) -> UInt8 { bytes[page * width + x] }

    @inline(__always)
    mutating func store(_ value: UInt8, at index: Int) {
        if bytes[index] != value {
            bytes[index] = value
            dirtyPages |= 1 << UInt64(index / width)
        }
    }

    public subscript(x: Int, y: Int) -> Bool {
        guard x >= 0, x < width, y >= 0, y < height else { return false }
        return bytes[(y >> 3) * width + x] & (1 << UInt8(y & 7)) != 0
    }

    /// Sets (`on`) or clears one pixel; pixels outside the buffer are ignored (clipped).
    public mutating func setPixel(x: Int, y: Int, _ on: Bool = true) {
        guard x >= 0, x < width, y >= 0, y < height else { inkOutside &+= 1; return }
        let i = (y >> 3) * width + x
        let bit: UInt8 = 1 << UInt8(y & 7)
        store(on ? bytes[i] | bit : bytes[i] & ~bit, at: i)
    }

    public mutating func invertPixel(x: Int, y: Int) {
        guard x >= 0, x < width, y >= 0, y < height else { return }
        let i = (y >> 3) * width + x
        store(bytes[i] ^ (1 << UInt8(y & 7)), at: i)
    }

    public mutating func clear() { fill(bounds, on: false) }

    /// Row `y` packed for a row-addressed panel: `(width + 7) / 8` bytes into `out`, the leftmost
    /// pixel in the most significant bit of the first byte (`leftmostInMSB`, the order an
    /// MSB-first SPI controller puts it first on the wire) or in the least significant bit;
    /// a drawn pixel is 1 unless `drawnIsZero` (a reflective panel whose 1 is white). Bits after
    /// the last column are 0 (or 1 with `drawnIsZero`). No allocation.
    public func packRow(_ y: Int, into out: UnsafeMutableBufferPointer<UInt8>, leftmostInMSB: Bool, drawnIsZero: Bool) {
        precondition(y >= 0 && y < height && out.count >= (width + 7) / 8, "row \(y) or its buffer out of range")
        let base = (y >> 3) * width
        let bit: UInt8 = 1 << UInt8(y & 7)
        for i in 0..<(width + 7) / 8 {
            var packed: UInt8 = 0
            for k in 0..<8 {
                let x = i * 8 + k
                let drawn = x < width && bytes[base + x] & bit != 0
                if drawn != drawnIsZero { packed |= leftmostInMSB ? 0x80 >> UInt8(k) : 1 << UInt8(k) }
            }
            out[i] = packed
        }
    }

    /// Copies `other` (same size) into this buffer; only pages whose bytes differ become dirty.
    public mutating func update(from other: Framebuffer) {
        precondition(other.width == width && other.height == height, "framebuffer sizes differ")
        for i in 0..<bytes.count { store(other.bytes[i], at: i) }
    }

    /// Fills (or clears) a rectangle, clipped to the buffer. Works a column byte at a time.
    public mutating func fill(_ rect: Rect, on: Bool = true) {
        if on { applyMask(rect, .set) } else { applyMask(rect, .clear) }
    }

    /// Inverts every pixel in a rectangle (light on dark becomes dark on light).
    public mutating func invert(_ rect: Rect) { applyMask(rect, .toggle) }

    private enum MaskOp { case set, clear, toggle }

    private mutating func applyMask(_ rect: Rect, _ op: MaskOp) {
        let r = rect.intersection(bounds)
        if rect.width > 0 && rect.height > 0 && r != rect { inkOutside &+= 1 }
        guard r.width > 0, r.height > 0 else { return }
        let firstPage = r.y >> 3, lastPage = (r.maxY - 1) >> 3
        for page in firstPage...lastPage {
            let top = max(r.y, page * 8) - page * 8
            let bottom = min(r.maxY, page * 8 + 8) - page * 8
            let mask = UInt8(truncatingIfNeeded: ((1 << bottom) - 1) & ~((1 << top) - 1))
            let base = page * width
            for x in r.x..<r.maxX {
                let old = bytes[base + x]
                let new: UInt8 = switch op {
                case .set: old | mask
                case .clear: old & ~mask
                case .toggle: old ^ mask
                }
                store(new, at: base + x)
            }
        }
    }
}

/// An integer rectangle in pixels; `maxX`/`maxY` are exclusive.
public struct Rect: Sendable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var maxX: Int { x + width }
    public var maxY: Int { y + height }

    public func intersection(_ o: Rect) -> Rect {
        let x0 = max(x, o.x), y0 = max(y, o.y)
        let x1 = min(maxX, o.maxX), y1 = min(maxY, o.maxY)
        return Rect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    public func insetBy(_ d: Int) -> Rect {
        Rect(x: x + d, y: y + d, width: max(0, width - 2 * d), height: max(0, height - 2 * d))
    }

    public var description: String { "(\(x),\(y) \(width)x\(height))" }
}
