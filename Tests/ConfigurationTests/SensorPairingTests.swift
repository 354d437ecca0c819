import Configuration
import Testing
import TestSupport

/// Pairing and forgetting edit only the [[sensor]] block concerned: every other byte of the
/// config file stays, and the result loads with the same settings plus (or minus) the sensor.
struct SensorPairingTests {
    static let file = """
        # bikecomputer configuration: /etc/bikecomputer/config.toml on the board.
        [buttons]
        chip = "/dev/gpiochip0"     # GPIO character device
        pins = [17, 27, 22]

        [bridge]
        transport = "unix"          # "unix" or "serial"

        # One block per paired sensor, e.g.:
        # [[sensor]]
        # transport = "ant"

        # my chest strap
        [[sensor]]
        transport = "ble"
        role = "heart_rate"
        ble_address = "c0:ff:ee:00:11:22"   # lower case, as typed

        [[sensor]]
        transport = "ant"
        role = "power"
        ant_device_number = 12345
        name = "Crank"

        # about the bike
        [bike]
        wheel_circumference_mm = 2096

        """

    @Test func theBlocksAreFoundWithTheirIdentityAndLines() throws {
        let blocks = try SensorPairing.blocks(in: Self.file)
        #expect(blocks.map(\.identity) == [.ble(address: "C0:FF:EE:00:11:22"), .ant(deviceNumber: 12345, deviceType: 11)])
        #expect(blocks[0].firstLine == 13 && blocks[0].headerLine == 14 && blocks[0].lastLine == 17, "its comment above goes with it")
        #expect(blocks[1].firstLine == 19 && blocks[1].lastLine == 23, "the comment before [bike] is [bike]'s")
        #expect(blocks[1].role == "power" && blocks[1].name == "Crank")
    }

    @Test func pairingAppendsABlockAndKeepsEveryOtherByte() throws {
        let text = try SensorPairing.pairing(.ble(address: "aa:bb:cc:dd:ee:ff"), role: .speedCadence, name: "Wahoo \"CSC\"",
                                             comment: "paired on the unit", in: Self.file)
        let added = """

            # paired on the unit
            [[sensor]]
            transport = "ble"
            role = "speed_cadence"
            ble_address = "AA:BB:CC:DD:EE:FF"
            name = "Wahoo \\"CSC\\""
            """
        let lines = Self.file.split(separator: "\n", omittingEmptySubsequences: false)
        let expected = lines[0..<23].joined(separator: "\n") + "\n" + added + "\n" + lines[23...].joined(separator: "\n")
        #expect(text == expected)
        let config = try ConfigLoader.load(text: text).get()
        #expect(config.sensors.count == 3)
        #expect(config.sensors[2].bleAddress == "AA:BB:CC:DD:EE:FF" && config.sensors[2].role == .speedCadence)
        #expect(config.sensors[2].name == "Wahoo \"CSC\"")
        #expect(config.bike.wheelCircumferenceMm == 2096)
    }

    @Test func forgettingRemovesTheBlockAndItsComment() throws {
        let text = try SensorPairing.forgetting(.ble(address: "C0:FF:EE:00:11:22"), in: Self.file)
        #expect(!text.contains("my chest strap") && !text.contains("c0:ff:ee"))
        #expect(text.contains("# One block per paired sensor") && text.contains("# about the bike"))
        let config = try ConfigLoader.load(text: text).get()
        #expect(config.sensors.map(\.antDeviceNumber) == [12345])
        // Pairing it again and forgetting the other gives a valid file with the strap only.
        let again = try SensorPairing.pairing(.ble(address: "C0:FF:EE:00:11:22"), role: .heartRate, in: text)
        let strapOnly = try SensorPairing.forgetting(.ant(deviceNumber: 12345, deviceType: 11), in: again)
        #expect(try ConfigLoader.load(text: strapOnly).get().sensors.map(\.bleAddress) == ["C0:FF:EE:00:11:22"])
        #expect(!strapOnly.contains("\n\n\n"), "no double blank line left behind")
    }

    @Test func pairingToAFileWithoutSensorsAppendsAtTheEnd() throws {
        let bare = "[bike]\nwheel_circumference_mm = 2105"  // no newline at the end
        let text = try SensorPairing.pairing(.ant(deviceNumber: 77, deviceType: 123), role: .speed, in: bare)
        #expect(text == "[bike]\nwheel_circumference_mm = 2105\n\n[[sensor]]\ntransport = \"ant\"\nrole = \"speed\"\nant_device_number = 77\n")
        let typed = try SensorPairing.pairing(.ant(deviceNumber: 78, deviceType: 121), role: .cadence, in: text)
        #expect(typed.contains("ant_device_type = 121"), "a device type the role does not imply is written")
        #expect(try ConfigLoader.load(text: typed).get().sensors.count == 2)
    }

