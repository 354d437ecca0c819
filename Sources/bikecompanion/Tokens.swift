import Crypto
import Foundation

/// Companion access tokens, stored hashed (SHA-256) in `<data dir>/companion-tokens`, mode 0600.
/// A token is `ID.SECRET` (8 + 64 hex digits); only its ID and hash are kept. The file is
/// re-read whenever it changes, so `bikecompanion revoke` takes effect in a running companion.
///
/// File format, one token a line: `v1 ID SHA256HEX CREATED_UNIX_S NAME`.
final class TokenStore: @unchecked Sendable {
    enum Limits {
        static let tokensMax = 32
        static let nameCharactersMax = 40
        static let fileBytesMax = 64 * 1024
    }

    struct Entry: Sendable, Hashable {
        var id: String
        var hash: String
        var createdUnixS: Int64
        var name: String
    }

    enum StoreError: Error, CustomStringConvertible {
        case full
        case io(String)
        var description: String {
            switch self {
            case .full: "already \(Limits.tokensMax) paired companions; revoke one first (`bikecomputer companion revoke TOKEN_ID`)"
            case .io(let m): m
            }
        }
    }

    static let fileName = "companion-tokens"
    let path: String
    private let lock = NSLock()
    private var entries: [Entry] = []
    private var loadedStamp: String?
    /// Lines of the file that could not be read (counted, skipped).
    private(set) var badLines = 0

    init(dataDir: String) {
        path = (dataDir as NSString).appendingPathComponent(Self.fileName)
    }

    /// The current tokens (re-reads the file when it changed on disk).
    func all() -> [Entry] {
        lock.lock(); defer { lock.unlock() }
        reloadIfChanged()
        return entries
    }

    /// The token's ID when `token` is valid now.
    func validate(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 8, parts[1].count == 64 else { return nil }
        let hash = Self.sha256Hex(token)
        for e in all() where e.id == parts[0] {
            if Self.constantTimeEqual(e.hash, hash) { return e.id }
        }
        return nil
    }

    /// Issues a new token for `name`; returns (token, id).
    func issue(name: String, now: Date = Date()) throws -> (token: String, id: String) {
        lock.lock(); defer { lock.unlock() }
        reloadIfChanged()
        guard entries.count < Limits.tokensMax else { throw StoreError.full }
        var rng = SystemRandomNumberGenerator()
        var id = Self.randomHex(4, &rng)
        while entries.contains(where: { $0.id == id }) { id = Self.randomHex(4, &rng) }
        let token = id + "." + Self.randomHex(32, &rng)
        let clean = String(name.unicodeScalars.filter { $0.value > 0x20 && $0.value != 0x7F }.map(Character.init).prefix(Limits.nameCharactersMax))
        entries.append(Entry(id: id, hash: Self.sha256Hex(token), createdUnixS: Int64(now.timeIntervalSince1970), name: clean.isEmpty ? "companion" : clean))
        try write()
        return (token, id)
    }

    /// Removes one token (by ID) or all; returns how many were removed.
    func revoke(id: String?) throws -> Int {
        lock.lock(); defer { lock.unlock() }
        reloadIfChanged()
        let before = entries.count
        if let id { entries.removeAll { $0.id == id.lowercased() } } else { entries.removeAll() }
        let removed = before - entries.count
        if removed > 0 { try write() }
        return removed
    }

    // MARK: File

    private func stamp() -> String? {
        guard let a = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        let m = (a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return "\(m)/\(a[.size] ?? 0)/\(a[.systemFileNumber] ?? 0)"
    }

    private func reloadIfChanged() {
        let s = stamp()
        guard s != loadedStamp else { return }
        loadedStamp = s
        entries = []
        badLines = 0
        guard s != nil, let data = FileManager.default.contents(atPath: path), data.count <= Limits.fileBytesMax else { return }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let f = line.split(separator: " ", maxSplits: 4)
            guard f.count == 5, f[0] == "v1", f[1].count == 8, f[2].count == 64, let created = Int64(f[3]) else {
                badLines += 1
                continue
            }
            if entries.count < Limits.tokensMax {
                entries.append(Entry(id: String(f[1]), hash: String(f[2]), createdUnixS: created, name: String(f[4])))
            }
        }
    }

