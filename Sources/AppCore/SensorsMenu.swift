import RideModel

/// The Sensors screen, reachable from the idle screen with the buttons: the paired sensors with
/// their connection state and battery, a search for the sensors around, pairing one that was
/// found, forgetting one that is paired. Pure: the buttons come in, what to do goes out as an
/// `Action` (the app core turns it into an effect: the board asks the bridge to search, writes
/// the config file, and tells the data source and the bridge).
///
/// Buttons (three, as on the ride screens):
/// - PAGE: the next row (wraps).
/// - LAP: the row's action: a paired sensor asks "forget?" (LAP again forgets it, any other
///   button keeps it); the last row of the list, SEARCH, starts a search; a sensor found pairs it.
/// - START: back (from the search to the list, stopping the search; from the list to idle).
public struct SensorsMenu: Sendable, Hashable {
    /// Named limits.
    public static let pairedMax = 8
    public static let foundMax = 16
    public static let searchSeconds = 30
    public static let nameBytesMax = 24
    /// How long a message ("PAIRED", an error) stays on the screen.
    public static let messageMs: Int64 = 3_000

    /// A paired sensor as the screen shows it.
    public struct Paired: Sendable, Hashable {
        /// "ble:C0:FF:EE:00:11:22" or "ant:12345/11" (what `bikecomputer sensors` prints).
        public var id: String
        public var kind: SensorKind
        public var name: String
        /// The data source's state of it.
        public var state: SensorState
        public var batteryPercent: Int?

        public init(id: String, kind: SensorKind, name: String = "", state: SensorState, batteryPercent: Int? = nil) {
            self.id = id
            self.kind = kind
            self.name = SensorsMenu.clipped(name)
            self.state = state
            self.batteryPercent = batteryPercent
        }
    }

    /// A sensor a search found.
    public struct Found: Sendable, Hashable {
        public var id: String
        /// The kind it would be paired as (what it advertises).
        public var kind: SensorKind
        public var name: String
        /// dBm; nil when the radio did not say.
        public var rssi: Int?

        public init(id: String, kind: SensorKind, name: String = "", rssi: Int? = nil) {
            self.id = id
            self.kind = kind
            self.name = SensorsMenu.clipped(name)
            self.rssi = rssi
        }
    }

    public enum Page: Sendable, Hashable {
        /// The paired sensors and SEARCH.
        case list
        /// "Forget <row>?": LAP forgets, any other button keeps it.
        case confirmForget(Int)
        /// What the search found so far (and a search running until `searchEndsAt`).
        case found
    }

    public enum Action: Sendable, Hashable {
        case nothing
        /// Leave the Sensors screen.
        case close
        case search(seconds: Int)
        case stopSearch
        case pair(id: String, kind: SensorKind, name: String)
        case forget(id: String)
    }

    public var paired: [Paired] = []
    public var found: [Found] = []
    public var page: Page = .list
    /// The selected row of the page (on the list, `paired.count` is SEARCH).
    public var cursor = 0
    public var searchEndsAt: MonotonicInstant?
    /// Whole seconds the search has left, for the screen (the core updates it every tick).
    public var searchSecondsLeft: Int?
    /// A line shown over the list until `messageUntil` ("PAIRED", "FORGOTTEN", an error).
    public var message: String?
    public var messageUntil: MonotonicInstant?

    public init() {}

    /// `text` cut at a character boundary to `nameBytesMax` UTF-8 bytes.
    public static func clipped(_ text: String) -> String {
        var out = ""
        var bytes = 0
        for c in text {
            let n = c.utf8.count
            if bytes + n > nameBytesMax { break }
            out.append(c)
            bytes += n
        }
        return out
    }

    public var rowCount: Int {
        switch page {
        case .list, .confirmForget: paired.count + 1
        case .found: found.count
        }
    }

    public func isSearching(at now: MonotonicInstant) -> Bool {
        searchEndsAt.map { now < $0 } ?? false
    }

