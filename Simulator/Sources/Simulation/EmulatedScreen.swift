import AppCore
import Device
import Display
import RideModel
import Screens

/// The simulator's display: the device's renderer and panel driver (the SSD1306's, or the Sharp
/// memory LCD's for the large panel) sending real bytes to the panel's emulator, whose memory is
/// the picture. Keeps the frames a run asks for (named screenshots, or every change of screen
/// mode and overlay) as PNG bytes.
public final class EmulatedScreen: ScreenPort {
    public private(set) var panel: EmulatedPanel
    public private(set) var image: Framebuffer
    /// Captured frames in order: (file name, PNG bytes). Bounded by `framesMax`.
    public private(set) var frames: [(name: String, png: [UInt8])] = []
    public static let framesMax = 2_000
    public var captureEveryChange = false
    public private(set) var framesDropped = 0
    var last: ScreenModel?
    var lastMode: ScreenMode?
    var lastOverlay: Alert?

    /// The panel the board uses at `width` × `height` (`EmulatedPanel(width:height:)`).
    public init(captureEveryChange: Bool = false, width: Int = 128, height: Int = 64) {
        self.captureEveryChange = captureEveryChange
        panel = EmulatedPanel(width: width, height: height)
        image = Framebuffer(width: width, height: height)
    }

    var needsRender = false
    /// Frames drawn through the driver and the emulator.
    public private(set) var renders = 0

    /// Takes the new screen value. The picture is drawn when somebody looks at it (a capture, the
    /// terminal), so a headless run at full speed does not draw every intermediate value.
    public func show(_ screen: ScreenModel, at now: MonotonicInstant) {
        guard screen != last else { return }
        last = screen
        needsRender = true
        if captureEveryChange && (screen.mode != lastMode || screen.overlay != lastOverlay) {
            capture(Self.frameName(now, screen))
        }
        lastMode = screen.mode
        lastOverlay = screen.overlay
    }

    /// Draws the latest screen value through the driver into the emulator.
    public func render() {
        guard needsRender, let model = last else { return }
        needsRender = false
        image = panel.show(model)
        renders += 1
    }

    /// Keeps the current picture under `name` (".png" is added).
    public func capture(_ name: String) {
        render()
        guard frames.count < Self.framesMax else { framesDropped += 1; return }
        frames.append((name + ".png", ImageEncoding.png(image, scale: image.width > 128 ? 1 : 2)))
    }

    /// The picture as text lines of Unicode half blocks, for a terminal.
    public var terminalLines: [String] {
        render()
        return TerminalDisplay.lines(pages: image.bytes, width: image.width, height: image.height)
    }

    static func frameName(_ now: MonotonicInstant, _ s: ScreenModel) -> String {
        var t = String(now.milliseconds / 1000)
        while t.count < 6 { t = "0" + t }
        var mode = "\(s.mode)".replacingSpaces()
        if let o = s.overlay { mode += "-" + "\(o)".replacingSpaces().lowercased() }
        return "frame-\(t)s-\(mode)"
    }
}

extension String {
    func replacingSpaces() -> String { String(map { $0 == " " ? "-" : $0 }) }
}

/// Sends the screen value to several screens (the emulator and a text log).
public final class ScreenFanOut: ScreenPort {
    let screens: [ScreenPort]
    public init(_ screens: [ScreenPort]) { self.screens = screens }
    public func show(_ screen: ScreenModel, at now: MonotonicInstant) {
        for s in screens { s.show(screen, at: now) }
    }
}
