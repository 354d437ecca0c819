/// Draws a 1-bit display image (controller page layout: `height/8` pages of `width` column
/// bytes, bit 0 at the top) with Unicode half blocks: one character cell holds two pixels
/// stacked, which keeps the display's true aspect in a terminal whose cells are about twice as
/// tall as wide. 128×64 pixels → 128 columns × 32 lines.
public enum TerminalDisplay {
    @inline(__always)
    static func pixel(_ pages: [UInt8], width: Int, x: Int, y: Int) -> Bool {
        pages[(y / 8) * width + x] & (1 << UInt8(y % 8)) != 0
    }

    /// The image as lines of text (no escape sequences), framed by a border.
    public static func lines(pages: [UInt8], width: Int = 128, height: Int = 64) -> [String] {
        precondition(pages.count >= width * height / 8, "image smaller than \(width)×\(height)")
        var out: [String] = []
        out.reserveCapacity(height / 2 + 2)
        out.append("┌" + String(repeating: "─", count: width) + "┐")
        var y = 0
        while y < height {
            var line = "│"
            line.reserveCapacity(width * 3 + 8)
            for x in 0..<width {
                let top = pixel(pages, width: width, x: x, y: y)
                let bottom = y + 1 < height && pixel(pages, width: width, x: x, y: y + 1)
                switch (top, bottom) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            out.append(line + "│")
            y += 2
        }
        out.append("└" + String(repeating: "─", count: width) + "┘")
        return out
    }
}
