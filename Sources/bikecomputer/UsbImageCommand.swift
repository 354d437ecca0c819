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

    func run() throws {
        let lib = data.library()
        let rides = try orExit { try lib.list() }
        var files: [FatImage.File] = []
        for r in rides {
            for f in gpx ? [RideFileFormat.fit, .gpx] : [.fit] where r.formats.contains(f) {
                guard let size = lib.size(r, f) else { continue }
                files.append(FatImage.File(imagePath: "Activities/" + r.fileName(f), sourcePath: lib.path(r, f), sizeBytes: size))
            }
        }
        let skipped: [FatImage.Skipped]
        do { skipped = try FatImage.build(at: out, label: label, files: files) } catch {
            throw CommandFailure("cannot build \(out): \(error.description)")
        }
        for s in skipped { printError("bikecomputer usb-image: left off the drive: \(s)") }
        print("\(out): \(rides.count) rides, \(files.count - skipped.count) files" + (skipped.isEmpty ? "" : ", \(skipped.count) left off"))
    }
}
