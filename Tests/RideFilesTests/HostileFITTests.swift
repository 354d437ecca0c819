import RideFiles
import Testing
import TestSupport

/// The FIT reader's bounds hold for every kind of message header (issue 27).
@Suite struct HostileFITTests {
    /// One definition without fields, then `count` one-byte data messages: compressed-timestamp
    /// headers (0x80: local type 0, offset 0) or normal ones (0x00).
    static func oneByteMessages(_ count: Int, compressed: Bool) -> [UInt8] {
        var fit = FITBytes()
        fit.define(0, global: 20, [])
        fit.data += [UInt8](repeating: compressed ? 0x80 : 0x00, count: count)
        return fit.file()
    }

    @Test(arguments: [true, false])
    func theMessageLimitHoldsForEveryHeader(compressed: Bool) throws {
        let limit = 1_000
        let atLimit = try FITFile(bytes: Self.oneByteMessages(limit, compressed: compressed), messagesMax: limit)
        #expect(atLimit.messages.count == limit)
        #expect(throws: RideFileError.self) {
            try FITFile(bytes: Self.oneByteMessages(limit + 1, compressed: compressed), messagesMax: limit)
        }
        // Read with `recover`, the messages before the limit come back and the damage says why.
        let recovered = try FITFile(bytes: Self.oneByteMessages(limit + 1, compressed: compressed), recover: true, messagesMax: limit)
        #expect(recovered.messages.count == limit)
        #expect(recovered.damage?.contains("more than \(limit) messages") == true)
    }

    /// The default limit: a file of one-byte compressed-timestamp messages (2 MB) is refused
    /// instead of growing a list of two million messages and more. Before issue 27 the
    /// compressed-timestamp header skipped the check and this file was read whole.
    @Test func theDefaultLimitRefusesAFileOfTinyCompressedMessages() {
        let bytes = Self.oneByteMessages(FITFile.messagesMax + 1, compressed: true)
        #expect(throws: RideFileError.self) { try FITFile(bytes: bytes) }
    }
}
