import RideModel
import Testing

/// The sensor vocabulary is one table: every kind has its own word, label and ANT+ device type; a
/// search's found bits name one kind each; what a kind is paired for is what it decides.
@Suite struct SensorVocabularyTests {
    @Test func everyKindIsDistinctAndRoundTrips() {
        let kinds = SensorKind.allCases
        #expect(Set(kinds.map(\.rawValue)).count == kinds.count)
        #expect(Set(kinds.map(\.label)).count == kinds.count)
        #expect(Set(kinds.map(\.antDeviceType)).count == kinds.count)
        for k in kinds {
            #expect(SensorKind(rawValue: k.description) == k)
            #expect(SensorKind(antDeviceType: k.antDeviceType) == k)
            #expect(!k.roles.isEmpty && k.roles.allSatisfy(k.statusRoles.contains), "\(k): what it is paired for, it decides")
            #expect(k.bleMeasurements.count == k.bleMeasurementUUIDs.count && !k.bleMeasurements.isEmpty)
            #expect(k.transports.contains(.ant) || k.transports.contains(.ble))
        }
        #expect(SensorKind(antDeviceType: 0) == nil && SensorKind(rawValue: "rocket") == nil)
    }

    @Test func foundServiceBitsNameOneKindEach() {
        let searchKinds = SensorKind.allCases.filter(\.isSearchKind)
        let bits = searchKinds.map(\.foundServiceBit)
        #expect(Set(bits).count == bits.count && bits.allSatisfy { $0.nonzeroBitCount == 1 })
        for k in searchKinds { #expect(SensorKind(foundServices: k.foundServiceBit) == k) }
        // The wire's bits as the bridge protocol documents them.
        #expect(SensorKind.heartRate.foundServiceBit == 1 && SensorKind.power.foundServiceBit == 2 && SensorKind.speedCadence.foundServiceBit == 4)
        // A CSC device is found as speed and cadence; a trainer advertising power and CSC as a power meter.
        #expect(!SensorKind.speed.isSearchKind && !SensorKind.cadence.isSearchKind)
        #expect(SensorKind(foundServices: SensorKind.power.foundServiceBit | SensorKind.speedCadence.foundServiceBit) == .power)
        #expect(SensorKind(foundServices: 0) == nil && SensorKind(foundServices: 0x8000) == nil)
    }

    @Test func sigUUIDsAreTheBaseUUID() {
        #expect(SensorKind.sigUUID(0x2A37) == "00002a37-0000-1000-8000-00805f9b34fb")
        #expect(SensorKind.heartRate.bleService == "0000180d-0000-1000-8000-00805f9b34fb")
    }
}
