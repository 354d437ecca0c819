import ArgumentParser
import BoardIO
import Configuration
import FoundationEssentials
import Glibc
import Hummingbird
import HummingbirdWebSocket
import Logging
import RideModel

/// `bikecompanion` (also run as `bikecomputer companion`): follows the running bike computer
/// over its control socket and serves paired phones over HTTP + WebSocket (docs/companion.md).
@main
struct BikeCompanion: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bikecompanion",
        abstract: "Mirror a live ride to a paired phone or laptop (off unless [companion] enabled = true).",
        version: ProjectVersion.text("bikecompanion"),
        subcommands: [Serve.self, Revoke.self, Tokens.self, CheckEnabled.self],
        defaultSubcommand: Serve.self)
}

struct CommonOptions: ParsableArguments {
    @Option(help: "The config file (default: /etc/bikecomputer/config.toml if it exists).")
    var config: String?

    @Option(help: "The data directory whose companion/ holds companion-tokens (default: [storage] data_dir).")
    var dataDir: String?

    /// The configuration and where it came from; exits 2 with the problems when it is invalid.
    func load() throws -> DeviceConfig {
        let file = config ?? DeviceConfig.defaultPath
        if config == nil, !FileManager.default.fileExists(atPath: file) { return DeviceConfig.defaults }
        guard let data = FileManager.default.contents(atPath: file) else {
            printError("bikecompanion: cannot read \(file); check the path and its permissions")
            throw ExitCode(2)
        }
        switch ConfigLoader.load(bytes: Array(data)) {
        case .success(let c): return c
        case .failure(let errors):
            printError(errors.report(path: file) + "\nfix \(file) (docs/config.md lists every key)")
            throw ExitCode(2)
        }
    }

    /// The tokens are in the data directory's companion/ (the companion's unit lets it see and
    /// write that directory only: not the journal, not the rides; issue 27).
    func tokenStore(_ c: DeviceConfig) -> TokenStore {
        TokenStore(dataDir: joinPath(dataDir ?? c.storage.dataDir, Self.tokensDirectory))
    }

    static let tokensDirectory = "companion"
}

func printError(_ s: String) {
    writeLine(s, to: STDERR_FILENO)
}

/// A line to standard output or error, unbuffered (write(2)): the journal has each line at
/// once, whole, whichever thread wrote it. A line that cannot be written is dropped: there is
/// nowhere left to say so.
func writeLine(_ s: String, to fd: Int32) {
    do { try FileDescriptor(rawValue: fd).writeAll(Array((s + "\n").utf8)) } catch {}
}

extension String {
    /// Without leading and trailing spaces and tabs (what CharacterSet.whitespaces trimmed).
    func trimmingSpaces() -> String {
        func isSpace(_ u: Unicode.Scalar) -> Bool { u == "\t" || u.properties.generalCategory == .spaceSeparator }
        let u = unicodeScalars
        guard let first = u.firstIndex(where: { !isSpace($0) }), let last = u.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(String.UnicodeScalarView(u[first...last]))
    }
}

/// `dir/name` (no doubled slash; `name` alone when `dir` is empty).
func joinPath(_ dir: String, _ name: String) -> String {
    if dir.isEmpty { return name }
    return dir.hasSuffix("/") ? dir + name : dir + "/" + name
}