    @Test func refusals() throws {
        #expect(throws: SensorPairing.Failure.alreadyPaired(.ble(address: "C0:FF:EE:00:11:22"), line: 14)) {
            try SensorPairing.pairing(.ble(address: "C0:FF:EE:00:11:22"), role: .power, in: Self.file)
        }
        #expect(throws: SensorPairing.Failure.notPaired(.ant(deviceNumber: 1, deviceType: 120))) {
            try SensorPairing.forgetting(.ant(deviceNumber: 1, deviceType: 120), in: Self.file)
        }
        #expect(throws: SensorPairing.Failure.invalidAddress("C0:FF:EE")) {
            try SensorPairing.pairing(.ble(address: "C0:FF:EE"), role: .power, in: Self.file)
        }
        var full = Self.file
        for n in 1...6 { full = try SensorPairing.pairing(.ant(deviceNumber: n, deviceType: 120), role: .heartRate, in: full) }
        #expect(throws: SensorPairing.Failure.full(8)) {
            try SensorPairing.pairing(.ant(deviceNumber: 99, deviceType: 120), role: .heartRate, in: full)
        }
        #expect {
            try SensorPairing.pairing(.ant(deviceNumber: 1, deviceType: 120), role: .heartRate, in: "[bike\n")
        } throws: { ($0 as? SensorPairing.Failure).map { if case .syntax = $0 { true } else { false } } ?? false }
    }

    /// Sensor ids as `bikecomputer sensors` prints them and a rider types them parse once, here.
    @Test func sensorIdsParse() {
        #expect(SensorPairing.Identity(parsing: "ble:c0:ff:ee:00:11:22") == .ble(address: "C0:FF:EE:00:11:22"))
        #expect(SensorPairing.Identity(parsing: "BLE:C0:FF:EE:00:11:22/random") == .ble(address: "C0:FF:EE:00:11:22"))
        #expect(SensorPairing.Identity(parsing: "ant:12345/11") == .ant(deviceNumber: 12345, deviceType: 11))
        #expect(SensorPairing.Identity(parsing: "ant:12345/11/5") == .ant(deviceNumber: 12345, deviceType: 11))
        #expect(SensorPairing.Identity(parsing: "ANT:12345:40") == .ant(deviceNumber: 12345, deviceType: 40))
        for bad in ["", "ble:", "ble:C0:FF:EE", "ble:C0:FF:EE:00:11:2G", "ant:0/11", "ant:65536/11", "ant:1/0", "ant:1/256",
                    "ant:12345", "usb:1/2", "12345/11"] {
            #expect(SensorPairing.Identity(parsing: bad) == nil, "\(bad)")
        }
        for id in [SensorPairing.Identity.ble(address: "AA:BB:CC:DD:EE:FF"), .ant(deviceNumber: 7, deviceType: 121)] {
            #expect(SensorPairing.Identity(parsing: id.description) == id)
        }
    }

    /// A change is only made when the edited file loads; the refusal says why, the kind is the
    /// vocabulary's.
    @Test func changesAreCheckedByLoadingTheResult() throws {
        let paired = try SensorPairing.applying(.pair(.ant(deviceNumber: 9, deviceType: 121), kind: .speedCadence, name: "RPM", comment: "test"),
                                               to: Self.file, path: "/etc/x.toml").get()
        #expect(paired.config.sensors.last?.role == .speedCadence && paired.config.sensors.last?.antDeviceNumber == 9)
        #expect(paired.text.hasPrefix(Self.file.split(separator: "\n", omittingEmptySubsequences: false).prefix(3).joined(separator: "\n")))
        guard case .failure(.pairing(.alreadyPaired)) = SensorPairing.applying(.pair(.ble(address: "C0:FF:EE:00:11:22"), kind: .power, name: nil, comment: "x"),
                                                                              to: Self.file, path: "/etc/x.toml") else {
            Issue.record("pairing a paired sensor again was not refused"); return
        }
        // A file whose other settings do not load is not made worse: the change is refused.
        let broken = Self.file + "\n[display]\nheight = 99\n"
        guard case .failure(.wouldNotLoad(let report)) = SensorPairing.applying(.forget(.ble(address: "C0:FF:EE:00:11:22")), to: broken, path: "/etc/x.toml") else {
            Issue.record("an edit that does not load was made"); return
        }
        #expect(report.contains("/etc/x.toml") && report.contains("height"))
    }

    /// Random files of comments, tables and sensor blocks: pairing then forgetting a new sensor
    /// gives the file back byte for byte when it ended with a blank line after its last block.
    @Test func pairThenForgetIsTheIdentity() throws {
        var rng = SeededRandom(seed: 21)
        for _ in 0..<200 {
            var text = "# head\n[bridge]\ntransport = \"unix\"\n"
            for i in 0..<rng.int(0...4) {
                if rng.chance(0.5) { text += "# a comment \(i)\n" }
                text += "\n[[sensor]]\ntransport = \"ant\"\nrole = \"heart_rate\"\nant_device_number = \(1000 + i)\n"
            }
            if rng.chance(0.5) { text += "\n# bike next\n[bike]\nwheel_circumference_mm = 2105\n" }
            let paired = try SensorPairing.pairing(.ble(address: "01:02:03:04:05:06"), role: .power, in: text)
            #expect(try SensorPairing.forgetting(.ble(address: "01:02:03:04:05:06"), in: paired) == text, "\(text)")
        }
    }
}
