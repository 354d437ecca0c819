import Positioning
import RideModel
import Training

/// Where a recovery's gap (the time the device was down) came from.
public enum RecoveryGapSource: Sendable, Hashable, CustomStringConvertible {
    /// The same boot: the monotonic clock ran on (exact).
    case monotonicClock
    /// A trusted wall clock now against the ride's trusted anchor.
    case wallClock
    /// Neither: the gap is recorded as 0 and the ride's later instants follow on from its last.
    case unknown

    public var description: String {
        switch self {
        case .monotonicClock: "monotonic clock, same boot"
        case .wallClock: "wall clock"
        case .unknown: "unknown, recorded as 0"
        }
    }
}

/// Crash recovery (workout-model.md §5): a fresh app core replays the journaled records of the
/// interrupted ride, then `finishRecovery` re-attaches it to the device's clock. No effects are
/// emitted while replaying: the records are already durable.
extension AppCore {
    /// Applies one journaled record. Records must come in journal order.
    public mutating func replay(_ record: RideRecord) {
        // The samples of one 1 Hz record come together; the record is complete (and the training
        // monitors see it) when anything else comes.
        if case .sample(let s) = record, s.instant == replayRecordInstant {} else { finishReplayedRecord() }
        switch record {
        case .header(let h):
            header = h
            builder = RideBuilder(settings: h.settings)
            screen.track = Breadcrumb()
            wallAnchor = h.anchor
            replayedTimeline = nil
            lifecycle = SessionLifecycle(restoring: .prepared, lastTransition: nil)
            training = configuration.training // the ride's own settings follow as metadata
            for i in zoneSlots.indices { zoneSlots[i].targetMonitor = nil }
            autoPause = AutoPauseMonitor(settings: nil)
            resetAnnouncedZones()
        case .event(let e):
            replayEvent(e)
        case .sample(let s):
            // A counter reading taken with a pause, resume or stop (not in a record being
            // replayed): not a record, so the monitors do not see it (as live).
            let boundary = s.quantity.isCumulative && s.instant == builder?.lastEventInstant && replayRecordInstant != s.instant
            do {
                try builder?.add(s)
                if boundary { return }
                noteRecordValue(s)
                replayRecordInstant = s.instant
            } catch {}
            if let start = builder?.startInstant {
                let aligned = start.advanced(byMs: (s.instant.milliseconds(since: start) / 1000) * 1000)
                nextRecordInstant = aligned.advanced(byMs: 1000)
            }
        case .series:
            break
        case .elapsed(let at):
            // A second of the running ride with nothing to count: its record instant, so the
            // timer comes back to it and the monitors see the record (as live, afterRecord).
            replayRecordInstant = at
            if let start = builder?.startInstant {
                let aligned = start.advanced(byMs: (at.milliseconds(since: start) / 1000) * 1000)
                nextRecordInstant = aligned.advanced(byMs: 1000)
            }
        case .wallClock(let a):
            wallAnchor = a
        case .finished(let saved, let at):
            lifecycle = SessionLifecycle(restoring: .ended, lastTransition: at)
            summary = builder.flatMap { b in header.map { Self.makeSummary(b, header: $0, saved: saved, recovered: recovered, at: at) } }
            screen.summary = summary
            nextRecordInstant = nil
            trainingDidFinish()
        case .metadata(let k, let v):
            replayMetadata(key: k, value: v)
        case .timeline(let t):
            replayedTimeline = t
        }
    }

    /// Journals how the ride's instants relate to this boot's monotonic clock (after the
    /// header, after a recovery), when the device knows its boot.
    mutating func journalTimeline() {
        guard let b = boot else { return }
        journal(.timeline(RideTimeline(boot: b, offsetMs: instantOffsetMs)))
    }

    /// How long the device was down, in ms, for a recovery at device instant `deviceNow`: from
    /// the monotonic clock when the ride's last journaled timeline is of this boot (the app
    /// restarted: a crash, a kill, an upgrade), else from a trusted wall clock against the ride's
    /// trusted anchor, else 0 (not known: a power cut without a clock; or nothing replayed). At
    /// most `maxMs`.
    public func recoveryGapMs(deviceNow: MonotonicInstant, wallNow: WallClockTime?, maxMs: Int64) -> (ms: Int64, from: RecoveryGapSource) {
        guard let last = lastReplayedInstant else { return (0, .unknown) }
        if let b = boot, let t = replayedTimeline, t.boot == b {
            return (max(0, min(t.rideInstant(atDevice: deviceNow).milliseconds(since: last), maxMs)), .monotonicClock)
        }
        if let w = wallNow, w.trusted, let anchor = wallAnchorForRide, anchor.wall.trusted {
            return (max(0, min(w.unixMs - anchor.wallTime(at: last).unixMs, maxMs)), .wallClock)
        }
        return (0, .unknown)
    }

