import Display

/// Ink on a framebuffer as its 8-connected blobs' bounding boxes: the drawn elements (a glyph,
/// a rule, a filled box) as a test sees them. With `lit` false, the dark pixels' blobs inside
/// `region` (the words cut out of a filled banner).
enum InkBlobs {
    static func boxes(_ f: Framebuffer, lit: Bool = true, in region: Rect? = nil) -> [Rect] {
        let r = region ?? Rect(x: 0, y: 0, width: f.width, height: f.height)
        func ink(_ x: Int, _ y: Int) -> Bool { f[x, y] == lit }
        var seen = [Bool](repeating: false, count: f.width * f.height)
        var out: [Rect] = []
        var stack: [(Int, Int)] = []
        for y0 in r.y..<r.maxY {
            for x0 in r.x..<r.maxX where ink(x0, y0) && !seen[y0 * f.width + x0] {
                var minX = x0, maxX = x0, minY = y0, maxY = y0
                seen[y0 * f.width + x0] = true
                stack.append((x0, y0))
                while let (x, y) = stack.popLast() {
                    minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
                    for dy in -1...1 {
                        for dx in -1...1 {
                            let nx = x + dx, ny = y + dy
                            guard nx >= r.x, ny >= r.y, nx < r.maxX, ny < r.maxY, ink(nx, ny), !seen[ny * f.width + nx] else { continue }
                            seen[ny * f.width + nx] = true
                            stack.append((nx, ny))
                        }
                    }
                }
                out.append(Rect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1))
            }
        }
        return out
    }

    /// The elements of a screen with its ruled grid taken apart: every straight run of ink
    /// `ruleMin` pixels or longer (a separator line, a row of a filled box) is an element of its
    /// own, and what remains is cut into blobs. (As one blob, a page's joined separator lines
    /// would be a box over most of the page.)
    static func elements(_ f: Framebuffer, ruleMin: Int) -> [Rect] {
        var rest = f
        var out: [Rect] = []
        for y in 0..<f.height {
            var x = 0
            while x < f.width {
                guard f[x, y] else { x += 1; continue }
                var end = x
                while end < f.width && f[end, y] { end += 1 }
                if end - x >= ruleMin {
                    out.append(Rect(x: x, y: y, width: end - x, height: 1))
                    for i in x..<end { rest.setPixel(x: i, y: y, false) }
                }
                x = end
            }
        }
        for x in 0..<f.width {
            var y = 0
            while y < f.height {
                guard f[x, y] else { y += 1; continue }
                var end = y
                while end < f.height && f[x, end] { end += 1 }
                if end - y >= ruleMin {
                    out.append(Rect(x: x, y: y, width: 1, height: end - y))
                    for i in y..<end { rest.setPixel(x: x, y: i, false) }
                }
                y = end
            }
        }
        return out + boxes(rest)
    }

    static func overlaps(_ a: Rect, _ b: Rect) -> Bool {
        let o = a.intersection(b)
        return o.width > 0 && o.height > 0
    }

    /// The lit pixels of a framebuffer.
    static func ink(_ f: Framebuffer) -> Int {
        var n = 0
        for y in 0..<f.height { for x in 0..<f.width where f[x, y] { n += 1 } }
        return n
    }
}

extension Rect {
    func contains(x px: Int, y py: Int) -> Bool { px >= x && px < maxX && py >= y && py < maxY }
}
