import ArgumentParser
import BoardIO
import Configuration
import Glibc

/// `bikecomputer config check [PATH]`: prints the effective configuration, or every problem in
/// the file with its line (exit 1).
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the configuration file.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the effective configuration, or the errors in the file (exit 1).")

        @Argument(help: "The config file (default: \(DeviceConfig.defaultPath); without it the built-in defaults apply).")
        var path: String?

        func run() throws {
            do throws(ConfigFile.LoadError) {
                let (config, source) = try ConfigFile.load(path: path)
                print("# effective configuration (\(source))")
                print(config.renderTOML(), terminator: "")
            } catch {
                printError(error.description)
                throw ExitCode(1)
            }
        }
    }
}

/// Reading the config file for `run` and `config check`.
enum ConfigFile {
    static let fileBytesMax = TOMLDocument.textBytesMax

    enum LoadError: Error, CustomStringConvertible {
        case unreadable(path: String, SystemError)
        case invalid(path: String, ConfigErrors)

        var description: String {
            switch self {
            case .unreadable(let path, let e):
                "cannot read \(path): \(e)\(e.isPermissionDenied ? " (run as the bikecomputer user or fix the file's permissions)" : "")"
            case .invalid(let path, let errors):
                errors.report(path: path) + "\n\(errors.errors.count) problem\(errors.errors.count == 1 ? "" : "s") in \(path); bikecomputer will not start until they are fixed (docs/config.md lists every key)"
            }
        }
    }

    /// Loads `path`, or the default path if it exists, or the built-in defaults. Returns the
    /// configuration and where it came from.
    static func load(path: String?) throws(LoadError) -> (DeviceConfig, String) {
        let file = path ?? DeviceConfig.defaultPath
        if path == nil, access(file, F_OK) != 0 {
            return (DeviceConfig.defaults, "built-in defaults: \(file) does not exist")
        }
        let bytes: [UInt8]
        do { bytes = try read(file) } catch { throw .unreadable(path: file, error) }
        switch ConfigLoader.load(bytes: bytes) {
        case .success(let c): return (c, "from \(file)")
        case .failure(let errors): throw .invalid(path: file, errors)
        }
    }

    /// The file as text for editing (pairing): bytes that are not UTF-8 become U+FFFD, and the
    /// edited text is checked by `ConfigLoader` before it is written.
    static func readText(_ path: String) throws(SystemError) -> String { String(decoding: try read(path), as: UTF8.self) }

    static func read(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        defer { fd.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count <= fileBytesMax {
            let result: Result<Int, SystemError> = chunk.withUnsafeMutableBytes { b in
                do throws(SystemError) { return .success(try fd.read(into: b)) } catch { return .failure(error) }
            }
            let n = try result.get()
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}

func printError(_ s: String) {
    var text = s
    if !text.hasSuffix("\n") { text += "\n" }
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
}
