import RideModel

/// The app core's side of the Sensors screen (`SensorsMenu`): opened from idle with PAGE, its
/// presses turned into requests to the device (`AppEffect.sensors`), the device's answers
/// (`AppInput.sensors`) and a search's results (`SensorEvent.found`, `.search`) put on it.
extension AppCore {
    mutating func openSensors(at now: MonotonicInstant) {
        sensorsOpen = true
        screen.sensorsMenu.page = .list
        screen.sensorsMenu.cursor = 0
        screen.sensorsMenu.message = nil
        emit(.sensors(.open))
    }

    mutating func closeSensors(at now: MonotonicInstant) {
        guard sensorsOpen else { return }
        sensorsOpen = false
        if screen.sensorsMenu.isSearching(at: now) { emit(.sensors(.stopSearch)) }
        screen.sensorsMenu.searchEnded()
        emit(.sensors(.close))
    }

    mutating func sensorsPress(_ b: Button, at now: MonotonicInstant) {
        switch screen.sensorsMenu.press(b, at: now) {
        case .nothing: break
        case .close: closeSensors(at: now)
        case .search(let seconds): emit(.sensors(.search(seconds: seconds)))
        case .stopSearch: emit(.sensors(.stopSearch))
        case let .pair(id, kind, name): emit(.sensors(.pair(id: id, kind: kind, name: name)))
        case .forget(let id): emit(.sensors(.forget(id: id)))
        }
    }

    mutating func sensorFound(_ f: FoundSensor, at now: MonotonicInstant) {
        guard sensorsOpen, let kind = f.kind else { return }
        screen.sensorsMenu.found(SensorsMenu.Found(id: f.id, kind: kind, name: f.name, rssi: f.rssi))
    }

    mutating func handleSensorsUpdate(_ u: SensorsUpdate, at now: MonotonicInstant) {
        switch u {
        case .paired(let rows):
            screen.sensorsMenu.setPaired(rows)
        case let .outcome(text, selecting):
            screen.sensorsMenu.show(text, at: now, backToListSelecting: selecting)
        }
    }
}
