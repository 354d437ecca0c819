/// One problem in the config file, with its line (0 when it concerns the file as a whole).
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case syntax
        case unknownTable
        case unknownKey
        case wrongType
        case outOfRange
        case notAllowed
        case missingKey
        case inconsistent
    }

    public var line: Int
    public var kind: Kind
    public var message: String

    public init(line: Int, _ kind: Kind, _ message: String) {
        self.line = line
        self.kind = kind
        self.message = message
    }

    public var description: String { line > 0 ? "line \(line): \(message)" : message }
}

/// Every problem found in a config file (the device refuses to start on any).
public struct ConfigErrors: Error, Sendable, Hashable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(errors: [ConfigError]) { self.errors = errors }

    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }

    /// The errors prefixed with the file's path, one per line (`path:line: message`).
    public func report(path: String) -> String {
        errors.map { $0.line > 0 ? "\(path):\($0.line): \($0.message)" : "\(path): \($0.message)" }.joined(separator: "\n")
    }
}