    /// Applies a journaled event to the builder and, only if the builder took it, to the
    /// lifecycle and the training monitors (both or neither, as live). A refusal is counted
    /// (`replayRefusals`).
    private mutating func replayEvent(_ e: RideEvent) {
        guard builder != nil else { replayRefusals &+= 1; return }
        do {
            switch e.kind {
            case .start: try builder!.start(at: e.instant)
            case .pause: try builder!.pause(at: e.instant, trigger: e.trigger)
            case .resume: try builder!.resume(at: e.instant, trigger: e.trigger)
            case .lap: try builder!.lap(at: e.instant, trigger: e.trigger)
            case .stop: try builder!.stop(at: e.instant)
            case .marker, .gap, .radar: try builder!.mark(e)
            }
        } catch {
            replayRefusals &+= 1
            return
        }
        switch e.kind {
        case .start:
            autoLapCarryM = 0
            lifecycle = SessionLifecycle(restoring: .running, lastTransition: e.instant)
            trainingDidStart(at: e.instant)
            nextRecordInstant = e.instant
        case .pause:
            lifecycle = SessionLifecycle(restoring: .paused, lastTransition: e.instant)
            trainingDidPause(at: e.instant, trigger: e.trigger)
        case .resume:
            lifecycle = SessionLifecycle(restoring: .running, lastTransition: e.instant)
            trainingDidResume(at: e.instant, trigger: e.trigger)
        case .lap:
            noteLapForAutoLap(e.trigger)
        case .marker, .radar:
            break
        case .stop:
            autoPause.didStop()
            lifecycle = SessionLifecycle(restoring: .stopped, lastTransition: e.instant)
        case .gap:
            gapsMs += e.value
            recovered = true
        }
    }

    /// The newest instant the replayed ride knows of.
    public var lastReplayedInstant: MonotonicInstant? {
        guard let b = builder else { return nil }
        var t = b.lastEventInstant
        if let r = nextRecordInstant {
            let lastRecord = r.advanced(byMs: -1000)
            if t == nil || lastRecord > t! { t = lastRecord }
        }
        return t
    }

    /// Ends the replay: `deviceNow` is the device's monotonic clock now (it restarted at boot),
    /// `gapMs` how long the device was down (from a trusted wall clock, else 0). Records the gap,
    /// maps device time onto the ride's time line, and shows "ride recovered".
    /// A stopped ride that was never saved is saved now (its data is all there).
    public mutating func finishRecovery(deviceNow: MonotonicInstant, gapMs: Int64) {
        finishReplayedRecord()
        if lifecycle.state == .prepared {
            // The ride header was written but not the start: nothing to recover. (It knows no
            // instant, so this comes before the guard below; it used to be left in a countdown
            // with no start, drawn as "3" forever.)
            lifecycle = SessionLifecycle()
            builder = nil
            header = nil
            return
        }
        guard let last = lastReplayedInstant else { return }
        let gap = max(0, gapMs)
        let rideNow = last.advanced(byMs: gap)
        instantOffsetMs = rideNow.milliseconds - deviceNow.milliseconds
        anchorFromRecovery = wallAnchor != nil
        recovered = true
        screen.recovered = true
        switch lifecycle.state {
        case .running, .paused:
            // The gap stops the ride's timer where the device went down and starts it again
            // when it came back (RideBuilder.mark): downtime is elapsed time, not timer time.
            let e = RideEvent(.gap, at: last, value: gap)
            do {
                try builder!.mark(e)
                gapsMs += gap
                journal(.event(e))
            } catch {
                replayRefusals &+= 1 // the event table is full: the ride goes on, the gap unrecorded
            }
            // The new offset: a second restart in this boot measures its gap from it.
            journalTimeline()
            emit(.syncJournal)
            if let start = builder?.startInstant {
                let aligned = start.advanced(byMs: (rideNow.milliseconds(since: start) / 1000) * 1000)
                nextRecordInstant = aligned.advanced(byMs: 1000)
            }
            showOverlay(.rideRecovered, at: rideNow)
            // The course the ride followed: read from the card again (the follower starts over
            // at the next fix; the periods so far came back with the metadata).
            if let name = navigation.recoveredCourseName, !name.isEmpty { emit(.courses(.load(name))) }
        case .stopped:
            _ = transition(.save, at: last)
            journal(.finished(saved: true, at: last))
            emit(.syncJournal)
            finishRide(saved: true, at: last)
            showOverlay(.rideRecovered, at: rideNow)
        case .prepared, .idle, .ended:
            break
        }
        refreshScreen(at: rideNow)
    }
}
