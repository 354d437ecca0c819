// The GPS and barometer inputs of the frame path (`bikebench --guard --gps`): the simulator's
// gpsd report lines (TPV every second, SKY every fifth) and BMP280 data registers of the same
// synthetic ride, encoded once up front beside the bridge frames, handed to the runtime as the
// board's components hand them on.
import Device
import RideModel
import Sensors
import Simulation

enum InputKind: UInt8 { case bridge, gpsdLine, barometer }

struct PositionStream {
    static let startUnixMs: Int64 = 1_790_000_000_000

    static var configuration: DataSourceConfiguration {
        SimulatedPositionFeed(seed: 3, gps: true, barometer: true).adding(to: FrameStream.configuration)
    }

    var gps: SimulatedGps
    let barometer = SimulatedBarometer()
    var gpsNextMs = SimulatedGps.phaseMs
    var barometerNextMs = SimulatedBarometer.phaseMs

    init(seed: UInt64) { gps = SimulatedGps(seed: seed) }

    var nextMs: Int64 { min(gpsNextMs, barometerNextMs) }

    mutating func append(atMs t: Int64, ride: inout SyntheticRide, into s: inout FrameStream) {
        ride.advance(toMs: t)
        if gpsNextMs == t {
            gpsNextMs += SimulatedGps.periodMs
            for line in gps.lines(unixMs: Self.startUnixMs + t, ride: ride) {
                s.bytes += Array(line.utf8)
                s.offsets.append(s.bytes.count)
                s.atMs.append(t)
                s.kinds.append(.gpsdLine)
            }
        } else {
            barometerNextMs += SimulatedBarometer.periodMs
            s.bytes += barometer.dataRegisters(altitudeM: ride.altitudeM)
            s.offsets.append(s.bytes.count)
            s.atMs.append(t)
            s.kinds.append(.barometer)
        }
    }
}
