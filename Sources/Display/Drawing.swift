/// Lines, outlines and bar charts. All clip to the framebuffer and never allocate.
extension Framebuffer {
    public mutating func horizontalLine(x: Int, y: Int, length: Int, on: Bool = true) {
        fill(Rect(x: x, y: y, width: length, height: 1), on: on)
    }

    public mutating func verticalLine(x: Int, y: Int, length: Int, on: Bool = true) {
        fill(Rect(x: x, y: y, width: 1, height: length), on: on)
    }

    /// A line from (x0, y0) to (x1, y1), both ends included (Bresenham).
    public mutating func line(x0: Int, y0: Int, x1: Int, y1: Int, on: Bool = true) {
        var x = x0, y = y0
        let dx = abs(x1 - x0), dy = -abs(y1 - y0)
        let sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1
        var err = dx + dy
        // Bounded: at most max(dx, |dy|) + 1 pixels.
        for _ in 0...max(dx, -dy) {
            setPixel(x: x, y: y, on)
            if x == x1 && y == y1 { break }
            let e2 = 2 * err
            if e2 >= dy { err += dy; x += sx }
            if e2 <= dx { err += dx; y += sy }
        }
    }

    /// A one-pixel outline just inside `rect`.
    public mutating func strokeRect(_ rect: Rect, on: Bool = true) {
        guard rect.width > 0, rect.height > 0 else { return }
        horizontalLine(x: rect.x, y: rect.y, length: rect.width, on: on)
        horizontalLine(x: rect.x, y: rect.maxY - 1, length: rect.width, on: on)
        verticalLine(x: rect.x, y: rect.y, length: rect.height, on: on)
        verticalLine(x: rect.maxX - 1, y: rect.y, length: rect.height, on: on)
    }

    /// A horizontal bar: the outline of `rect`, filled from the left in proportion
    /// `value / maximum` (clamped to 0...1). A positive value fills at least one column.
    public mutating func horizontalBar(_ rect: Rect, value: Int64, maximum: Int64) {
        strokeRect(rect)
        let inner = rect.insetBy(1)
        guard maximum > 0, value > 0, inner.width > 0 else { return }
        let filled = Int(min(value, maximum) * Int64(inner.width) / maximum)
        fill(Rect(x: inner.x, y: inner.y, width: max(1, filled), height: inner.height))
    }

    /// The first `count` of `values` as vertical bars side by side, bottom-aligned in `rect`, on
    /// a one-pixel baseline, scaled so the largest fills the rest of the height. A positive value
    /// is at least one pixel above the baseline.
    public mutating func barChart(_ rect: Rect, values: [Int64], count: Int, gapPx: Int = 1) {
        let n = min(count, values.count)
        guard n > 0, rect.width > 0, rect.height > 1 else { return }
        var largest: Int64 = 0
        for i in 0..<n { largest = max(largest, values[i]) }
        let barWidth = max(1, (rect.width - gapPx * (n - 1)) / n)
        for i in 0..<n {
            let x = rect.x + i * (barWidth + gapPx)
            let v = max(0, values[i])
            var h = largest > 0 ? Int(v * Int64(rect.height - 1) / largest) : 0
            if v > 0 { h = max(h, 1) }
            horizontalLine(x: x, y: rect.maxY - 1, length: barWidth)
            fill(Rect(x: x, y: rect.maxY - 1 - h, width: barWidth, height: h))
        }
    }
}
