import Control
import RideModel
import Testing

/// `sensors …` lines parse in ControlProtocol like every other command: the kind is the sensor
/// vocabulary's, a name keeps the rider's case, and every malformed line says what to send.
@Suite struct SensorsControlTests {
    @Test func linesParseToRequests() {
        let cases: [(String, SensorsControl)] = [
            ("sensors scan", .scan(seconds: SensorsControl.scanSecondsDefault)),
            ("SENSORS scan 30", .scan(seconds: 30)),
            ("sensors stop", .stop),
            ("sensors found", .found),
            ("sensors pair ant:12345/11 power", .pair(id: "ant:12345/11", kind: .power, name: nil)),
            ("sensors pair ble:c0:ff:ee:00:11:22 Speed_Cadence Wahoo RPM  CSC",
             .pair(id: "ble:c0:ff:ee:00:11:22", kind: .speedCadence, name: "Wahoo RPM CSC")),
            ("sensors forget ble:C0:FF:EE:00:11:22", .forget(id: "ble:C0:FF:EE:00:11:22")),
        ]
        for (line, request) in cases {
            #expect(ControlProtocol.parse(line) == .success(.sensors(request)), "\(line)")
        }
        for k in SensorKind.allCases {
            #expect(ControlProtocol.parse("sensors pair ant:1/\(k.antDeviceType) \(k)") == .success(.sensors(.pair(id: "ant:1/\(k.antDeviceType)", kind: k, name: nil))))
        }
    }

    @Test func badLinesSayWhatToSend() {
        for line in ["sensors", "sensors scan 0", "sensors scan 301", "sensors scan soon", "sensors scan 5 6",
                     "sensors pair ant:1/11", "sensors pair ant:1/11 rocket", "sensors forget", "sensors forget a b",
                     "sensors dance", "sensors found now"] {
            guard case .failure(let e) = ControlProtocol.parse(line) else { Issue.record("\(line) parsed"); continue }
            let reply = ControlProtocol.format(e)
            #expect(reply.hasPrefix("error ") && (reply.contains("sensors") || reply.contains("kind")), "\(line): \(reply)")
        }
        guard case .failure(let e) = ControlProtocol.parse("sensors pair ant:1/11 rocket") else { return }
        #expect(e.description.contains("kind rocket is not one of \(SensorKind.names)"))
        #expect(ControlProtocol.commandWords.contains("sensors"))
    }
}
