import Foundation
import Testing
import BoardIO

/// The USB image is checked with independent tools: fsck.fat must find it clean and mtools must
/// return every file byte for byte.
struct FatImageTests {
    @Test func imageIsCleanAndHoldsExactBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fatimage-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var files: [FatImage.File] = []
        var rng = SystemRandomNumberGenerator()
        for (i, size) in [1, 4096, 300_001].enumerated() {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let src = dir.appendingPathComponent("src\(i).fit")
            try Data(bytes).write(to: src)
            files.append(FatImage.File(imagePath: "Activities/2026-11-22-08\(i)0_ride\(i).fit", sourcePath: src.path, sizeBytes: Int64(size)))
        }
        let image = dir.appendingPathComponent("usb.img").path
        try FatImage.build(at: image, files: files)
        #expect(!FileManager.default.fileExists(atPath: image + ".tmp"))

        let fsck = try Subprocess.run(["fsck.fat", "-n", image])
        #expect(fsck.succeeded, "fsck.fat -n: \(fsck.output) \(fsck.error)")
        let listing = try Subprocess.run(["mdir", "-i", image, "-b", "::/Activities"])
        for f in files {
            let name = f.imagePath.split(separator: "/").last!.lowercased()
            #expect(listing.output.lowercased().contains(name), "mdir lists \(name)")
            let out = dir.appendingPathComponent("back-\(name)")
            let copy = try Subprocess.run(["mcopy", "-i", image, "::/" + f.imagePath, out.path])
            #expect(copy.succeeded, "\(copy.error)")
            #expect(try Data(contentsOf: out) == Data(contentsOf: URL(fileURLWithPath: f.sourcePath)), "\(name) round-trips byte for byte")
        }
    }

    @Test func sizeLeavesRoomForTablesAndDirectories() {
        let files = [FatImage.File(imagePath: "a", sourcePath: "/x", sizeBytes: 100 << 20)]
        let size = FatImage.sizeBytes(for: files)
        #expect(size >= (100 << 20) + (25 << 20))
        #expect(size % (1 << 20) == 0)
        #expect(FatImage.sizeBytes(for: []) == 8 << 20)
    }
}
