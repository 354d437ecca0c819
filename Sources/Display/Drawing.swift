/// Lines, outlines and bar charts. All clip to the framebuffer and never allocate.
extension Framebuffer {
    /// A line `thickness` rows thick, its top row at `y`.
    public mutating func horizontalLine(x: Int, y: Int, length: Int, on: Bool = true, thickness: Int = 1) {
        fill(Rect(x: x, y: y, width: length, height: thickness), on: on)
    }

    /// A line `thickness` columns thick, its left column at `x`.
    public mutating func verticalLine(x: Int, y: Int, length: Int, on: Bool = true, thickness: Int = 1) {
        fill(Rect(x: x, y: y, width: thickness, height: length), on: on)
    }

    /// A line from (x0, y0) to (x1, y1), both ends included (Bresenham); with `thickness` t > 1
    /// each point is a t×t square whose top left is on the line.
    public mutating func line(x0: Int, y0: Int, x1: Int, y1: Int, on: Bool = true, thickness: Int = 1) {
        var x = x0, y = y0
        let dx = abs(x1 - x0), dy = -abs(y1 - y0)
        let sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1
        var err = dx + dy
        // Bounded: at most max(dx, |dy|) + 1 points.
        for _ in 0...max(dx, -dy) {
            if thickness > 1 { fill(Rect(x: x, y: y, width: thickness, height: thickness), on: on) } else { setPixel(x: x, y: y, on) }
            if x == x1 && y == y1 { break }
            let e2 = 2 * err
            if e2 >= dy { err += dy; x += sx }
            if e2 <= dx { err += dx; y += sy }
        }
    }

    /// An outline `thickness` pixels wide just inside `rect`.
    public mutating func strokeRect(_ rect: Rect, on: Bool = true, thickness: Int = 1) {
        guard rect.width > 0, rect.height > 0 else { return }
        let t = max(1, min(thickness, rect.width, rect.height))
        horizontalLine(x: rect.x, y: rect.y, length: rect.width, on: on, thickness: t)
        horizontalLine(x: rect.x, y: rect.maxY - t, length: rect.width, on: on, thickness: t)
        verticalLine(x: rect.x, y: rect.y, length: rect.height, on: on, thickness: t)
        verticalLine(x: rect.maxX - t, y: rect.y, length: rect.height, on: on, thickness: t)
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
