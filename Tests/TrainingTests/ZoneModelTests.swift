import Testing
import RideModel
import Training

/// Zone boundaries per model against hand-computed values, the model preference order, and
/// refused configurations.
struct ZoneModelTests {
    @Test func percentOfMaxFromAge() throws {
        // age 30 ⇒ max 190 ⇒ 50/60/70/80/90 % = 95, 114, 133, 152, 171
        let z = try ZonesInForce.preferred(from: RiderProfile(age: 30))
        #expect(z.heartRate.zones.boundaries == [95, 114, 133, 152, 171])
        #expect(z.heartRate.source == .percentOfMax(maxHeartRateBpm: 190, estimatedFromAge: 30))
        #expect(z.power == nil)
        // Five zones from 50 %: the band below is Z0, and 95 bpm is the start of Z1.
        let c = z.heartRate.zones
        #expect(c.name(ofZone: 0) == "Z0" && c.name(ofZone: 1) == "Z1" && c.name(ofZone: 5) == "Z5")
        #expect(c.number(ofZone: c.zone(of: 95)) == 1)
        #expect(c.number(ofZone: c.zone(of: 171)) == 5)
        #expect(ZoneConfiguration.defaultHeartRate.number(ofZone: 0) == 1, "without a Z0 band zones count from 1")
    }

    @Test func measuredMaxWinsOverAgeAndRoundsHalvesUp() throws {
        // max 185: 92.5 → 93, 111, 129.5 → 130, 148, 166.5 → 167
        let z = try ZonesInForce.preferred(from: RiderProfile(age: 30, maxHeartRateBpm: 185))
        #expect(z.heartRate.zones.boundaries == [93, 111, 130, 148, 167])
        #expect(z.heartRate.source == .percentOfMax(maxHeartRateBpm: 185, estimatedFromAge: nil))
    }

    @Test func karvonenReserve() throws {
        // max 190, resting 50 ⇒ reserve 140: 50 + 70, 84, 98, 112, 126
        let z = try ZonesInForce.preferred(from: RiderProfile(age: 30, restingHeartRateBpm: 50))
        #expect(z.heartRate.zones.boundaries == [120, 134, 148, 162, 176])
        #expect(z.heartRate.source.name == "reserve")
        // resting 61, max 187 ⇒ reserve 126: 61 + 63, 75.6, 88.2, 100.8, 113.4 → 124, 137, 149, 162, 174
        let y = try ZonesInForce.preferred(from: RiderProfile(restingHeartRateBpm: 61, maxHeartRateBpm: 187))
        #expect(y.heartRate.zones.boundaries == [124, 137, 149, 162, 174])
    }

    @Test func frielLactateThreshold() throws {
        // LTHR 170: 81 % 137.7 → 138, 90 % 153, 94 % 159.8 → 160, 100 % 170, 103 % 175.1 → 175, 106 % 180.2 → 180
        let z = try ZonesInForce.preferred(from: RiderProfile(age: 40, lactateThresholdHeartRateBpm: 170))
        #expect(z.heartRate.zones.boundaries == [138, 153, 160, 170, 175, 180])
        #expect(z.heartRate.zones.zoneCount == 7)
        #expect(z.heartRate.zones.name(ofZone: 4) == "Z5a")
        #expect(z.heartRate.source == .percentOfLactateThreshold(lthrBpm: 170))
    }

    @Test func cogganFromFTP() throws {
        // FTP 250: 137.5 → 138, 187.5 → 188, 225, 262.5 → 263, 300, 375
        let z = try ZonesInForce.preferred(from: RiderProfile(ftpW: 250))
        #expect(z.power?.zones.boundaries == [138, 188, 225, 263, 300, 375])
        #expect(z.power?.zones.zoneCount == 7)
        #expect(z.power?.source == .ftp(ftpW: 250))
        #expect(z.heartRate.source == .builtInDefault, "no heart-rate figures: the built-in default")
        // FTP 283: 155.65 → 156, 212.25 → 212, 254.7 → 255, 297.15 → 297, 339.6 → 340, 424.5 → 425
        #expect(try ZoneFormulas.coggan(ftpW: 283).boundaries == [156, 212, 255, 297, 340, 425])
    }

