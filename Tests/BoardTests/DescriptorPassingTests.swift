import TestSupport
import BoardIO
import Foundation
import Glibc
import Testing

/// A descriptor passed with a packet over the bridge's SOCK_SEQPACKET connection (SCM_RIGHTS):
/// how the bridge hands the app BlueZ's notification sockets.
struct DescriptorPassingTests {
    /// A connected pair through a real listener, as the bridge and the app have it.
    func pair(_ tag: String) throws -> (bridge: SeqPacketConnection, app: SeqPacketConnection, listener: SeqPacketListener, dir: String) {
        let dir = TestPaths.tempDir(tag)
        let listener = try SeqPacketListener.listen(path: dir + "/bridge.sock")
        let bridge = try SeqPacketConnection.connect(path: dir + "/bridge.sock")
        var app: SeqPacketConnection?
        for _ in 0..<100 where app == nil {
            app = try listener.accept()
            if app == nil { usleep(1000) }
        }
        return (bridge, try #require(app), listener, dir)
    }

    func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func aPassedSocketCarriesWhatIsWrittenIntoItsOtherEnd() throws {
        let (bridge, app, listener, dir) = try pair("fdpass")
        defer { bridge.close(); app.close(); listener.close(); try? FileManager.default.removeItem(atPath: dir) }
        let (bluez, notify) = socketPair()
        defer { Glibc.close(bluez) }
        try bridge.send([2, 10, 1, 2, 3], passing: FileDescriptor(rawValue: notify))
        Glibc.close(notify) // the sender's copy; the app's stays open
        var buffer = [UInt8](repeating: 0, count: 64)
        var passed: FileDescriptor?
        var lost = false
        let r = try buffer.withUnsafeMutableBytes { try app.receive(into: $0, descriptor: &passed, lost: &lost) }
        #expect(r == .data(count: 5, truncated: false))
        #expect(Array(buffer[0..<5]) == [2, 10, 1, 2, 3])
        #expect(!lost)
        let received = try #require(passed)
        defer { received.close() }
        #expect(fcntl(received.rawValue, F_GETFD) & FD_CLOEXEC != 0, "close-on-exec")
        // A notification written by "bluetoothd" is read by the app from the passed socket.
        let value: [UInt8] = [0x16, 0x88, 0x00, 0x04]
        #expect(value.withUnsafeBytes { Glibc.send(bluez, $0.baseAddress, $0.count, 0) } == 4)
        let notification = SeqPacketConnection(fd: received)
        var out = [UInt8](repeating: 0, count: 64)
        let n = try out.withUnsafeMutableBytes { try notification.receive(into: $0) }
        #expect(n == .data(count: 4, truncated: false) && Array(out[0..<4]) == value)
        // bluetoothd closing its end is the end of the notifications.
        Glibc.close(bluez)
        let end = try out.withUnsafeMutableBytes { try notification.receive(into: $0) }
        #expect(end == .closed)
    }

    @Test func aPacketWithoutADescriptorHasNone() throws {
        let (bridge, app, listener, dir) = try pair("fdnone")
        defer { bridge.close(); app.close(); listener.close(); try? FileManager.default.removeItem(atPath: dir) }
        try bridge.send([1, 2, 3])
        var buffer = [UInt8](repeating: 0, count: 2)
        var passed: FileDescriptor? = FileDescriptor(rawValue: 999)
        var lost = true
        let r = try buffer.withUnsafeMutableBytes { try app.receive(into: $0, descriptor: &passed, lost: &lost) }
        #expect(r == .data(count: 2, truncated: true), "a packet longer than the buffer is reported cut")
        #expect(passed == nil && !lost)
        let again = try buffer.withUnsafeMutableBytes { try app.receive(into: $0, descriptor: &passed, lost: &lost) }
        #expect(again == .wouldBlock)
    }
}
