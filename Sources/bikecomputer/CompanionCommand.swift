import ArgumentParser
import Glibc

/// `bikecomputer companion [serve|revoke|tokens] ...`: runs `bikecompanion`, the separate
/// companion process, from the directory this binary is in (so the device binary never links
/// the web stack). Everything after `companion` is passed on unchanged; see docs/companion.md.
struct CompanionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "companion",
        abstract: "Mirror the live ride to a paired phone (runs bikecompanion from this binary's directory).",
        discussion: "`bikecomputer companion` serves; `bikecomputer companion revoke TOKEN_ID|--all` revokes; `bikecomputer companion tokens` lists. Off unless [companion] enabled = true.")

    @Argument(parsing: .captureForPassthrough, help: "Arguments for bikecompanion (try `bikecomputer companion --help`).")
    var arguments: [String] = []

    static let executableName = "bikecompanion"

    /// The directory of the running executable (/proc/self/exe), else of argv[0].
    static func ownDirectory() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        let path = n > 0 ? String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    func run() throws {
        let path = Self.ownDirectory() + "/" + Self.executableName
        let argv = [Self.executableName] + arguments
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArgs.append(nil)
        execv(path, &cArgs)
        // execv returns only on failure.
        let why = String(cString: strerror(errno))
        printError("bikecomputer companion: cannot run \(path): \(why); install bikecompanion beside bikecomputer (`swift build --product bikecompanion` puts it there)")
        throw ExitCode(127)
    }
}
