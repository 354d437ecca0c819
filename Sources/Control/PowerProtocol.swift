import AppCore
import Battery

/// The control protocol's power requests (docs/power.md): the phone's time from the companion,
/// and the battery in the stream's view.
extension ControlProtocol {
    /// Phone times before this (2024-01-01T00:00:00Z) are no real phone's clock.
    public static let phoneTimeMinMs: Int64 = 1_704_067_200_000
    /// ... nor after this (2100-01-01T00:00:00Z).
    public static let phoneTimeMaxMs: Int64 = 4_102_444_800_000

    /// `phone-time UNIX_MS`: the paired phone's clock, milliseconds since 1970 (UTC).
    static func parsePhoneTime(_ args: [String]) -> Result<Request, ParseError> {
        let usage = "phone-time UNIX_MS (milliseconds since 1970-01-01 UTC, from a paired phone)"
        guard args.count == 1, let ms = Int64(args[0]), (phoneTimeMinMs...phoneTimeMaxMs).contains(ms) else {
            return .failure(.badArguments(command: "phone-time", usage: usage))
        }
        return .success(.command(.phoneTime(unixMs: ms)))
    }
}

extension ControlStream {
    /// The unit's battery in the view (`battery`: percent, time left, charging, level; null
    /// without a gauge), and a power-off on its way (`powering_off`: its reason).
    static func writeBattery(_ s: ScreenModel, into w: inout JSONWriter) {
        if let b = s.battery {
            w.beginObject("battery")
            w.int("percent", b.percent.map(Int64.init))
            w.int("time_left_min", b.timeLeftMinutes.map(Int64.init))
            w.bool("charging", b.charging)
            w.string("level", b.level.description)
            w.endObject()
        } else {
            w.string("battery", nil)
        }
        w.string("powering_off", s.poweringOff?.description)
    }
}
