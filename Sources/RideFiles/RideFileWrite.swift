import RideModel

/// Writing one ride's files in steps, each bounded to one piece of the work: building the export,
/// one encoder, listing the directory, one file written atomically and durably (its fsync and
/// the directory's), reading the FIT back, removing older versions. `RideLibrary.store` runs
/// them all at once; the board's loop runs one step per turn so buttons and screens are served
/// in between (issue 17 item 6).
///
/// A failed step throws; `retry()` starts the writing over (the encoded files are kept, the
/// directory is listed again, so a retry writes a new complete version and cleans up after a
/// half-written one). The file is durable only once `stepTyped()` returned true (`step()` as a
/// `RideArchiveJob`).
public final class RideFileWrite {
    enum Phase: Equatable {
        case export
        case encode(Int)
        case plan
        case write(Int)
        /// The file `write(i)` began waits for the card (its fsync, the directory's).
        case awaitWrite(Int)
        case verify
        case cleanUp
        /// The older version's files are unlinked; the directory's fsync runs in the background.
        case awaitCleanUp
        case done
    }

    public let rideID: RideID
    let library: RideLibrary
    var records: [RideRecord]
    var phase = Phase.export
    var export: RideExport?
    var files: [(RideFileFormat, [UInt8])] = []
    var stem = ""
    var version = 0
    var older: [String] = []
    var inFlight: RideFilePendingWrite?
    /// The last step left the work waiting for the card (`RideFilePendingWrite`): the caller
    /// polls again a little later instead of at once.
    public private(set) var waitsForStorage = false
    /// A short description for the log once done ("<stem>.fit (N bytes, version V)").
    public private(set) var result: String?
    /// Steps taken so far (all attempts).
    public private(set) var steps = 0

    /// Steps a write takes when nothing fails: export, one per format, plan, one write per
    /// format, verify, clean-up.
    public static var stepsPerWrite: Int { 2 * RideLibrary.storedFormats.count + 4 }

    init(library: RideLibrary, rideID: RideID, records: [RideRecord]) {
        self.library = library
        self.rideID = rideID
        self.records = records
    }

    public var isDone: Bool { phase == .done }
    /// Whether the files are encoded (a retry only writes them again).
    public var isEncoded: Bool { files.count == RideLibrary.storedFormats.count }

    /// After a failed step: the next step starts the writing over (a fresh directory listing, a
    /// new version); what was encoded is kept.
    public func retry() {
        guard phase != .done else { return }
        inFlight = nil
        waitsForStorage = false
        phase = isEncoded ? .plan : .export
    }

    func finished() -> Bool {
        let fitSize = files.last?.1.count ?? 0
        result = "\(stem).fit (\(fitSize) bytes, version \(version))"
        phase = .done
        return true
    }

    /// Does the next piece of work; true once the files are durable and verified.
    public func stepTyped() throws(RideLibraryError) -> Bool {
        steps += 1
        waitsForStorage = false
        let ops = library.ops
        let directory = library.directory
        switch phase {
        case .export:
            do { export = try RideExport(records: records) } catch { throw .unexportable(error) }
            records = [] // the export holds what is needed from here on
            files = []
            phase = .encode(0)
        case .encode(let i):
            let f = RideLibrary.storedFormats[i]
            let e = export!
            switch f {
            case .fit:
                let fit = FITEncoder.encode(e)
                // Check the FIT before it is written (and again after it is read back).
                do { _ = try FITFile(bytes: fit) } catch { throw .unexportable(error) }
                files.append((f, fit))
            case .gpx: files.append((f, Array(GPXEncoder.encode(e).utf8)))
            case .tcx: files.append((f, Array(TCXEncoder.encode(e).utf8)))
            }
            phase = i + 1 < RideLibrary.storedFormats.count ? .encode(i + 1) : .plan
        case .plan:
            do { try ops.makeDirectories(directory) } catch {
                throw .storage("cannot create \(directory): \(error)", fault: ops.fault(of: error))
            }
            let names: [String]
            do { names = try ops.list(directory) } catch { throw .storage("cannot list \(directory): \(error)", fault: ops.fault(of: error)) }
            let mine = names.compactMap(RideLibrary.parse).filter { $0.id == rideID }
            if mine.isEmpty, Set(names.compactMap { RideLibrary.parse($0)?.id }).count >= RideLibrary.ridesMax {
                throw .full(RideLibrary.ridesMax)
            }
            version = (mine.map(\.version).max() ?? 0) + 1
            older = mine.filter { $0.version < version }.map { $0.stem + "." + $0.format.rawValue }
            stem = RideLibrary.stem(startUnixMs: export!.unixMs(export!.startInstant), rideID: rideID, version: version)
            phase = .write(0)
        case .write(let i):
            let (format, bytes) = files[i]
            let p = directory + "/" + stem + "." + format.rawValue
            do { inFlight = try ops.beginWriteAtomically(p, bytes) } catch {
                throw .storage("cannot write \(p): \(error)", fault: ops.fault(of: error))
            }
            if inFlight != nil {
                phase = .awaitWrite(i)
                waitsForStorage = true
                return false
            }
            phase = i + 1 < files.count ? .write(i + 1) : .verify
        case .awaitWrite(let i):
            let p = directory + "/" + stem + "." + files[i].0.rawValue
            let durable: Bool
            do { durable = try inFlight?.poll() ?? true } catch {
                inFlight = nil
                throw .storage("cannot write \(p): \(error)", fault: ops.fault(of: error))
            }
            guard durable else {
                waitsForStorage = true
                return false
            }
            inFlight = nil
            phase = i + 1 < files.count ? .write(i + 1) : .verify
        case .verify:
            let fitPath = directory + "/" + stem + "." + RideFileFormat.fit.rawValue
            let readBack: [UInt8]
            do { readBack = try ops.read(fitPath) } catch {
                throw .storage("cannot read back \(fitPath): \(error)", fault: ops.fault(of: error))
            }
            guard readBack == files.last?.1 else {
                throw .storage("\(fitPath) reads back different bytes (failing storage?)", fault: .io)
            }
            phase = .cleanUp
        case .cleanUp:
            // A failed removal leaves an older version, which the list hides and the next
            // store of the ride removes: not worth failing a durable ride for.
            inFlight = try? ops.beginRemove(older.map { directory + "/" + $0 })
            if inFlight != nil {
                phase = .awaitCleanUp
                waitsForStorage = true
                return false
            }
            return finished()
        case .awaitCleanUp:
            let durable: Bool = (try? inFlight?.poll()) ?? true
            guard durable else {
                waitsForStorage = true
                return false
            }
            inFlight = nil
            return finished()
        case .done:
            return true
        }
        return false
    }
}
