import Display

/// How much room a panel has. A page design (`PageDesign`) shows a row or a cell only on the
/// classes it names, so one description gives the tiny OLED fewer fields and the 400×240 LCD more.
public enum SizeClass: Int, Sendable, Hashable, Comparable, CaseIterable {
    /// Fewer than 64 rows (the 0.91" 128×32 OLED).
    case compact
    /// 64 rows or more on a narrow panel (the 0.96"/1.3" 128×64 OLEDs; the 1.28" 128×128
    /// memory LCD, whose 128 columns hold no more fields side by side).
    case regular
    /// 256 columns and 128 rows or more (the 2.7" 400×240 memory LCD).
    case large

    public init(width: Int, height: Int) {
        self = height < 64 ? .compact : width < 256 || height < 128 ? .regular : .large
    }

    public static func < (a: SizeClass, b: SizeClass) -> Bool { a.rawValue < b.rawValue }
}

/// A set of size classes: where a row or cell of a page design is shown.
public struct SizeClasses: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let compact = SizeClasses(rawValue: 1 << 0)
    public static let regular = SizeClasses(rawValue: 1 << 1)
    public static let large = SizeClasses(rawValue: 1 << 2)
    public static let all: SizeClasses = [.compact, .regular, .large]

    /// `c` and every larger class ("from the 128×64 panel up").
    public static func from(_ c: SizeClass) -> SizeClasses {
        var s: SizeClasses = []
        for k in SizeClass.allCases where k >= c { s.insert(SizeClasses(rawValue: 1 << UInt8(k.rawValue))) }
        return s
    }

    public func contains(_ c: SizeClass) -> Bool { contains(SizeClasses(rawValue: 1 << UInt8(c.rawValue))) }
}

/// The fonts a panel draws with, by role. The OLEDs use the Terminus fonts at their own size; a
/// panel 256 pixels wide or more uses larger ones generated from the same source
/// (scripts/fonts/gen_fonts.py), so every screen reads alike at any size.
public struct FontSet: Sendable {
    /// Captions beside or over values ("KM/H", "HR").
    public let label: Font
    /// The rows of `label` that capitals and digits ink: the first and how many. A caption left
    /// of a value is centred on these.
    public let labelCapTop: Int
    public let labelCapRows: Int
    /// Status lines, lists and summary rows.
    public let text: Font
    /// Titles, banners and alerts ("READY", "PAUSED").
    public let title: Font
    /// Rows of lists and summaries, the sensor boxes: the text font where the panel is small,
    /// larger where it has room to be read at a glance.
    public let list: Font
    /// Digit fonts, smallest first. `FieldSize.medium` is `digits[digitsBase]`; a value too wide
    /// for its frame steps down the list.
    public let digits: [Font]
    public let digitsBase: Int

    /// The index in `digits` of a field size.
    public func digitsLevel(_ size: FieldSize) -> Int { min(digits.count - 1, digitsBase + size.rawValue) }

    public func digits(_ size: FieldSize) -> Font { digits[digitsLevel(size)] }

    /// The OLEDs' fonts: 6×12 captions and text, 8×16 titles, 8/12/16-wide digits (and the
    /// 6-wide text font for a value that needs it).
    public static let standard = FontSet(label: .small, labelCapTop: 2, labelCapRows: 9, text: .small, title: .medium, list: .small,
                                         digits: [.small, .digitsMedium, .digitsLarge, .digitsHuge], digitsBase: 1)
    /// A large panel's: 8×16 captions and text, 12×24 titles, 16/24/32-wide digits (and the 12-
    /// and 8-wide ones for a value that needs them).
    public static let large = FontSet(label: .medium, labelCapTop: 2, labelCapRows: 11, text: .medium, title: .titleLarge, list: .titleLarge,
                                      digits: [.medium, .digitsLarge, .digitsHuge, .digitsLarge2x, .digitsHuge2x], digitsBase: 2)
}

/// A panel's size and what follows from it: its size class, the scale of spacing and rules, the
/// fonts. Everything the renderer places is computed from this, never from 128-pixel constants.
public struct PanelGeometry: Sendable {
    public let width: Int
    public let height: Int
    public let sizeClass: SizeClass
    /// 1 on the OLEDs; 2 on a panel 256 pixels wide or more: spacing, rules, marks and fonts
    /// are twice as big.
    public let scale: Int
    public let fonts: FontSet

    public init(width: Int, height: Int) {
        precondition(width >= 64 && height >= 32, "panels are at least 64x32")
        self.width = width
        self.height = height
        sizeClass = SizeClass(width: width, height: height)
        scale = width >= 256 ? 2 : 1
        fonts = scale == 2 ? .large : .standard
    }

    public var bounds: Rect { Rect(x: 0, y: 0, width: width, height: height) }

    /// A length given in 128×64 pixels, at this panel.
    @inline(__always) public func px(_ units: Int) -> Int { units * scale }

    /// Whether the panel has room for more than a row or two (64 rows or more).
    public var isTall: Bool { sizeClass >= .regular }

    /// The page dots at the right edge: squares `pageDotPx` wide, one per `pageDotPitch` rows.
    public var pageDotPx: Int { px(3) }
    public var pageDotPitch: Int { px(6) }

    /// Where a running page's fields go: the whole panel but the page dots' column (fields reach
    /// one pixel under it: their values keep 2 px from their right edge).
    public var runningArea: Rect { Rect(x: 0, y: 0, width: width - px(2), height: height) }

    /// The status line across the foot of a running page (a companion's pairing code while
    /// riding): the caption font's capitals and digits with a pixel above and below, left of
    /// the page dots' column.
    public var statusLine: Rect {
        let h = fonts.labelCapRows + px(2)
        return Rect(x: 0, y: height - h, width: width - pageDotPx - px(1), height: h)
    }
}
