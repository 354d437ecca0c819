import BoardIO
import Digest
import FoundationEssentials
import Synchronization

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
    private let lock = Mutex(())
    private var entries: [Entry] = []
    private var loadedStamp: String?
    /// Lines of the file that could not be read (counted, skipped).
    private(set) var badLines = 0

    init(dataDir: String) {
        path = joinPath(dataDir, Self.fileName)
    }

    /// The current tokens (re-reads the file when it changed on disk).
    func all() -> [Entry] {
        lock.withLock { _ in
            reloadIfChanged()
            return entries
        }
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
        try lock.withLock { _ in
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
    }

    /// Removes one token (by ID) or all; returns how many were removed.
    func revoke(id: String?) throws -> Int {
        try lock.withLock { _ in
            reloadIfChanged()
            let before = entries.count
            if let id { entries.removeAll { $0.id == id.lowercased() } } else { entries.removeAll() }
            let removed = before - entries.count
            if removed > 0 { try write() }
            return removed
        }
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

    /// Writes the file atomically and durably, mode 0600: BoardIO's `AtomicFiles.write` (a
    /// temporary named by this process, fsync, rename, fsync of the directory), so the
    /// companion and `bikecomputer companion revoke` never write through each other's temporary,
    /// and a power cut right after pairing keeps the new token (issue 27).
    private func write() throws {
        let dir = AtomicFiles.directoryName(of: path)
        do {
            try AtomicFiles.makeDirectories(dir)
        } catch {
            throw StoreError.io("cannot create the data directory \(dir): \(error.message); set --data-dir or [storage] data_dir")
        }
        let text = entries.map { "v1 \($0.id) \($0.hash) \($0.createdUnixS) \($0.name)\n" }.joined()
        do {
            try AtomicFiles.write(path, Array(text.utf8), mode: 0o600)
        } catch {
            throw StoreError.io("cannot replace \(path): \(error); check the data directory's permissions")
        }
        loadedStamp = stamp()
    }

    // MARK: Helpers

    static func sha256Hex(_ s: String) -> String {
        SHA256.hex(s.utf8)
    }

    static func randomHex<R: RandomNumberGenerator>(_ bytes: Int, _ rng: inout R) -> String {
        (0..<bytes).map { _ in hex2(UInt8.random(in: 0...255, using: &rng)) }.joined()
    }

    /// Two lowercase hex digits.
    static func hex2(_ b: UInt8) -> String {
        let h = String(b, radix: 16)
        return b < 0x10 ? "0" + h : h
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
/// `Limits.codeLifetimeS`, cancelled after `Limits.attemptsPerCodeMax` wrong entries, or when the
/// rider clears it with a button. A code belongs to the client that asked for it (its address):
/// only that client may enter it, so nobody else burns its attempts, and nobody replaces it
/// while it is active. Each client backs off: every code it asked for and did not pair with
/// doubles its wait for the next, every wrong entry doubles its wait for the next entry, and a
/// code the rider cleared makes its client wait the longest (issue 27).
final class Pairing: @unchecked Sendable {
    enum Limits {
        static let codeDigits = 6
        static let codeLifetimeS: Double = 120
        static let attemptsPerCodeMax = 5
        /// At most one new code per this interval, whoever asks (unless the last one paired):
        /// with 5 attempts per code, guessing a 6-digit code takes weeks, and the unit shows
        /// every code.
        static let codeIntervalS: Double = 10
        /// A client's wait for its next code: this, doubled for each code it did not pair with,
        /// up to `clientWaitMaxS`.
        static let clientCodeWaitS: Double = 10
        static let clientWaitMaxS: Double = 3_600
        /// A client's wait for its next entry after a wrong one: this, doubled per wrong entry.
        static let clientAttemptWaitS: Double = 0.25
        /// A code the rider cleared: its client's strikes grow by this much (a wait of minutes).
        static let dismissedStrikes = 5
        /// Clients remembered at most (the oldest is forgotten first).
        static let clientsMax = 64
    }

    enum Request: Equatable {
        case issued(String)
        case tooSoon(retryAfterS: Int)
        /// Another client's code is active: it is not replaced.
        case busy(retryAfterS: Int)
    }

    enum Attempt: Equatable {
        case paired
        case wrong(attemptsLeft: Int)
        case noCode
        /// The active code was asked for by another client: not counted against it.
        case notYours
        /// This client entered a wrong code too recently.
        case tooSoon(retryAfterS: Int)
    }

    struct Client {
        var codesNotPaired = 0
        var nextCode = Date.distantPast
        var wrongEntries = 0
        var nextAttempt = Date.distantPast
        var lastSeen = Date.distantPast
    }

    private let lock = Mutex(())
    private var code: String?
    private var owner: String?
    private var expires = Date.distantPast
    private var attemptsLeft = 0
    private var lastIssued = Date.distantPast
    private var lastPaired = false
    private var clients: [String: Client] = [:]

    static func wait(_ base: Double, doublings: Int) -> Double {
        min(Limits.clientWaitMaxS, base * Double(1 << min(max(0, doublings), 20)))
    }

    private func client(_ key: String, _ now: Date) -> Client {
        if let c = clients[key] { return c }
        if clients.count >= Limits.clientsMax, let oldest = clients.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
            clients.removeValue(forKey: oldest)
        }
        return Client()
    }

    static func seconds(_ t: Double) -> Int { max(1, Int(t.rounded(.up))) }

    /// A new code for `clientKey` (replacing its own earlier one), or how long to wait for one.
    func newCode(client clientKey: String, now: Date = Date()) -> Request {
        var rng = SystemRandomNumberGenerator()
        let c = (0..<Limits.codeDigits).map { _ in String(Int.random(in: 0...9, using: &rng)) }.joined()
        return lock.withLock { _ in
            var me = client(clientKey, now)
            me.lastSeen = now
            defer { clients[clientKey] = me }
            if code != nil, now < expires, let o = owner, o != clientKey {
                return .busy(retryAfterS: Self.seconds(expires.timeIntervalSince(now)))
            }
            if now < me.nextCode { return .tooSoon(retryAfterS: Self.seconds(me.nextCode.timeIntervalSince(now))) }
            let since = now.timeIntervalSince(lastIssued)
            if !lastPaired && since < Limits.codeIntervalS {
                return .tooSoon(retryAfterS: Self.seconds(Limits.codeIntervalS - since))
            }
            code = c
            owner = clientKey
            expires = now.addingTimeInterval(Limits.codeLifetimeS)
            attemptsLeft = Limits.attemptsPerCodeMax
            lastIssued = now
            lastPaired = false
            me.nextCode = now.addingTimeInterval(Self.wait(Limits.clientCodeWaitS, doublings: me.codesNotPaired))
            me.codesNotPaired += 1
            return .issued(c)
        }
    }

    /// Checks an entered code; a match or the last wrong attempt ends the code.
    func attempt(_ entered: String, client clientKey: String, now: Date = Date()) -> Attempt {
        return lock.withLock { _ in
            guard let c = code, now < expires else { code = nil; owner = nil; return .noCode }
            guard owner == clientKey else { return .notYours }
            var me = client(clientKey, now)
            me.lastSeen = now
            defer { clients[clientKey] = me }
            if now < me.nextAttempt { return .tooSoon(retryAfterS: Self.seconds(me.nextAttempt.timeIntervalSince(now))) }
            let digits = entered.filter { !$0.isWhitespace }
            if TokenStore.constantTimeEqual(c, digits) {
                code = nil
                owner = nil
                lastPaired = true
                me = Client(lastSeen: now)
                return .paired
            }
            attemptsLeft -= 1
            me.nextAttempt = now.addingTimeInterval(Self.wait(Limits.clientAttemptWaitS, doublings: me.wrongEntries))
            me.wrongEntries += 1
            if attemptsLeft <= 0 { code = nil; owner = nil }
            return .wrong(attemptsLeft: max(0, attemptsLeft))
        }
    }

    /// The rider cleared the code on the unit: it ends, and its client waits long for another.
    /// True when a code was active.
    @discardableResult
    func dismissedOnUnit(now: Date = Date()) -> Bool {
        return lock.withLock { _ in
            guard code != nil, let o = owner else { return false }
            var c = client(o, now)
            c.codesNotPaired += Limits.dismissedStrikes
            c.nextCode = max(c.nextCode, now.addingTimeInterval(Self.wait(Limits.clientCodeWaitS, doublings: c.codesNotPaired)))
            clients[o] = c
            code = nil
            owner = nil
            return true
        }
    }

    /// Ends an expired code; true when one was ended (the unit's display must be cleared).
    func expireIfDue(now: Date = Date()) -> Bool {
        return lock.withLock { _ in
            if code != nil && now >= expires { code = nil; owner = nil; return true }
            return false
        }
    }

    var isActive: Bool {
        return lock.withLock { _ in
            return code != nil && Date() < expires
        }
    }
}
