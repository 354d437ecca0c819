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

    /// Issue 27: the ride library belongs to the app's service user. A symbolic link named like
    /// a ride (to /etc/shadow, say), a link in place of the rides directory, or a FIFO must not
    /// reach the image: they are left off (and said), the rest of the image is built.
    @Test func linksAndSpecialFilesNamedLikeRidesStayOffTheImage() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fatlinks-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let rides = dir.appendingPathComponent("rides")
        try FileManager.default.createDirectory(at: rides, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let marker = "SECRET-\(UInt64.random(in: 0...UInt64.max))"
        let secret = dir.appendingPathComponent("shadow")
        try Data(marker.utf8).write(to: secret)
        let ride = rides.appendingPathComponent("2026-11-22-083000_a.fit")
        try Data("a real ride".utf8).write(to: ride)
        let link = rides.appendingPathComponent("2026-11-22-093000_b.fit")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: secret.path)
        let fifo = rides.appendingPathComponent("2026-11-22-103000_c.fit")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let linkedDir = dir.appendingPathComponent("linked-rides")
        try FileManager.default.createSymbolicLink(atPath: linkedDir.path, withDestinationPath: rides.path)
        let viaLinkedDir = linkedDir.appendingPathComponent("2026-11-22-083000_a.fit")
        let size = Int64(marker.utf8.count)
        let files = [("a", ride.path), ("b", link.path), ("c", fifo.path), ("d", viaLinkedDir.path)].map {
            FatImage.File(imagePath: "Activities/\($0.0).fit", sourcePath: $0.1, sizeBytes: size)
        }
        let image = dir.appendingPathComponent("usb.img").path
        let skipped = try FatImage.build(at: image, files: files)
        #expect(Set(skipped.map(\.imagePath)) == ["Activities/b.fit", "Activities/c.fit", "Activities/d.fit"], "\(skipped)")
        #expect(skipped.allSatisfy { !$0.reason.isEmpty })
        let listing = try Subprocess.run(["mdir", "-i", image, "-b", "::/Activities"])
        #expect(listing.output.lowercased().contains("a.fit"))
        for name in ["b.fit", "c.fit", "d.fit"] { #expect(!listing.output.lowercased().contains(name), "\(name) is not on the image") }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: image))
        #expect(bytes.range(of: Data(marker.utf8)) == nil, "the linked file's bytes are nowhere on the image")
        #expect(bytes.range(of: Data("a real ride".utf8)) != nil)
    }

    @Test func sizeLeavesRoomForTablesAndDirectories() {
        let files = [FatImage.File(imagePath: "a", sourcePath: "/x", sizeBytes: 100 << 20)]
        let size = FatImage.sizeBytes(for: files)
        #expect(size >= (100 << 20) + (25 << 20))
        #expect(size % (1 << 20) == 0)
        #expect(FatImage.sizeBytes(for: []) == 8 << 20)
    }
}
