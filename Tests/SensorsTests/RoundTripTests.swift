import TestSupport
import Testing
import RideModel
@testable import Sensors

/// Payloads synthesised from known values over long rides decode back to those values. Every
/// 16-bit event time wraps every 64 s (32 s for the CPS wheel time), and the revolution counters
/// start just below their wrap.
@Suite struct RoundTripTests {
    struct Segment { var cadenceRpm: Double; var speedMps: Double; var powerW: Int; var heartRateBpm: Double }

    @Test(arguments: [Profile.bleCyclingPower, .bleSpeedCadence, .antSpeedCadence])
    func longRideDecodesBackToTheValues(profile: Profile) throws {
        let seed: UInt64 = 0xB1CE_0000 + UInt64(profile.rawValue)
        var rng = SeededGenerator(seed: seed)
        // Counters start just below their wrap: 0xFFFFFF00 (32-bit wheel), 0xFF00 in 16 bits.
        var synth = PayloadSynthesizer(wheelCircumferenceMm: 2105, counterStart: 0xFFFF_FF00)
        var decoder = SensorDecoder(profile: profile, wheelCircumferenceMm: 2105)
        var nowMs: Int64 = 0
        var trueDistanceM = 0.0
        var checked = 0
        synth.advance(to: ms(0), cadenceRpm: 0, speedMps: 0, heartRateBpm: 0)
        // 40 segments of 20 s: 800 s, a dozen wraps of every 16-bit event time.
        for _ in 0..<40 {
            let seg = Segment(cadenceRpm: Double.random(in: 40...130, using: &rng), speedMps: Double.random(in: 2...16, using: &rng),
                              powerW: Int.random(in: 0...600, using: &rng), heartRateBpm: 120)
            for step in 0..<80 {  // 4 Hz
                nowMs += 250
                synth.advance(to: ms(nowMs), cadenceRpm: seg.cadenceRpm, speedMps: seg.speedMps, heartRateBpm: seg.heartRateBpm)
                trueDistanceM += seg.speedMps * 0.25
                let p: Payload = switch profile {
                case .bleCyclingPower: synth.cyclingPower(powerW: seg.powerW)
                case .bleSpeedCadence: synth.cscMeasurement()
                default: synth.antSpeedCadence()
                }
                let v = try decoder.decode(p, at: ms(nowMs))
                #expect(!v.has(.absurdValue) && !v.has(.inconsistentEvent), "seed \(seed) t \(nowMs): spike or inconsistent event on a smooth ride")
                // After 3 s in a segment, both rates come from events within it: within the event
                // time resolution (1/1024 s; 1/2048 s for the CPS wheel) of the true values.
                if step >= 12 {
                    let cadence = try #require(v.cadenceRpm, "seed \(seed) t \(nowMs)")
                    let speed = try #require(v.speedMps, "seed \(seed) t \(nowMs)")
                    #expect(abs(cadence - seg.cadenceRpm) / seg.cadenceRpm < 0.01, "seed \(seed) t \(nowMs): cadence \(cadence) vs \(seg.cadenceRpm)")
                    #expect(abs(speed - seg.speedMps) / seg.speedMps < 0.01, "seed \(seed) t \(nowMs): speed \(speed) vs \(seg.speedMps)")
                    if profile == .bleCyclingPower { #expect(v.powerW == Double(seg.powerW)) }
                    checked += 1
                }
                if let d = v.distanceM {
                    // Distance counts whole revolutions only: within two wheel turns of the truth.
                    #expect(abs(d - trueDistanceM) < 2 * 2.105 + 1e-9, "seed \(seed) t \(nowMs): distance \(d) vs \(trueDistanceM)")
                }
            }
        }
        #expect(checked == 40 * 68)
    }

    @Test func antPowerOnlyRoundTripsThroughWraps() throws {
        var rng = SeededGenerator(seed: 0xB1CE_0100)
        var synth = PayloadSynthesizer()
        var decoder = SensorDecoder(profile: .antBikePower)
        // 2000 events: the 8-bit event count wraps ~8 times, accumulated power ~20 times.
        for k in 0..<2000 {
            let w = Int.random(in: 0...900, using: &rng)
            let v = try decoder.decode(synth.antPowerOnly(powerW: w, cadenceRpm: 90), at: ms(Int64(k) * 250))
            if k > 0 { #expect(v.averagePowerW == Double(w), "event \(k)") }
        }
    }

    @Test func antHeartRateRRFromSynthesisedBeats() throws {
        var synth = PayloadSynthesizer()
        var decoder = SensorDecoder(profile: .antHeartRate)
        var rr: [Double] = []
        for k in 1...2400 {  // 10 minutes at 4 Hz, 150 bpm: the beat count wraps 5 times
            synth.advance(to: ms(Int64(k) * 250), cadenceRpm: 0, speedMps: 0, heartRateBpm: 150)
            let v = try decoder.decode(synth.antHeartRate(bpm: 150), at: ms(Int64(k) * 250))
            #expect(v.heartRateBpm == 150)
            for i in 0..<v.rrCount { rr.append(v.rrIntervalS(i)) }
        }
        #expect(rr.count > 1400)
        // The first interval runs from the synthesiser's start, not from a beat.
        #expect(rr.dropFirst().allSatisfy { abs($0 - 0.4) <= 1.0 / 1024 + 1e-9 })
    }
}
