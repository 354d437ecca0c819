import AppCore
import RideModel
import Testing

/// The Sensors screen's buttons: what each press selects or asks the device to do.
struct SensorsMenuTests {
    let t0 = MonotonicInstant(milliseconds: 10_000)
    let strap = SensorsMenu.Paired(id: "ble:C0:FF:EE:00:11:22", kind: .heartRate, name: "Strap", state: .connected, batteryPercent: 81)
    let meter = SensorsMenu.Paired(id: "ant:12345/11", kind: .power, state: .lost)

    func menu() -> SensorsMenu {
        var m = SensorsMenu()
        m.setPaired([strap, meter])
        return m
    }

    @Test func pageWalksThePairedSensorsThenSearchAndWraps() {
        var m = menu()
        #expect(m.rowCount == 3 && m.cursor == 0)
        #expect(m.press(.page, at: t0) == .nothing && m.cursor == 1)
        #expect(m.press(.page, at: t0) == .nothing && m.cursor == 2, "SEARCH")
        #expect(m.press(.page, at: t0) == .nothing && m.cursor == 0)
        #expect(m.press(.startPause, at: t0) == .close)
    }

    @Test func forgettingNeedsASecondLapPress() {
        var m = menu()
        _ = m.press(.page, at: t0)
        #expect(m.press(.lap, at: t0) == .nothing && m.page == .confirmForget(1))
        #expect(m.press(.page, at: t0) == .nothing && m.page == .list, "any other button keeps it")
        #expect(m.press(.lap, at: t0) == .nothing && m.page == .confirmForget(1))
        #expect(m.press(.lap, at: t0) == .forget(id: "ant:12345/11") && m.page == .list)
    }

    @Test func searchingListsWhatIsFoundAndPairsTheSelectedOne() {
        var m = menu()
        m.cursor = 2
        #expect(m.press(.lap, at: t0) == .search(seconds: SensorsMenu.searchSeconds))
        #expect(m.page == .found && m.isSearching(at: t0.advanced(byMs: 29_000)) && !m.isSearching(at: t0.advanced(byMs: 30_000)))
        m.found(.init(id: "ble:AA:BB:CC:DD:EE:FF", kind: .speedCadence, name: "Wahoo", rssi: -70))
        m.found(.init(id: "ble:C0:FF:EE:00:11:22", kind: .heartRate, name: "Strap", rssi: -50))  // paired: not listed
        m.found(.init(id: "ant:777/120", kind: .heartRate, rssi: nil))
        m.found(.init(id: "ble:AA:BB:CC:DD:EE:FF", kind: .speedCadence, name: "", rssi: -60))  // again: updated
        #expect(m.found.map(\.id) == ["ble:AA:BB:CC:DD:EE:FF", "ant:777/120"] && m.found[0].rssi == -60 && m.found[0].name == "Wahoo")
        #expect(m.press(.page, at: t0) == .nothing && m.cursor == 1)
        #expect(m.press(.lap, at: t0) == .pair(id: "ant:777/120", kind: .heartRate, name: ""))
        // The device paired it: back on the list, the new sensor selected, a message shown.
        m.setPaired([strap, meter, .init(id: "ant:777/120", kind: .heartRate, state: .searching)])
        m.show("PAIRED", at: t0, backToListSelecting: "ant:777/120")
        #expect(m.page == .list && m.cursor == 2 && m.message == "PAIRED" && m.found.map(\.id) == ["ble:AA:BB:CC:DD:EE:FF"])
        #expect(!m.expire(at: t0.advanced(byMs: 2_999)) && m.expire(at: t0.advanced(byMs: 3_000)) && m.message == nil)
    }

    @Test func startLeavesTheSearchAndStopsIt() {
        var m = menu()
        m.cursor = 2
        _ = m.press(.lap, at: t0)
        #expect(m.press(.startPause, at: t0.advanced(byMs: 1_000)) == .stopSearch)
        #expect(m.page == .list && m.cursor == 2 && m.searchEndsAt == nil)
        m.cursor = 2
        _ = m.press(.lap, at: t0)
        m.searchEnded()
        #expect(m.press(.startPause, at: t0.advanced(byMs: 1_000)) == .nothing, "a search that is over needs no stopping")
    }

    @Test func theListFollowsTheDeviceAndKeepsTheSelection() {
        var m = menu()
        _ = m.press(.page, at: t0)  // the meter
        m.setPaired([meter])  // the strap was forgotten elsewhere (the shell)
        #expect(m.cursor == 0 && m.paired[m.cursor].id == meter.id)
        _ = m.press(.lap, at: t0)
        m.setPaired([])
        #expect(m.page == .list && m.cursor == 0 && m.rowCount == 1, "only SEARCH is left")
        m.setPaired(Array(repeating: strap, count: 12))
        #expect(m.paired.count == SensorsMenu.pairedMax)
    }

