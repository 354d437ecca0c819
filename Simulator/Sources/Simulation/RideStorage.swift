import AppCore
import Device
import Journal
import RideModel

/// The simulated device's storage: where the flash journal lives, what a crash or a power cut
/// does to it, and whether it can be filled. Each (re)boot opens the journal with the board's
/// own code (`FlashJournal.open`), which recovers an interrupted ride into a fresh app core.
public protocol RideStorage: AnyObject {
    func open(configuration: AppConfiguration, seed: UInt64, deviceNow: MonotonicInstant,
              wallNow: WallClockTime) -> (journal: RideJournalPort, core: AppCore, report: RecoveryReport)
    /// The process died; with `powerCut`, the power went too (unsynced writes may be lost).
    func crash(powerCut: Bool)
    /// Makes the storage full (or not). Returns false when this storage cannot simulate it.
    func setFull(_ full: Bool) -> Bool
    /// Journal health figures for the status line.
    var describe: String { get }
}

/// The journal on the simulated flash (the default): a power cut loses every write not synced,
/// exactly as the power-cut tests assume of a real card.
public final class SimulatedFlashStorage: RideStorage {
    public let flash: SimulatedFlash
    public private(set) var journal: FlashJournal?

    public init(flash: SimulatedFlash = SimulatedFlash()) { self.flash = flash }

    public func open(configuration: AppConfiguration, seed: UInt64, deviceNow: MonotonicInstant,
                     wallNow: WallClockTime) -> (journal: RideJournalPort, core: AppCore, report: RecoveryReport) {
        let opened = FlashJournal.open(storage: flash, configuration: configuration, randomSeed: seed,
                                       deviceNow: deviceNow, wallNow: wallNow)
        journal = opened.journal
        return (opened.journal, opened.core, opened.report)
    }

    public func crash(powerCut: Bool) {
        journal = nil // the process's buffers are gone
        if powerCut {
            flash.cutMode = .loseUnsynced
            flash.powerCycle() // only what was synced survives
            flash.cutMode = .dropWrite
        }
    }

    public func setFull(_ full: Bool) -> Bool {
        flash.injectedError = full ? StorageError(.noSpace, "simulated disk full") : nil
        flash.failWrites = full ? Int.max : 0
        return true
    }

    public var describe: String {
        "flash writes \(flash.writeCount) syncs \(flash.syncCount) bytes \(flash.bytesWritten)"
    }
}

/// The journal in a real data directory, opened by the caller's function (the board's adapter):
/// `bikesim --data-dir`, and the crash drills that SIGKILL the simulator itself.
public final class DirectoryStorage: RideStorage {
    public typealias Opener = (AppConfiguration, UInt64, MonotonicInstant, WallClockTime) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport)
    let opener: Opener
    public let path: String
    public private(set) var journal: FlashJournal?

    public init(path: String, opener: @escaping Opener) {
        self.path = path
        self.opener = opener
    }

    public func open(configuration: AppConfiguration, seed: UInt64, deviceNow: MonotonicInstant,
                     wallNow: WallClockTime) -> (journal: RideJournalPort, core: AppCore, report: RecoveryReport) {
        let opened = opener(configuration, seed, deviceNow, wallNow)
        journal = opened.journal
        return opened
    }

    /// A real directory cannot lose power in a simulation: a power cut acts as a crash (what the
    /// kernel already has survives).
    public func crash(powerCut: Bool) { journal = nil }

    public func setFull(_ full: Bool) -> Bool { false }

    public var describe: String {
        guard let c = journal?.counters else { return "journal \(path)" }
        return "journal \(path): \(c)"
    }
}
