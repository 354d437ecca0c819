import ArgumentParser
import BoardIO
import Device
import RideFiles

/// `rides show ID --plot FILE.svg`: the ride's channels over time as SVG (`RidePlot`).
///
/// SVG only: every browser and image viewer opens it, and it needs nothing on the board. PNG
/// would need a rasterizer (librsvg/cairo, ImageMagick), which pulls in cairo, pango,
/// fontconfig and X11 libraries: a desktop stack this project keeps off the unit.
func validatePlotPath(_ path: String?) throws {
    guard let path else { return }
    let lower = path.lowercased()
    if lower.hasSuffix(".png") {
        throw ValidationError("--plot writes SVG only (no PNG: it would need a desktop graphics stack on the unit); use \(path.dropLast(4)).svg and open it in a browser, or convert it on a desktop (rsvg-convert, inkscape)")
    }
    guard lower.hasSuffix(".svg") else { throw ValidationError("--plot needs a file name ending in .svg, e.g. --plot ride.svg") }
}

/// Writes the plot of ride `r` (from its FIT file) atomically to `path`, or fails saying why.
func writePlot(_ r: RideEntry, _ lib: RideLibrary, to path: String) throws {
    let bytes = try orExit { try lib.bytes(r, .fit) }
    let file: FITFile
    do { file = try FITFile(bytes: bytes) } catch { throw CommandFailure("\(lib.path(r, .fit)): \(error.description)") }
    let svg = RidePlot.svg(file, title: "Ride of \(r.startText) UTC (\(r.rideID))")
    do { try AtomicFiles.write(path, Array(svg.utf8)) } catch {
        throw CommandFailure("cannot write the plot \(path): \(error); check the directory exists and is writable")
    }
    print("plot:     \(path) (\(svg.utf8.count) bytes; open it in a browser)")
}
