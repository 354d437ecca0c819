import AppCore
import Control
import RideModel

/// `end` on the control socket says "ride ended and saved" only once the ride's file is durable
/// on the card (what the screen calls RIDE SAVED), not as soon as the journal holds the end
/// (issue 27: with a rides directory the app could not write, every `ctl end` answered "saved"
/// while every ride ended RIDE NOT SAVED). A file whose writing failed, or that is not written
/// within `controlReplyWaitMsMax`, is answered "ride ended; its file is not saved yet" with the
/// reason after `ControlProtocol.notDurableMarker` (`bikecomputer ctl` exits 3 and says it).
extension DeviceRuntime {
    /// Ride-file fates remembered for the replies (a few rides end at once at most).
    static let rideFileOutcomesMax = 8
    /// The word a "not saved" reason starts with: the screen's.
    public static let rideNotSavedWord = "RIDE NOT SAVED"
    /// The `end` reply's message when writing the ride's file failed.
    public static let rideFileNotSavedMessage = "ride ended; its file is not saved yet"
    /// The `end` reply's message when the ride's file is still being written after the wait.
    public static let rideFileWritingMessage = "ride ended; its file is being written (RIDE SAVED on the screen once it is on the card)"

    func noteRideFileOutcome(_ id: RideID, notSaved: String?) {
        rideFileOutcomes.removeAll { $0.id == id }
        if rideFileOutcomes.count >= Self.rideFileOutcomesMax { rideFileOutcomes.removeFirst() }
        rideFileOutcomes.append((id, notSaved))
        assert(rideFileOutcomes.count <= Self.rideFileOutcomesMax)
    }

    static func notSavedWhy(_ failure: RideArchiveFailure, _ error: any Error) -> String {
        switch failure {
        case .full: "STORAGE FULL: \(error)"
        case .unexportable: "the ride cannot be written as a file (\(error))"
        case .readOnly, .io, .other: "STORAGE ERROR: \(error)"
        }
    }

    /// The `end` reply, held until the ride's file is durable or its writing failed.
    func awaitingRideFile(_ a: ControlAnswer, _ reply: CommandReply, ride id: RideID, mark: UInt64,
                          at now: MonotonicInstant) -> ControlAnswer {
        if let settled = rideFileAnswer(a, reply, ride: id) { return settled }
        guard durableReplySink != nil, waitingReplies.count < Self.controlRepliesWaitingMax else { return rideFileLate(reply, mark: mark) }
        lastReplyID &+= 1
        waitingReplies.append(WaitingReply(id: lastReplyID, mark: mark, answer: a, since: now, rideFile: id, reply: reply))
        repliesDelayedForDurability &+= 1
        var held = a
        held.awaitingDurability = lastReplyID
        return held
    }

    /// The answer once the file's fate is known ("saved" only if it is durable); nil while it
    /// is being written.
    func rideFileAnswer(_ a: ControlAnswer, _ reply: CommandReply, ride id: RideID) -> ControlAnswer? {
        if let outcome = rideFileOutcomes.last(where: { $0.id == id }) {
            guard let why = outcome.notSaved else { return a }
            return notSaved(reply, "\(Self.rideNotSavedWord): its file could not be written (\(why)); the journal keeps the ride "
                                   + "and the unit writes the file as soon as it can (docs/board.md, \"A full or failing card\")")
        }
        if rideFiles.contains(where: { $0.rideID == id }) { return nil }
        return notSaved(reply, "\(Self.rideNotSavedWord): its file was not queued; the journal keeps the ride and the next start writes it")
    }

    /// The file is still being written after `controlReplyWaitMsMax` (a slow card): the reply
    /// does not say "saved", and says the file is on its way; it is "not yet durable" only if
    /// the journal does not hold the end either.
    func rideFileLate(_ reply: CommandReply, mark: UInt64) -> ControlAnswer {
        var r = reply
        r.message = Self.rideFileWritingMessage
        let a = ControlAnswer(ControlProtocol.format(r))
        if journal.isDurable(mark) { return a }
        return notDurable(a, journal.notDurableReason ?? "the card has not confirmed the write within \(Self.controlReplyWaitMsMax) ms")
    }

    func notSaved(_ reply: CommandReply, _ why: String) -> ControlAnswer {
        var r = reply
        r.message = Self.rideFileNotSavedMessage
        return notDurable(ControlAnswer(ControlProtocol.format(r)), why)
    }
}
