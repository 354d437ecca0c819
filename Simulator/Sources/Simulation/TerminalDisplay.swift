/// How the panel is drawn in a terminal. Each character cell shows a block of panel pixels:
///
/// - `halfBlocks`: 1×2 pixels per cell (`▀ ▄ █`). 128×64 → 128 columns × 32 lines; the
///   display's true aspect in a terminal whose cells are about twice as tall as wide.
/// - `braille`: 2×4 pixels per cell (U+2800...U+28FF, one dot per pixel). 128×64 → 64 columns ×
///   16 lines, so the panel, its border and two status lines fit an 80×24 terminal.
///
/// Every pixel is drawn in both: nothing is scaled or dropped. A panel larger than the OLEDs
/// (the 400×240 memory LCD: 202×64 cells in Braille) has a third, scaled one:
///
/// - `brailleHalf`: 4×8 pixels per cell, each Braille dot showing a 2×2 block of the panel (a
///   dot wherever the block has ink). 400×240 → 100 columns × 30 lines. The status line says the
///   picture is scaled and what window shows every pixel.
public enum TerminalRendering: String, CaseIterable, Sendable {
    case halfBlocks = "halfblock"
    case braille
    case brailleHalf = "braille-half"

    /// Panel pixels per character cell.
    public var cellWidthPx: Int {
        switch self {
        case .halfBlocks: 1
        case .braille: 2
        case .brailleHalf: 4
        }
    }

    public var cellHeightPx: Int {
        switch self {
        case .halfBlocks: 2
        case .braille: 4
        case .brailleHalf: 8
        }
    }

    /// Whether pixels are merged (not every pixel is its own dot).
    public var isScaled: Bool { self == .brailleHalf }

    /// Columns and lines the framed panel takes (border included).
    public func frameSize(width: Int, height: Int) -> (columns: Int, rows: Int) {
        ((width + cellWidthPx - 1) / cellWidthPx + 2, (height + cellHeightPx - 1) / cellHeightPx + 2)
    }

    /// Columns and lines the whole demo needs: the framed panel and the status lines below it.
    public func terminalSize(width: Int, height: Int) -> (columns: Int, rows: Int) {
        let f = frameSize(width: width, height: height)
        return (f.columns, f.rows + TerminalDisplay.statusRows + (isScaled ? 1 : 0))
    }

    /// From the densest picture (the most cells per pixel, the easiest to read) to the smallest:
    /// every pixel drawn for the OLEDs; a panel wider than 128 pixels may be scaled 1:2.
    public static func preference(width: Int = 128, height: Int = 64) -> [TerminalRendering] {
        width > 128 ? [.halfBlocks, .braille, .brailleHalf] : [.halfBlocks, .braille]
    }

    /// The first rendering in `preference` that fits a terminal of `columns` × `rows`, or nil.
    public static func choose(columns: Int, rows: Int, width: Int = 128, height: Int = 64) -> TerminalRendering? {
        preference(width: width, height: height).first {
            let need = $0.terminalSize(width: width, height: height)
            return columns >= need.columns && rows >= need.rows
        }
    }

    /// "66×20 (braille) or 130×36 (halfblock)": what a terminal needs, smallest first.
    public static func requirements(width: Int = 128, height: Int = 64) -> String {
        preference(width: width, height: height).reversed().map {
            let s = $0.terminalSize(width: width, height: height)
            return "\(s.columns)×\(s.rows) (\($0.rawValue))"
        }.joined(separator: " or ")
    }
}

/// Draws a 1-bit display image (controller page layout: `height/8` pages of `width` column
/// bytes, bit 0 at the top) as lines of text framed by a border, in either rendering.
public enum TerminalDisplay {
    /// Lines under the panel: the simulator's status line and its key hint.
    public static let statusRows = 2

    @inline(__always)
    static func pixel(_ pages: [UInt8], width: Int, height: Int, x: Int, y: Int) -> Bool {
        guard x < width, y < height else { return false }
        return pages[(y / 8) * width + x] & (1 << UInt8(y % 8)) != 0
    }

    /// Bits of a Braille cell's dots, by (column, row) inside the 2×4 cell (Unicode's dot
    /// numbering: 1 2 3 7 down the left, 4 5 6 8 down the right).
    public static let brailleDotBits: [[UInt32]] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]]
    public static let brailleBase: UInt32 = 0x2800

    /// The image as lines of text (no escape sequences), framed by a border.
    public static func lines(pages: [UInt8], width: Int = 128, height: Int = 64,
                             rendering: TerminalRendering = .halfBlocks) -> [String] {
        precondition(pages.count >= width * height / 8, "image smaller than \(width)×\(height)")
        let size = rendering.frameSize(width: width, height: height)
        let inner = size.columns - 2
        var out: [String] = []
        out.reserveCapacity(size.rows)
        out.append("┌" + String(repeating: "─", count: inner) + "┐")
        var y = 0
        while y < height {
            var line = "│"
            line.reserveCapacity(inner * 3 + 8)
            var x = 0
            while x < width {
                switch rendering {
                case .halfBlocks:
                    let top = pixel(pages, width: width, height: height, x: x, y: y)
                    let bottom = pixel(pages, width: width, height: height, x: x, y: y + 1)
                    switch (top, bottom) {
                    case (true, true): line += "█"
                    case (true, false): line += "▀"
                    case (false, true): line += "▄"
                    case (false, false): line += " "
                    }
                case .braille:
                    var bits: UInt32 = 0
                    for dx in 0..<2 {
                        for dy in 0..<4 where pixel(pages, width: width, height: height, x: x + dx, y: y + dy) {
                            bits |= brailleDotBits[dx][dy]
                        }
                    }
                    line.unicodeScalars.append(Unicode.Scalar(brailleBase + bits)!)
                case .brailleHalf:
                    var bits: UInt32 = 0
                    for dx in 0..<2 {
                        for dy in 0..<4 {
                            let px = x + 2 * dx, py = y + 2 * dy
                            if pixel(pages, width: width, height: height, x: px, y: py) || pixel(pages, width: width, height: height, x: px + 1, y: py)
                                || pixel(pages, width: width, height: height, x: px, y: py + 1)
                                || pixel(pages, width: width, height: height, x: px + 1, y: py + 1) {
                                bits |= brailleDotBits[dx][dy]
                            }
                        }
                    }
                    line.unicodeScalars.append(Unicode.Scalar(brailleBase + bits)!)
                }
                x += rendering.cellWidthPx
            }
            out.append(line + "│")
            y += rendering.cellHeightPx
        }
        out.append("└" + String(repeating: "─", count: inner) + "┘")
        return out
    }
}

extension EmulatedScreen {
    /// The current picture as text lines in `rendering`, for a terminal.
    public func terminalLines(_ rendering: TerminalRendering) -> [String] {
        render()
        return TerminalDisplay.lines(pages: image.bytes, width: image.width, height: image.height, rendering: rendering)
    }
}
