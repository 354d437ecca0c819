import ArgumentParser
import BoardIO
import Device
import RideFiles

/// `bikecomputer usb-image --out PATH`: a FAT image of the ride library for the USB
/// mass-storage gadget (Activities/*.fit and *.gpx), built with mkfs.fat and mtools and renamed
/// into place, so the gadget never exposes half an image.
struct UsbImage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usb-image",
        abstract: "Build the FAT image the USB drive shows (Activities/*.fit, *.gpx).")

    @OptionGroup var data: DataDirectoryOption
    @Option(help: "Where to write the image (replaced atomically).") var out: String
    @Flag(inversion: .prefixedNo, help: "Also put each ride's GPX file on the drive.") var gpx = true
    @Option(help: "Volume label (at most 11 characters).") var label = "BIKECOMP"

    /// Builds again when the library changed while the image was built (a ride's file written, a
    /// ride re-dated or deleted meanwhile), at most this many times: systemd's path unit does not
    /// watch the library while the build it started runs, so a change then would be missed.
    static let buildsMax = 4

    func files(of lib: RideLibrary) throws -> (rides: Int, files: [FatImage.File]) {
        let rides = try orExit { try lib.list() }
        var files: [FatImage.File] = []
        for r in rides {
            for f in gpx ? [RideFileFormat.fit, .gpx] : [.fit] where r.formats.contains(f) {
                guard let size = lib.size(r, f) else { continue }
                files.append(FatImage.File(imagePath: "Activities/" + r.fileName(f), sourcePath: lib.path(r, f), sizeBytes: size))
            }
        }
        return (rides.count, files)
    }

    func run() throws {
        let lib = data.library()
        var (rides, files) = try self.files(of: lib)
        var skipped: [FatImage.Skipped] = []
        for build in 1...Self.buildsMax {
            do { skipped = try FatImage.build(at: out, label: label, files: files) } catch {
                throw CommandFailure("cannot build \(out): \(error.description)")
            }
            let now = try self.files(of: lib)
            if now.files == files { break }
            guard build < Self.buildsMax else {
                printError("bikecomputer usb-image: the ride library kept changing during \(build) builds; the image has it as the last build began (a later change rebuilds it)")
                break
            }
            (rides, files) = now
            printError("bikecomputer usb-image: the ride library changed while the image was built; building it again (\(build + 1) of at most \(Self.buildsMax))")
        }
        for s in skipped { printError("bikecomputer usb-image: left off the drive: \(s)") }
        print("\(out): \(rides) rides, \(files.count - skipped.count) files" + (skipped.isEmpty ? "" : ", \(skipped.count) left off"))
    }
}
