import Configuration
import Control
import FoundationEssentials
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// A request's context: Hummingbird's, plus the client's address (the key of the pairing
/// routes' per-client back-off).
struct CompanionContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        remoteAddress = source.channel.remoteAddress
    }

    /// Who is asking, for the pairing routes: the peer's IP address.
    var clientKey: String { remoteAddress?.ipAddress ?? "unknown" }
}

/// The companion's HTTP + WebSocket server (docs/companion.md lists every route and message).
struct CompanionServer: Sendable {
    static let cookieName = "bkc_token"
    static let requestBodyBytesMax = 4 * 1024
    static let webSocketMessageBytesMax = 4 * 1024
    static let markerKinds = ["generic", "water", "food", "note", "segment"]
    static let commandWords = ["start", "pause", "resume", "lap", "end", "dismiss"]

    let link: DeviceLink
    let tokens: TokenStore
    let pairing: Pairing
    let log: @Sendable (String) -> Void
    /// Chart.js as Debian's libjs-chart.js installs it; served to the page at /static/chart.js
    /// (the phone has no internet on a ride).
    var chartJSPath = CompanionServer.defaultChartJSPath

    /// `<data dir>/courses/`, where uploaded courses are stored (CourseRoutes.swift).
    var coursesDirectory = "/var/lib/bikecomputer/courses"

    static let defaultChartJSPath = "/usr/share/javascript/chart.js/chart.min.js"
    static let chartJSBytesMax = 4 << 20

    // MARK: Access

    /// The token ID of a valid bearer token or cookie, else nil. A browser request from a page
    /// of another origin (its Origin header names another host) is never authorized, so
    /// another site open on the phone cannot use the cookie (with SameSite=Strict besides).
    func authorize(_ request: Request) -> String? {
        guard Self.sameOrigin(request) else { return nil }
        if let auth = request.headers[.authorization], auth.lowercased().hasPrefix("bearer ") {
            return tokens.validate(String(auth.dropFirst(7)).trimmingSpaces())
        }
        if let cookie = request.cookies[Self.cookieName] { return tokens.validate(cookie.value) }
        return nil
    }