    @Test func defaultWhenNothingConfigured() throws {
        let z = try ZonesInForce.preferred(from: RiderProfile())
        #expect(z.heartRate.zones.boundaries == [91, 114, 136, 158])
        #expect(z.heartRate.source == .builtInDefault)
        #expect(z.power == nil)
    }

    @Test func explicitZonesWin() throws {
        let hr = try ZoneConfiguration(quantity: .heartRate, boundaries: [100, 130, 150])
        let pw = try ZoneConfiguration(quantity: .power, boundaries: [150, 250])
        let z = try ZonesInForce.preferred(from: RiderProfile(age: 30, lactateThresholdHeartRateBpm: 170, ftpW: 250,
                                                               explicitHeartRateZones: hr, explicitPowerZones: pw))
        #expect(z.heartRate == SourcedZones(hr, source: .explicit))
        #expect(z.power == SourcedZones(pw, source: .explicit))
    }

    @Test func preferenceOrderWithoutARequestedModel() throws {
        // LTHR beats reserve beats percent-of-max.
        let all = RiderProfile(age: 30, restingHeartRateBpm: 50, lactateThresholdHeartRateBpm: 170)
        #expect(try ZonesInForce.preferred(from: all).heartRate.source.name == "lthr")
        var noLT = all
        noLT.lactateThresholdHeartRateBpm = nil
        #expect(try ZonesInForce.preferred(from: noLT).heartRate.source.name == "reserve")
        var restOnly = RiderProfile(restingHeartRateBpm: 50)
        #expect(try ZonesInForce.preferred(from: restOnly).heartRate.source == .builtInDefault, "resting HR alone gives no max")
        restOnly.age = 30
        #expect(try ZonesInForce.preferred(from: restOnly).heartRate.source.name == "reserve")
    }

