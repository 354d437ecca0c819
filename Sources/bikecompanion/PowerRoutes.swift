import Control
import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The companion's part in docs/power.md: `POST /api/clock` hands a paired phone's time to the
/// unit (`phone-time UNIX_MS` on the control socket). The unit takes it only while its own clock
/// is not trusted, and never over a trusted one; the answer is the unit's reply.
extension CompanionServer {
    /// Phone times outside 2024…2100 are no phone's clock; a fraction of a millisecond is no phone's either.
    static let phoneTimeRangeMs: ClosedRange<Int64> = 1_704_067_200_000...4_102_444_800_000

    func addPowerRoutes(_ router: Router<CompanionContext>) {
        let server = self
        router.post("/api/clock") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            let body = try await request.body.collect(upTo: Self.requestBodyBytesMax)
            let obj = JSONValue.parse(body.readableBytesView)?.object ?? [:]
            // A whole number of milliseconds in the range (`int64` drops no fraction). A JSON
            // `true` was NSNumber 1 before, out of the range as now.
            guard let ms = obj["unix_ms"]?.int64, Self.phoneTimeRangeMs.contains(ms) else {
                return Self.json(["error": "send {\"unix_ms\": Date.now()}: the phone's time in milliseconds since 1970 (UTC)"], status: .badRequest)
            }
            let reply = DeviceReply(await server.link.request("phone-time \(ms)"))
            server.log("phone time \(ms): \(reply.message)")
            var out = reply.json
            out["request"] = "phone-time \(ms)"
            return Self.json(out)
        }
    }
}
