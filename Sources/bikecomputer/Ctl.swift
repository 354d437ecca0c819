import ArgumentParser
import BoardIO
import Configuration
import Control
import Device

/// `bikecomputer ctl start|pause|resume|lap|end|discard|dismiss|page|marker ...|status`: sends
/// one command over the control socket and prints the reply. A state change is answered once
/// it is durable on the card; one that could not be made durable (a failing card, a disabled
/// journal, a card slower than 1.5 s) is printed and exits 3. A refusal (e.g. `start` while a
/// ride is in progress) prints the message and exits 1; no connection exits 2.
struct Ctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Control the running bike computer over its control socket.",
        discussion: "Commands: \(ControlProtocol.commandWords). `marker` takes an optional kind (generic, water, food, note, segment) and value.")

    @Argument(help: "The command and its arguments, e.g. `start`, `status`, `marker water 500`.")
    var words: [String]

    @Option(help: "The control socket (default: [control] socket from the config).")
    var socket: String?

    @Option(help: "The config file that names the socket.")
    var config: String?

    func run() throws {
        let line = words.joined(separator: " ")
        // Check the request locally first: a typo gets the same message without a round trip.
        // Stream requests: `pairing-code` is a one-line request; `subscribe` streams forever, which
        // is for socket clients (companions), not for ctl.
        switch ControlProtocol.parseStreamRequest(line) {
        case .some(.success(.subscribe)):
            printError("bikecomputer ctl: subscribe streams the ride until the client leaves; connect to the socket directly (docs/companion.md)")
            throw ExitCode(64)
        case .some(.failure(let e)):
            printError("bikecomputer ctl: \(e.description)")
            throw ExitCode(64)
        case .some(.success(.pairingCode)):
            break
        case nil:
            if case .failure(let e) = ControlProtocol.parse(line) {
                printError("bikecomputer ctl: \(e.description)")
                throw ExitCode(64)
            }
        }
        let path: String
        if let socket {
            path = socket
        } else {
            do { path = try ConfigFile.load(path: config).0.control.socket } catch {
                printError(error.description)
                throw ExitCode(2)
            }
        }
        let reply: String
        do {
            reply = try ControlSocketClient.request(line, path: path)
        } catch {
            var hint = "is bikecomputer running? (systemctl status bikecomputer)"
            if error.isPermissionDenied { hint = "the socket is owner-only (mode 0600): run as the bikecomputer service user, e.g. `sudo -u bike bikecomputer ctl ...`" }
            printError("bikecomputer ctl: cannot reach \(path): \(error.message); \(hint)")
            throw ExitCode(2)
        }
        let (ok, body) = ControlProtocol.parseReply(reply)
        if ok, let why = ControlProtocol.notDurableReason(reply), body.contains(DeviceRuntime.rideFileNotSavedMessage) {
            // The ride ended (the journal holds it) but its file is not on the card: exit 3.
            print(body)
            printError("bikecomputer ctl: the ride ended, but its file is not saved (\(why))")
            throw ExitCode(3)
        } else if ok, let why = ControlProtocol.notDurableReason(reply) {
            // Done, but a power cut now could lose it: say so, and let scripts tell (exit 3).
            print(body)
            printError("bikecomputer ctl: done, but not yet durable on the card (\(why)); a power cut now could undo it")
            throw ExitCode(3)
        } else if ok {
            print(body)
        } else {
            printError(body)
            throw ExitCode(1)
        }
    }
}
