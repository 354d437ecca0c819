import Testing
@testable import Simulation

/// The synthetic ride's numbers must hang together: a rider who reads them would believe them.
struct SyntheticRideTests {
    @Test func coherentPhysics() {
        var r = SyntheticRide(seed: 3)
        var maxSpeed = 0.0, sawStop = false, hrLagged = false
        var lastHR = r.heartRateBpm
        var previousDistance = 0.0
        for s in 1...SyntheticRide.workoutLengthS {
            r.advance(toMs: Int64(s) * 1000)
            #expect(r.distanceM >= previousDistance, "distance never decreases")
            previousDistance = r.distanceM
            maxSpeed = max(maxSpeed, r.speedMps)
            if r.blockName == "stop" && r.speedMps == 0 { sawStop = true; #expect(r.cadenceRpm == 0 && r.powerW == 0) }
            if r.powerW > 0 && r.speedMps > 1 { #expect(r.cadenceRpm >= 50 && r.cadenceRpm <= 115) }
            #expect(abs(r.heartRateBpm - lastHR) < 3, "heart rate moves smoothly (lags effort)")
            if r.blockName == "interval 1" && r.heartRateBpm < 160 { hrLagged = true }
            lastHR = r.heartRateBpm
        }
        #expect(sawStop)
        #expect(hrLagged, "at the start of the first interval HR is still low")
        #expect(maxSpeed > 9 && maxSpeed < 20, "road speeds, m/s: \(maxSpeed)")
        // Wheel revolutions and distance agree through the circumference.
        #expect(abs(r.wheelRevolutions * r.wheelCircumferenceM - r.distanceM) < 1e-6 * r.distanceM + 1e-9)
        let avgSpeed = r.distanceM / Double(SyntheticRide.workoutLengthS)
        #expect(avgSpeed > 6 && avgSpeed < 12, "average \(avgSpeed) m/s")
    }

    @Test func sameSeedSameRide() {
        var a = SyntheticRide(seed: 11), b = SyntheticRide(seed: 11), c = SyntheticRide(seed: 12)
        a.advance(toMs: 600_000); b.advance(toMs: 600_000); c.advance(toMs: 600_000)
        #expect(a.distanceM == b.distanceM && a.heartRateBpm == b.heartRateBpm)
        #expect(a.distanceM != c.distanceM)
    }
}
