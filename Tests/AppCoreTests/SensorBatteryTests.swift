import AppCore
import RideModel
import Testing

/// A sensor battery under 15 % is an alert when a ride starts; batteries are on the screen value
/// for the idle screen and `ctl status`.
struct SensorBatteryTests {
    /// Starts a ride with the given batteries (nil: the sensor never said) and returns the core
    /// once the ride runs, and the alerts emitted on the way.
    static func startRide(_ batteries: [SensorRole: Int?]) -> (AppCore, [Alert]) {
        var core = AppCore(randomSeed: 5)
        var now = MonotonicInstant(milliseconds: 0)
        var alerts: [Alert] = []
        func feed(_ input: AppInput) {
            core.handle(input)
            while let e = core.drainEffect() { if case .alert(let a) = e { alerts.append(a) } }
        }
        for role in SensorRole.allCases {
            feed(.sensor(SensorStatus(role, .connected, batteryPercent: batteries[role] ?? nil), at: now))
        }
        feed(.command(.start, at: now))
        for _ in 0..<4 {
            now = now.advanced(byMs: 1_000)
            feed(.tick(now))
        }
        return (core, alerts)
    }

    @Test func aBatteryUnder15PercentIsAnAlertAtTheStart() {
        let (core, alerts) = Self.startRide([.heartRate: 12, .power: 60])
        #expect(core.state == .running)
        #expect(core.screen.overlay == .lowSensorBattery(.heartRate, percent: 12))
        #expect(alerts == [.lowSensorBattery(.heartRate, percent: 12)])
        #expect(Alert.lowSensorBattery(.heartRate, percent: 12).sounds)
    }

    @Test func theWeakestBatteryIsTheOneShown() {
        let (core, _) = Self.startRide([.heartRate: 12, .power: 8, .speed: 14])
        #expect(core.screen.overlay == .lowSensorBattery(.power, percent: 8))
    }

    @Test(arguments: [15, 16, 100])
    func fifteenPercentAndAboveIsNoAlert(percent: Int) {
        let (core, alerts) = Self.startRide([.heartRate: percent, .power: nil])
        #expect(core.state == .running)
        #expect(core.screen.overlay == nil)
        #expect(alerts.isEmpty)
    }

    @Test func batteriesAreKeptOnTheScreenValueAndALaterStatusWithoutOneKeepsTheLast() {
        var core = AppCore(randomSeed: 1)
        core.handle(.sensor(SensorStatus(.heartRate, .connected, batteryPercent: 40), at: .zero))
        #expect(core.screen.sensorBatteryPercent[Int(SensorRole.heartRate.rawValue)] == 40)
        core.handle(.sensor(SensorStatus(.heartRate, .stale), at: MonotonicInstant(milliseconds: 500)))
        #expect(core.screen.sensorBatteryPercent[Int(SensorRole.heartRate.rawValue)] == 40)
        #expect(core.screen.sensorBatteryPercent[Int(SensorRole.power.rawValue)] == nil)
    }

    @Test func noAlertWhileRidingWhenABatteryReportComesLate() {
        var (core, _) = Self.startRide([:])
        core.handle(.sensor(SensorStatus(.heartRate, .connected, batteryPercent: 5), at: MonotonicInstant(milliseconds: 4_500)))
        #expect(core.screen.overlay == nil, "the alert is for the start of a ride")
        #expect(core.screen.sensorBatteryPercent[Int(SensorRole.heartRate.rawValue)] == 5)
    }
}