    /// Writes the file atomically (temporary file, fsync, rename), mode 0600.
    private func write() throws {
        let dir = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw StoreError.io("cannot create the data directory \(dir): \(error.localizedDescription); set --data-dir or [storage] data_dir")
        }
        let text = entries.map { "v1 \($0.id) \($0.hash) \($0.createdUnixS) \($0.name)\n" }.joined()
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io("cannot write \(tmp): \(String(cString: strerror(errno))); check the data directory's permissions") }
        _ = fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let msg = String(cString: strerror(errno))
                close(fd)
                throw StoreError.io("cannot write \(tmp): \(msg)")
            }
            off += n
        }
        _ = fsync(fd)
        close(fd)
        guard rename(tmp, path) == 0 else { throw StoreError.io("cannot replace \(path): \(String(cString: strerror(errno)))") }
        loadedStamp = stamp()
    }

    // MARK: Helpers

    static func sha256Hex(_ s: String) -> String {
        SHA256.hash(data: Data(s.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func randomHex<R: RandomNumberGenerator>(_ bytes: Int, _ rng: inout R) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in 0..<x.count { d |= x[i] ^ y[i] }
        return d == 0
    }
}

/// The pairing code: shown on the unit when a phone asks to pair, valid for
/// `Limits.codeLifetimeS`, cancelled after `Limits.attemptsPerCodeMax` wrong entries.
final class Pairing: @unchecked Sendable {
    enum Limits {
        static let codeDigits = 6
        static let codeLifetimeS: Double = 120
        static let attemptsPerCodeMax = 5
        /// At most one new code per this interval (unless the last one paired): with 5
        /// attempts per code, guessing a 6-digit code takes weeks, and the unit shows every code.
        static let codeIntervalS: Double = 10
    }

    enum Request: Equatable {
        case issued(String)
        case tooSoon(retryAfterS: Int)
    }

    enum Attempt: Equatable {
        case paired
        case wrong(attemptsLeft: Int)
        case noCode
    }

    private let lock = NSLock()
    private var code: String?
    private var expires = Date.distantPast
    private var attemptsLeft = 0
    private var lastIssued = Date.distantPast
    private var lastPaired = false

    /// A new code (replacing any earlier one), or how long to wait for one.
    func newCode(now: Date = Date()) -> Request {
        var rng = SystemRandomNumberGenerator()
        let c = (0..<Limits.codeDigits).map { _ in String(Int.random(in: 0...9, using: &rng)) }.joined()
        lock.lock(); defer { lock.unlock() }
        let since = now.timeIntervalSince(lastIssued)
        if !lastPaired && since < Limits.codeIntervalS {
            return .tooSoon(retryAfterS: Int((Limits.codeIntervalS - since).rounded(.up)))
        }
        code = c
        expires = now.addingTimeInterval(Limits.codeLifetimeS)
        attemptsLeft = Limits.attemptsPerCodeMax
        lastIssued = now
        lastPaired = false
        return .issued(c)
    }

    /// Checks an entered code; a match or the last wrong attempt ends the code.
    func attempt(_ entered: String, now: Date = Date()) -> Attempt {
        lock.lock(); defer { lock.unlock() }
        guard let c = code, now < expires else { code = nil; return .noCode }
        let digits = entered.filter { !$0.isWhitespace }
        if TokenStore.constantTimeEqual(c, digits) {
            code = nil
            lastPaired = true
            return .paired
        }
        attemptsLeft -= 1
        if attemptsLeft <= 0 { code = nil }
        return .wrong(attemptsLeft: max(0, attemptsLeft))
    }

    /// Ends an expired code; true when one was ended (the unit's display must be cleared).
    func expireIfDue(now: Date = Date()) -> Bool {
        lock.lock(); defer { lock.unlock() }
        if code != nil && now >= expires { code = nil; return true }
        return false
    }

    var isActive: Bool {
        lock.lock(); defer { lock.unlock() }
        return code != nil && Date() < expires
    }
}