    // MARK: Buttons

    /// A short press on the Sensors screen; returns what the device must do.
    public mutating func press(_ b: Button, at now: MonotonicInstant) -> Action {
        switch (page, b) {
        case (.list, .page):
            cursor = (cursor + 1) % max(1, rowCount)
            return .nothing
        case (.list, .lap):
            if cursor < paired.count {
                page = .confirmForget(cursor)
                return .nothing
            }
            page = .found
            cursor = 0
            found = []
            searchEndsAt = now.advanced(byMs: Int64(Self.searchSeconds) * 1000)
            searchSecondsLeft = Self.searchSeconds
            return .search(seconds: Self.searchSeconds)
        case (.list, .startPause):
            return .close
        case (.confirmForget(let i), .lap):
            page = .list
            guard i < paired.count else { return .nothing }
            return .forget(id: paired[i].id)
        case (.confirmForget, _):
            page = .list
            return .nothing
        case (.found, .page):
            cursor = found.isEmpty ? 0 : (cursor + 1) % found.count
            return .nothing
        case (.found, .lap):
            guard cursor < found.count else { return .nothing }
            let f = found[cursor]
            return .pair(id: f.id, kind: f.kind, name: f.name)
        case (.list, .power), (.found, .power):
            return .nothing // the power button acts on its long press only
        case (.found, .startPause):
            page = .list
            cursor = paired.count
            let searching = isSearching(at: now)
            searchEnded()
            return searching ? .stopSearch : .nothing
        }
    }

    // MARK: What the device reports

    /// The paired sensors changed (pairing, forgetting, a state or battery): the rows follow,
    /// the cursor stays on the same sensor where it can.
    public mutating func setPaired(_ rows: [Paired]) {
        let selected: String? = (page == .list && cursor < paired.count) ? paired[cursor].id : nil
        paired = Array(rows.prefix(Self.pairedMax))
        if case .confirmForget(let i) = page, i >= paired.count { page = .list }
        if let selected, let i = paired.firstIndex(where: { $0.id == selected }) {
            cursor = i
        } else if case .list = page, cursor > paired.count {
            cursor = paired.count
        }
    }

    /// A sensor a search found (again): added, or its signal strength updated. Paired sensors
    /// are not listed.
    public mutating func found(_ f: Found) {
        guard !paired.contains(where: { $0.id == f.id }) else { return }
        if let i = found.firstIndex(where: { $0.id == f.id }) {
            found[i].rssi = f.rssi
            if !f.name.isEmpty { found[i].name = f.name }
        } else if found.count < Self.foundMax {
            found.append(f)
        }
    }

    /// The search ended (its time ran out, or the bridge had no radio to search with).
    public mutating func searchEnded() {
        searchEndsAt = nil
        searchSecondsLeft = nil
    }

    /// Time passing: the seconds the search has left (nil once it is over).
    public mutating func tick(at now: MonotonicInstant) {
        guard let end = searchEndsAt else { searchSecondsLeft = nil; return }
        searchSecondsLeft = now < end ? Int((end.milliseconds - now.milliseconds + 999) / 1000) : nil
        if searchSecondsLeft == nil { searchEndsAt = nil }
    }

    /// The outcome of pairing or forgetting: a message for a few seconds; after pairing the
    /// screen goes back to the list with the new sensor selected.
    public mutating func show(_ text: String, at now: MonotonicInstant, backToListSelecting id: String? = nil) {
        message = text
        messageUntil = now.advanced(byMs: Self.messageMs)
        if let id {
            page = .list
            searchEndsAt = nil
            found.removeAll { $0.id == id }
            cursor = paired.firstIndex { $0.id == id } ?? paired.count
        }
    }

    /// Clears an expired message; true when something changed.
    public mutating func expire(at now: MonotonicInstant) -> Bool {
        guard let until = messageUntil, now >= until else { return false }
        message = nil
        messageUntil = nil
        return true
    }
}