/// `host:port` → parts (config validation already checked the port).
func splitListen(_ s: String) -> (String, Int)? {
    guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (1...65535).contains(port) else { return nil }
    var host = String(s[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return (host, port)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve companions (the default).")

    @OptionGroup var common: CommonOptions

    @Option(help: "The control socket (default: [control] socket).")
    var socket: String?

    @Option(help: "host:port to listen on (default: [companion] listen).")
    var listen: String?

    @Option(help: "Chart.js for the page's charts (default: \(CompanionServer.defaultChartJSPath), from Debian's libjs-chart.js).")
    var chartjs: String?

    func run() async throws {
        let config = try common.load()
        guard config.companion.enabled else {
            printError("bikecompanion: the companion is off; set `enabled = true` under [companion] in \(common.config ?? DeviceConfig.defaultPath) to turn it on")
            throw ExitCode(3)
        }
        let address = listen ?? config.companion.listen
        guard let (host, port) = splitListen(address) else {
            printError("bikecompanion: listen address '\(address)' is not host:port (port 1...65535)")
            throw ExitCode(2)
        }
        let log: @Sendable (String) -> Void = { line in
            writeLine("bikecompanion: \(line)", to: STDOUT_FILENO)
        }
        let hub = Hub()
        let link = DeviceLink(socketPath: socket ?? config.control.socket, hub: hub)
        link.log = log
        let tokens = common.tokenStore(config)
        let pairing = Pairing()
        link.onPairingDismissed = {
            if pairing.dismissedOnUnit() { log("the rider cleared the pairing code on the unit: it is cancelled, and its device waits before it may ask again") }
        }
        var server = CompanionServer(link: link, tokens: tokens, pairing: pairing, log: log)
        if let chartjs { server.chartJSPath = chartjs }
        server.coursesDirectory = joinPath(common.dataDir ?? config.storage.dataDir, "courses")
        if !FileManager.default.fileExists(atPath: server.chartJSPath) {
            log("no Chart.js at \(server.chartJSPath): the page works without its charts; sudo apt-get install libjs-chart.js")
        }
        link.start()

        // Once a second: end an expired pairing code, close connections of revoked tokens.
        Task.detached {
            while true {
                try? await Task.sleep(for: .seconds(1))
                if pairing.expireIfDue() {
                    log("pairing code expired")
                    _ = await link.request("pairing-code clear")
                }
                hub.closeRevoked { tokens.validate(tokenID: $0) }
            }
        }

        let router = server.router()
        var logger = Logger(label: "bikecompanion")
        logger.logLevel = .warning
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname(host, port: port), serverName: "bikecompanion"),
            onServerRunning: { _ in log("listening on http://\(address) (tokens in \(tokens.path))") },
            logger: logger)
        try await app.runService()
    }
}

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke a companion's token (or all of them): it is refused at once, also by a running companion.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "The token ID (8 hex digits, see `tokens`).")
    var tokenID: String?

    @Flag(help: "Revoke every token.")
    var all = false

    func run() throws {
        guard (tokenID == nil) != !all else {
            printError("bikecompanion revoke: give a TOKEN_ID or --all (see `bikecomputer companion tokens`)")
            throw ExitCode(64)
        }
        let store = common.tokenStore(try common.load())
        let removed: Int
        do { removed = try store.revoke(id: all ? nil : tokenID) } catch {
            printError("bikecompanion revoke: \(error)")
            throw ExitCode(2)
        }
        if removed == 0 && !all {
            printError("bikecompanion revoke: no token \(tokenID ?? ""); `bikecomputer companion tokens` lists them")
            throw ExitCode(1)
        }
        print("revoked \(removed) token\(removed == 1 ? "" : "s")")
    }
}

struct Tokens: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List paired companions (token IDs, never the tokens).")

    @OptionGroup var common: CommonOptions

    func run() throws {
        let store = common.tokenStore(try common.load())
        let all = store.all()
        if all.isEmpty { print("no paired companions (\(store.path))") }
        for e in all {
            // The file is plain text: a creation time no clock could have had is shown as read.
            let (ms, overflow) = e.createdUnixS.multipliedReportingOverflow(by: 1000)
            print("\(e.id)  \(overflow ? "\(e.createdUnixS) s" : UTCDateTime(unixMs: ms).iso8601)  \(e.name)")
        }
    }
}

/// `bikecompanion check-enabled`: exit 0 when `[companion] enabled = true`, else 1 with the key to
/// set. The systemd unit's ExecCondition (board/systemd/bikecompanion.service): the companion
/// is skipped, not failed, until the config turns it on.
struct CheckEnabled: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-enabled",
        abstract: "Exit 0 if [companion] enabled = true in the config, else 1 (the systemd unit's condition).")

    @OptionGroup var common: CommonOptions

    func run() throws {
        let config = try common.load()
        let path = common.config ?? DeviceConfig.defaultPath
        guard config.companion.enabled else {
            print("bikecompanion: off: set `enabled = true` under [companion] in \(path), then `sudo systemctl start bikecompanion`")
            throw ExitCode(1)
        }
        print("bikecompanion: on ([companion] enabled = true in \(path)); listening on \(config.companion.listen)")
    }
}
