import Glibc

/// The interactive terminal: raw keyboard input without echo, and full-screen redraws with ANSI
/// escapes (works over ssh and in tmux). Restores the terminal on exit and on SIGINT/SIGTERM.
final class Terminal {
    private var saved = termios()
    private(set) var isRaw = false
    let isInteractive: Bool

    init() {
        isInteractive = isatty(0) == 1 && isatty(1) == 1
    }

    /// Switches stdin to raw mode (no echo, no line buffering) and hides the cursor.
    func enterRaw() {
        guard isInteractive, !isRaw else { return }
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON)
        raw.c_cc.6 = 0 // VMIN
        raw.c_cc.5 = 0 // VTIME
        tcsetattr(0, TCSANOW, &raw)
        isRaw = true
        write("\u{1B}[?25l\u{1B}[2J")
    }

    func restore() {
        guard isRaw else { return }
        tcsetattr(0, TCSANOW, &saved)
        isRaw = false
        write("\u{1B}[0m\u{1B}[?25h\n")
    }

    /// Writes text to stdout at once.
    func write(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            var off = 0
            while off < buf.count {
                let n = Glibc.write(1, buf.baseAddress! + off, buf.count - off)
                if n <= 0 { if errno == EINTR { continue }; return }
                off += n
            }
        }
    }

    /// Redraws the whole screen from the top-left corner. With `columns`/`rows`, every line is
    /// cut to the width and lines past the height are left out, so nothing wraps or scrolls.
    func draw(_ lines: [String], columns: Int = .max, rows: Int = .max, clearFirst: Bool = false) {
        let shown = lines.prefix(max(0, rows)).map { $0.count > columns ? String($0.prefix(max(0, columns))) : $0 }
        write((clearFirst ? "\u{1B}[2J" : "") + "\u{1B}[H" + shown.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J")
    }

    /// The terminal's size in columns and rows (TIOCGWINSZ on standard output), nil when it
    /// does not say (not a terminal, or a terminal that reports 0×0).
    static func size() -> (columns: Int, rows: Int)? {
        var ws = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 else { return nil }
        return (Int(ws.ws_col), Int(ws.ws_row))
    }

    /// Waits up to `timeoutMs` for a key; returns the bytes read (empty on timeout).
    func readKeys(timeoutMs: Int32) -> [UInt8] {
        var fds = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        let r = poll(&fds, 1, max(0, timeoutMs))
        guard r > 0 else { return [] }
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        return n > 0 ? Array(buf[0..<n]) : [UInt8(ascii: "q")] // EOF on stdin: quit
    }
}

/// Set by SIGWINCH (the terminal was resized); the draw loop re-reads the size and clears it.
nonisolated(unsafe) var terminalResized: sig_atomic_t = 0

/// Notes every resize of the terminal in `terminalResized` (the handler only stores a flag).
func installResizeHandler() {
    signal(SIGWINCH) { _ in terminalResized = 1 }
}

/// The terminal settings to put back if a signal ends the simulator while the terminal is raw.
nonisolated(unsafe) private var termiosToRestore = termios()
nonisolated(unsafe) private var haveTermiosToRestore = false

/// On SIGINT/SIGTERM/SIGHUP: restore the terminal (only async-signal-safe calls), then exit.
func installSignalRestore(_ terminal: Terminal) {
    guard terminal.isInteractive, tcgetattr(0, &termiosToRestore) == 0 else { return }
    haveTermiosToRestore = true
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal(sig) { s in
            if haveTermiosToRestore { tcsetattr(0, TCSANOW, &termiosToRestore) }
            let showCursor: [UInt8] = Array("\u{1B}[0m\u{1B}[?25h\n".utf8)
            _ = showCursor.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            _exit(128 + s)
        }
    }
}