    /// No Origin header (not a browser, or a same-origin GET), or one naming this server.
    static func sameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        let host = request.head.authority ?? ""
        return !host.isEmpty && (origin == "http://" + host || origin == "https://" + host)
    }

    static var crossOrigin: Response {
        json(["error": "a page of another site cannot pair with this unit; open http://<unit>/ itself"], status: .forbidden)
    }

    static func retryLater(_ message: String, _ seconds: Int) -> Response {
        var headers: HTTPFields = [:]
        headers[.retryAfter] = String(seconds)
        return json(["error": .string(message), "retry_after_s": .integer(seconds)], status: .tooManyRequests, headers: headers)
    }

    static func json(_ obj: [String: JSONValue], status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers = extra
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: DeviceLink.encode(obj))))
    }

    static var pairingRequired: [String: JSONValue] { [
        "error": "pairing required",
        "hint": "POST /api/pair/request to show a code on the unit, then POST /api/pair {\"code\": \"...\"}; send the token as a bearer token or the bkc_token cookie",
    ] }

    // MARK: Commands

    /// The longest client id echoed in a command's result.
    static let commandIDBytesMax = 64

    /// Turns a client's command message into a control line, or says what is wrong with it.
    static func controlLine(_ msg: [String: JSONValue]) -> Result<String, CommandError> {
        // The id is the client's own label, echoed in the result: a string (docs/companion-openapi.yaml).
        if let id = msg["id"] {
            guard let label = id.string, label.utf8.count <= commandIDBytesMax else {
                return .failure(CommandError("id must be a string of at most \(commandIDBytesMax) bytes (it is echoed in the result)"))
            }
        }
        switch msg["type"]?.string {
        case "command":
            guard let word = msg["command"]?.string?.lowercased(), commandWords.contains(word) else {
                return .failure(CommandError("unknown command; use one of \(commandWords.joined(separator: ", ")) or a marker message"))
            }
            return .success(word)
        case "marker":
            let kind = (msg["kind"]?.string ?? "generic").lowercased()
            guard markerKinds.contains(kind) else { return .failure(CommandError("unknown marker kind '\(kind)'; use \(markerKinds.joined(separator: ", "))")) }
            var value: Int64 = 0
            if let v = msg["value"] {
                // A number only: JSON `true` passed as 1 while JSONSerialization's NSNumber read
                // the body; it is refused now, as docs/companion-openapi.yaml's integer says.
                guard let d = v.double, d == d.rounded(), d >= 0, d <= 1_000_000 else {
                    return .failure(CommandError("marker value must be a whole number in 0...1000000"))
                }
                value = Int64(d)
            }
            return .success("marker \(kind) \(value)")
        default:
            return .failure(CommandError("unknown message type; send {\"type\":\"command\",\"command\":\"pause\"} or {\"type\":\"marker\",\"kind\":\"water\",\"value\":250}"))
        }
    }

    /// Sends a command to the device; the result carries the device's own reply.
    func run(_ msg: [String: JSONValue]) async -> [String: JSONValue] {
        var result: [String: JSONValue] = ["type": "command_result"]
        if let id = msg["id"] { result["id"] = id }
        switch Self.controlLine(msg) {
        case .failure(let why):
            result["ok"] = false
            result["message"] = .string(why.message)
            result["state"] = .null
        case .success(let line):
            let reply = DeviceReply(await link.request(line))
            for (k, v) in reply.json { result[k] = v }
            result["request"] = .string(line)
        }
        return result
    }

    // MARK: Routes

    func router() -> Router<CompanionContext> {
        let router = Router(context: CompanionContext.self)
        let server = self

        router.get("/") { _, _ in
            var headers: HTTPFields = [:]
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: CompanionPage.html)))
        }

        // Chart.js for the page's charts, from the installed Debian package. No token: it is a
        // public library, and the page loads it before pairing.
        router.get("/static/chart.js") { _, _ in
            var headers: HTTPFields = [:]
            headers[.contentType] = "application/javascript; charset=utf-8"
            guard let data = FileManager.default.contents(atPath: server.chartJSPath), data.count <= Self.chartJSBytesMax else {
                headers[.cacheControl] = "no-store"
                let why = "// Chart.js is not installed at \(server.chartJSPath): sudo apt-get install libjs-chart.js (or bikecompanion --chartjs PATH)\n"
                return Response(status: .notFound, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: why)))
            }
            headers[.cacheControl] = "max-age=86400"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }

        router.get("/api/history") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            return Self.json(server.link.history.json())
        }

        router.get("/api/session") { request, _ in
            guard let id = server.authorize(request) else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            return Self.json(["paired": true, "token_id": .string(id), "device_connected": .bool(server.link.isConnected)])
        }

        // The pairing routes need no token, so each checks the Origin (another site's page open
        // on the phone cannot ask for codes or enter them) and backs off per client.
        router.post("/api/pair/request") { request, context in
            guard Self.sameOrigin(request) else { return Self.crossOrigin }
            let code: String
            switch server.pairing.newCode(client: context.clientKey) {
            case .issued(let c):
                code = c
            case .tooSoon(let wait):
                return Self.retryLater("a code was asked for too recently; enter the code the unit shows, or ask again in \(wait) s", wait)
            case .busy(let wait):
                return Self.retryLater("another device is pairing; try again in \(wait) s", wait)
            }
            server.log("pairing code \(code) for \(context.clientKey) (shown on the unit for \(Int(Pairing.Limits.codeLifetimeS)) s)")
            let reply = DeviceReply(await server.link.request("pairing-code \(code)"))
            if !reply.ok { server.log("the unit could not show the pairing code: \(reply.message); read it from this log") }
            return Self.json(["ok": true, "expires_in_s": .integer(Int(Pairing.Limits.codeLifetimeS)), "shown_on_device": .bool(reply.ok),
                              "hint": "enter the code the unit shows: POST /api/pair {\"code\": \"...\"}"])
        }

        router.post("/api/pair") { request, context in
            guard Self.sameOrigin(request) else { return Self.crossOrigin }
            let body = try await request.body.collect(upTo: Self.requestBodyBytesMax)
            let obj = JSONValue.parse(body.readableBytesView)?.object ?? [:]
            guard let code = obj["code"]?.string else {
                return Self.json(["error": "send {\"code\": \"123456\"} with the code the unit shows"], status: .badRequest)
            }
            switch server.pairing.attempt(code, client: context.clientKey) {
            case .noCode:
                return Self.json(["error": "no pairing code is active (or it expired); POST /api/pair/request first"], status: .conflict)
            case .notYours:
                return Self.json(["error": "the code on the unit was asked for by another device; ask for your own when it is done"], status: .forbidden)
            case .tooSoon(let wait):
                return Self.retryLater("a wrong code was entered too recently; try again in \(wait) s", wait)
            case .wrong(let left):
                if left == 0 { _ = await server.link.request("pairing-code clear") }
                return Self.json(["error": left > 0 ? "wrong code" : "wrong code; the code is cancelled, request a new one",
                                  "attempts_left": .integer(left)], status: .forbidden)
            case .paired:
                _ = await server.link.request("pairing-code clear")
                do {
                    let issued = try server.tokens.issue(name: obj["name"]?.string ?? "companion")
                    server.log("paired companion token \(issued.id)")
                    var headers: HTTPFields = [:]
                    headers[.setCookie] = "\(Self.cookieName)=\(issued.token); Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000"
                    return Self.json(["token": .string(issued.token), "token_id": .string(issued.id)], headers: headers)
                } catch {
                    return Self.json(["error": "\(error)"], status: .init(code: 507, reasonPhrase: "Insufficient Storage"))
                }
            }
        }

        router.get("/api/state") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            var headers: HTTPFields = [:]
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: server.link.snapshotMessage())))
        }

        router.post("/api/command") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            let body = try await request.body.collect(upTo: Self.requestBodyBytesMax)
            let obj = JSONValue.parse(body.readableBytesView)?.object ?? [:]
            let result = await server.run(obj)
            return Self.json(result, status: result["reply"] == nil ? .badRequest : .ok)
        }

        addPowerRoutes(router)  // POST /api/clock (PowerRoutes.swift)
        addCourseRoutes(router)  // /api/courses... (CourseRoutes.swift)

        router.ws("/ws") { request, _ in
            guard server.authorize(request) != nil else { throw HTTPError(.unauthorized, message: "pairing required") }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let tokenID = server.authorize(context.request) else { return }
            guard let (client, messages) = server.link.hub.add(tokenID: tokenID) else {
                try await outbound.close(.policyViolation, reason: "too many companions connected")
                return
            }
            defer { server.link.hub.remove(client) }
            // The view at once, then the stream.
            try await outbound.write(.text(server.link.snapshotMessage()))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await m in messages { try await outbound.write(.text(m)) }
                    // Closed by the hub (fell behind, token revoked): say why. Otherwise the
                    // client left and the connection just ends.
                    if let reason = server.link.hub.closeReasonOf(client) {
                        try await outbound.close(.policyViolation, reason: String(reason.prefix(120)))
                    }
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: Self.webSocketMessageBytesMax) {
                        guard case .text(let text) = message else { continue }
                        guard let obj = JSONValue.parse(text.utf8)?.object else {
                            server.link.hub.send(DeviceLink.encode(["type": "error", "message": "send one JSON object per message"]), to: client)
                            continue
                        }
                        guard server.tokens.validate(tokenID: tokenID) else { break }
                        let result = await server.run(obj)
                        server.link.hub.send(DeviceLink.encode(result), to: client)
                    }
                    server.link.hub.remove(client)
                }
                try await group.next()
                group.cancelAll()
            }
        }
        return router
    }
}

extension TokenStore {
    func validate(tokenID: String) -> Bool { all().contains { $0.id == tokenID } }
}


struct CommandError: Error {
    let message: String
    init(_ m: String) { message = m }
}