    @Test func namesAreCutAtACharacterBoundary() {
        let p = SensorsMenu.Paired(id: "x", kind: .power, name: "Puissance Pédalier ÉÉÉÉÉÉÉ", state: .connected)
        #expect(p.name.utf8.count <= SensorsMenu.nameBytesMax && "Puissance Pédalier ÉÉÉÉÉÉÉ".hasPrefix(p.name))
        #expect(SensorKind(rawValue: "speed_cadence") == .speedCadence && SensorKind(rawValue: "x") == nil)
    }
}

/// The Sensors screen inside the app core: opened from idle with PAGE, its presses asking the
/// device (`AppEffect.sensors`), the device's answers and a search's results shown on it.
struct SensorsScreenCoreTests {
    struct Core {
        var core = AppCore(randomSeed: 3)
        var requests: [SensorsRequest] = []
        var ms: Int64 = 1_000

        mutating func feed(_ i: AppInput) {
            core.handle(i)
            while let e = core.drainEffect() { if case .sensors(let r) = e { requests.append(r) } }
        }

        mutating func press(_ b: Button) {
            feed(.button(ButtonEvent(b, .down, at: MonotonicInstant(milliseconds: ms))))
            feed(.button(ButtonEvent(b, .up, at: MonotonicInstant(milliseconds: ms + 80))))
            ms += 200
        }
    }

    @Test func pageOnIdleOpensItAndItsPressesBecomeRequests() {
        var c = Core()
        c.press(.page)
        #expect(c.core.screen.mode == .sensors && c.requests == [.open])
        c.feed(.sensors(.paired([.init(id: "ble:C0:FF:EE:00:11:22", kind: .heartRate, state: .connected, batteryPercent: 90)]),
                        at: MonotonicInstant(milliseconds: c.ms)))
        #expect(c.core.screen.sensorsMenu.paired.count == 1)
        c.press(.page)  // SEARCH
        c.press(.lap)
        #expect(c.requests.last == .search(seconds: SensorsMenu.searchSeconds))
        c.feed(.sensor(.found(FoundSensor(id: "ant:777/11/0", kind: .power, name: "", rssi: -70), at: MonotonicInstant(milliseconds: c.ms))))
        #expect(c.core.screen.sensorsMenu.found.map(\.id) == ["ant:777/11/0"])
        c.feed(.tick(MonotonicInstant(milliseconds: c.ms + 5_000)))
        #expect(c.core.screen.sensorsMenu.searchSecondsLeft == SensorsMenu.searchSeconds - 5)
        c.press(.lap)
        #expect(c.requests.last == .pair(id: "ant:777/11/0", kind: .power, name: ""))
        c.feed(.sensors(.outcome("PAIRED", selecting: "ant:777/11/0"), at: MonotonicInstant(milliseconds: c.ms)))
        #expect(c.core.screen.sensorsMenu.message == "PAIRED" && c.core.screen.sensorsMenu.page == .list)
        c.feed(.sensor(.search(running: false, found: 1, at: MonotonicInstant(milliseconds: c.ms))))
        #expect(c.core.screen.sensorsMenu.searchSecondsLeft == nil)
        c.press(.startPause)  // back to idle
        #expect(c.core.screen.mode == .idle && c.requests.last == .close)
        #expect(c.core.state == .idle, "START on the Sensors screen only leaves it")
        c.press(.startPause)
        #expect(c.core.state == .prepared)
    }

    @Test func aRideStartedFromTheShellClosesItAndStopsTheSearch() {
        var c = Core()
        c.press(.page)
        c.press(.lap)  // no paired sensors: the only row is SEARCH
        #expect(c.requests == [.open, .search(seconds: SensorsMenu.searchSeconds)])
        c.feed(.command(.start, at: MonotonicInstant(milliseconds: c.ms)))
        #expect(c.core.state == .prepared && c.core.screen.mode == .countdown(3))
        #expect(Array(c.requests.suffix(2)) == [.stopSearch, .close])
        c.feed(.sensor(.found(FoundSensor(id: "ant:1/120/0", kind: .heartRate), at: MonotonicInstant(milliseconds: c.ms))))
        #expect(c.core.screen.sensorsMenu.found.isEmpty, "a closed screen takes no search results")
    }

    @Test func pageOnARunningRideStillTurnsThePage() {
        var c = Core()
        c.feed(.command(.start, at: MonotonicInstant(milliseconds: c.ms)))
        c.feed(.tick(MonotonicInstant(milliseconds: c.ms + 3_100)))
        c.ms += 3_200
        #expect(c.core.state == .running)
        c.press(.page)
        #expect(c.core.screen.mode == .running(page: 1) && c.requests.isEmpty)
    }
}