    @Test func requestedModelIsUsedOrRefused() throws {
        let p = RiderProfile(age: 30, restingHeartRateBpm: 50, lactateThresholdHeartRateBpm: 170, heartRateModel: .percentOfMax)
        #expect(try ZonesInForce.preferred(from: p).heartRate.zones.boundaries == [95, 114, 133, 152, 171])
        #expect(throws: ZoneModelError.missing(model: .heartRateReserve, need: "a resting heart rate")) {
            try ZonesInForce.preferred(from: RiderProfile(age: 30, heartRateModel: .heartRateReserve))
        }
        #expect(throws: ZoneModelError.missing(model: .percentOfLactateThreshold, need: "a lactate threshold heart rate")) {
            try ZonesInForce.preferred(from: RiderProfile(age: 30, heartRateModel: .percentOfLactateThreshold))
        }
        #expect(throws: ZoneModelError.missing(model: .percentOfMax, need: "a max heart rate or an age")) {
            try ZonesInForce.preferred(from: RiderProfile(heartRateModel: .percentOfMax))
        }
    }

    @Test func badProfilesAreRefusedWithWhatToDo() {
        #expect(throws: ZoneModelError.ageOutOfRange(-3)) { try ZonesInForce.preferred(from: RiderProfile(age: -3)) }
        #expect(throws: ZoneModelError.restingNotBelowMax(resting: 190, max: 180)) {
            try ZonesInForce.preferred(from: RiderProfile(restingHeartRateBpm: 190, maxHeartRateBpm: 180))
        }
        #expect(throws: ZoneModelError.ftpOutOfRange(0)) { try ZonesInForce.preferred(from: RiderProfile(ftpW: 0)) }
        #expect(throws: ZoneModelError.heartRateOutOfRange(name: "max heart rate", value: 400)) {
            try ZonesInForce.preferred(from: RiderProfile(maxHeartRateBpm: 400))
        }
        #expect(ZoneModelError.ageOutOfRange(-3).description.contains("give an age between"))
        #expect(ZoneModelError.missing(model: .heartRateReserve, need: "a resting heart rate").description.contains("set it or choose another model"))
    }

    /// Every age and every whole FTP: boundaries equal the integer-arithmetic rounding of
    /// reference × percent / 100 (halves up), and strictly increase.
    @Test func roundingMatchesIntegerArithmeticForAllInputs() throws {
        for age in ZoneFormulas.ageRange {
            let max = 220 - age
            let expected = [50, 60, 70, 80, 90].map { Double((max * $0 + 50) / 100) }
            let got = try ZonesInForce.preferred(from: RiderProfile(age: age)).heartRate.zones.boundaries
            #expect(got == expected, "age \(age)")
        }
        for ftp in stride(from: 20, through: 2_500, by: 1) {
            let expected = [55, 75, 90, 105, 120, 150].map { Double((ftp * $0 + 50) / 100) }
            let got = try ZoneFormulas.coggan(ftpW: Double(ftp)).boundaries
            if got != expected { Issue.record("FTP \(ftp): \(got) != \(expected)"); return }
        }
        for lthr in 100...220 {
            let expected = [81, 90, 94, 100, 103, 106].map { Double((lthr * $0 + 50) / 100) }
            #expect(try ZoneFormulas.percentOfLactateThreshold(lthrBpm: Double(lthr)).boundaries == expected, "LTHR \(lthr)")
        }
    }

    @Test func invalidConfigurationsAreRefused() {
        #expect(throws: ZoneConfigurationError.empty) { try ZoneConfiguration(quantity: .heartRate, boundaries: []) }
        #expect(throws: ZoneConfigurationError.notIncreasing(index: 2, previous: 140, value: 130)) {
            try ZoneConfiguration(quantity: .heartRate, boundaries: [100, 140, 130])
        }
        #expect(throws: ZoneConfigurationError.notIncreasing(index: 1, previous: 100, value: 100)) {
            try ZoneConfiguration(quantity: .power, boundaries: [100, 100])
        }
        #expect(throws: ZoneConfigurationError.negative(-5)) { try ZoneConfiguration(quantity: .power, boundaries: [-5, 100]) }
        #expect(throws: ZoneConfigurationError.notFinite(index: 1)) { try ZoneConfiguration(quantity: .power, boundaries: [5, .nan]) }
        #expect(throws: ZoneConfigurationError.unsupportedQuantity(.speed)) { try ZoneConfiguration(quantity: .speed, boundaries: [5]) }
        #expect(throws: ZoneConfigurationError.namesMismatch(names: 2, zones: 3)) {
            try ZoneConfiguration(quantity: .power, boundaries: [100, 200], names: ["easy", "hard"])
        }
        #expect(throws: ZoneConfigurationError.tooMany(count: 10, max: 9)) {
            try ZoneConfiguration(quantity: .power, boundaries: (1...10).map { Double($0 * 10) })
        }
        #expect(ZoneConfigurationError.notIncreasing(index: 2, previous: 140, value: 130).description.contains("strictly increasing"))
        #expect(ZoneConfigurationError.negative(-5).description.contains("-5"))
    }

    @Test func zoneLookupAndBounds() {
        let z = ZoneConfiguration.defaultHeartRate
        #expect(z.zone(of: 90.9) == 0)
        #expect(z.zone(of: 91) == 1, "a value on a boundary belongs to the zone above")
        #expect(z.zone(of: 157.9) == 3)
        #expect(z.zone(of: 158) == 4)
        #expect(z.lowerBound(ofZone: 0) == 0 && z.upperBound(ofZone: 0) == 91)
        #expect(z.lowerBound(ofZone: 2) == 114 && z.upperBound(ofZone: 2) == 136)
        #expect(z.lowerBound(ofZone: 4) == 158 && z.upperBound(ofZone: 4) == .infinity)
        #expect(z.name(ofZone: 2) == "Z3")
    }
}
