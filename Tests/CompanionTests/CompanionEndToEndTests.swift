import AppCore
import BoardIO
import Control
import Device
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import RideModel
import Testing

/// The real pieces end to end: an app core ride behind a real `ControlSocketServer` with the
/// `ControlStream` (the runtime's wiring, docs/companion.md), followed by the real
/// `bikecompanion` process, used over HTTP as a phone would. Checks that the companion reads
/// the stream this project's device writes, and that the device stays the source of truth.
struct CompanionEndToEndTests {
    /// bikecompanion beside the test bundle (both in the build's bin directory).
    static func companionBinary() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        var dir = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        while !dir.isEmpty && !dir.hasSuffix("/debug") && !dir.hasSuffix("/release") { dir = (dir as NSString).deletingLastPathComponent }
        let p = dir + "/bikecompanion"
        return FileManager.default.isExecutableFile(atPath: p) ? p : nil
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func http(_ method: String, _ url: String, _ body: [String: Any]? = nil, token: String? = nil) async throws -> (Int, [String: Any]) {
        var req = URLRequest(url: URL(string: url)!)
        req.httpMethod = method
        req.timeoutInterval = 10
        if let body { req.httpBody = try JSONSerialization.data(withJSONObject: body) }
        if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, resp) = try await URLSession.shared.data(for: req)
        let obj = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((resp as? HTTPURLResponse)?.statusCode ?? 0, obj)
    }

    @Test func phoneFollowsAndControlsARealStream() async throws {
        guard let binary = Self.companionBinary() else {
            Issue.record("bikecompanion is not built beside the tests: run `swift build` first")
            return
        }
        let s = try StreamServerHarness("e2e")
        let code = LockedBox<String?>(nil)
        let state = LockedBox<String>("idle")
        s.onPairingCode = { code.value = $0 }
        // The device's loop on its own thread: the control socket and a fast 1 Hz tick.
        let device = UncheckedBox(s)
        let stop = ManagedFlag()
        _ = s.loop.scheduleRepeating("tick", everyMs: 150) {
            device.value.h.run(seconds: 1)
            state.value = device.value.h.core.state.description
        }
        let finished = ManagedFlag()
        let loopThread = Thread {
            while !stop.value { try? device.value.loop.runOnce(maxWaitMs: 20) }
            finished.value = true
        }
        loopThread.start()

        let port = Self.freePort()
        let config = s.dir + "/config.toml"
        try """
        [control]
        socket = "\(s.path)"
        [storage]
        data_dir = "\(s.dir)/data"
        [companion]
        enabled = true
        listen = "127.0.0.1:\(port)"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let proc = Process()
        proc.executableURL = URL(fileURLWithPath: binary)
        proc.arguments = ["--config", config]
        proc.standardOutput = FileHandle.nullDevice
        try proc.run()
        var failure: (any Error)?
        do {
            try await exercise(base: "http://127.0.0.1:\(port)", code: code, state: state, device: device)
        } catch {
            failure = error
        }
        proc.terminate()
        proc.waitUntilExit()
        stop.value = true
        while !finished.value { try await Task.sleep(for: .milliseconds(10)) }
        if let failure { throw failure }
    }

    func exercise(base: String, code: LockedBox<String?>, state: LockedBox<String>, device: UncheckedBox<StreamServerHarness>) async throws {

        var up = false
        for _ in 0..<100 where !up {
            if let (status, _) = try? await Self.http("GET", base + "/api/session") { up = status == 401 } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(up, "bikecompanion did not come up")

        // Pairing: the unit (our device) was asked to show the code.
        let (rs, _) = try await Self.http("POST", base + "/api/pair/request")
        #expect(rs == 200)
        let shown = try #require(code.value, "the device got no pairing-code request")
        #expect(shown.count == 6)
        let (ps, pj) = try await Self.http("POST", base + "/api/pair", ["code": shown])
        #expect(ps == 200)
        let token = try #require(pj["token"] as? String)
        #expect(code.value == nil, "the code must be cleared from the unit after pairing")

        // Start from the phone: the reply is the device's own.
        let (_, start) = try await Self.http("POST", base + "/api/command", ["type": "command", "command": "start"], token: token)
        #expect(start["ok"] as? Bool == true, "\(start)")
        #expect(start["state"] as? String == "prepared", "\(start)")
        // The view follows the device: running after the countdown, the timer advancing.
        var view: [String: Any] = [:]
        for _ in 0..<100 {
            (_, view) = try await Self.http("GET", base + "/api/state", token: token)
            if view["state"] as? String == "running", (view["timer_ms"] as? Int ?? 0) >= 2_000 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(view["state"] as? String == "running", "\(view)")
        #expect((view["timer_ms"] as? Int ?? 0) >= 2_000)
        #expect(view["metrics"] is [String: Any] && view["sensors"] is [String: Any])

        // A refusal passes through unchanged.
        let (_, again) = try await Self.http("POST", base + "/api/command", ["type": "command", "command": "start"], token: token)
        #expect(again["ok"] as? Bool == false)
        #expect((again["message"] as? String ?? "").contains("ride already in progress"), "\(again)")

        // Pause from the phone; the device's state changes, and so does the view.
        let (_, pause) = try await Self.http("POST", base + "/api/command", ["type": "command", "command": "pause"], token: token)
        #expect(pause["ok"] as? Bool == true && pause["state"] as? String == "paused", "\(pause)")
        for _ in 0..<20 where state.value != "paused" { try await Task.sleep(for: .milliseconds(100)) }
        #expect(state.value == "paused", "the device itself must be paused")
        for _ in 0..<50 {
            (_, view) = try await Self.http("GET", base + "/api/state", token: token)
            if view["state"] as? String == "paused" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(view["state"] as? String == "paused", "\(view)")

        // Water from the phone is a marker in the ride.
        let (_, water) = try await Self.http("POST", base + "/api/command", ["type": "marker", "kind": "water", "value": 250], token: token)
        #expect(water["ok"] as? Bool == true, "\(water)")
        #expect(water["request"] as? String == "marker water 250")
    }
}

final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var v: T
    init(_ v: T) { self.v = v }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return v }
        set { lock.lock(); v = newValue; lock.unlock() }
    }
}
