import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The emulator's own control API under `/_emulator/`: the Swift controls as JSON (`snake_case`), for the demo, the
/// CLI emulator and tests in other processes. Never delayed by the latency setting, never logged as Apple calls.
struct EmulatorControlController<Context: RequestContext>: Sendable {
    /// The emulator being controlled.
    let emulator: AppleEmulator

    /// The largest control request read.
    static var maximumBodySize: Int { 64 * 1024 }

    /// Adds the control routes to `router`.
    func addRoutes(to router: Router<Context>) {
        let group = router.group("_emulator")
        group.post("authorize") { request, _ in try await respond(to: request, with: authorize) }
        group.post("revoke-grant") { request, _ in try await respond(to: request, with: revokeGrant) }
        group.post("transfer") { request, _ in
            try await respond(to: request) { (body: TransferRequest) in
                do {
                    try emulator.transfer(clientID: body.clientID, toTeam: body.toTeam)
                } catch let error as AppleEmulatorError {
                    return Self.badRequest(error.reason)
                }
                return Self.noContent
            }
        }
        group.post("web-user") { request, _ in try await respond(to: request, with: setWebUser) }
        group.delete("web-user") { _, _ in
            emulator.setWebUser(nil)
            return Self.noContent
        }
        group.post("failures") { request, _ in try await respond(to: request, with: injectFailure) }
        group.delete("failures") { _, _ in
            emulator.clearFailures()
            return Self.noContent
        }
        group.post("omit-refresh-token") { request, _ in
            try await respond(to: request) { (body: CountRequest) in
                emulator.omitRefreshToken(nextExchanges: body.count)
                return Self.noContent
            }
        }
        group.post("latency") { request, _ in
            try await respond(to: request) { (body: LatencyRequest) in
                emulator.setLatency(.milliseconds(max(0, body.ms)))
                return Self.noContent
            }
        }
        group.post("notifications") { request, _ in try await respond(to: request, with: notify) }
        group.get("calls") { _, _ in try Self.json(CallsResponse(calls: emulator.calls())) }
        group.delete("calls") { _, _ in
            emulator.clearCalls()
            return Self.noContent
        }
        group.get("revocations") { _, _ in try Self.json(RevocationsResponse(revocations: emulator.revocations())) }
        group.post("rotate-key") { _, _ in try Self.json(["kid": try emulator.rotateSigningKey()]) }
    }

    private func authorize(_ body: AuthorizeRequest) async throws -> Response {
        let user = resolve(body.user)
        let authorization: EmulatedAuthorization
        do {
            authorization = try emulator.authorize(
                user: user,
                clientID: body.clientID ?? defaultClientID,
                nonce: body.nonce,
                redirectURI: body.redirectURI
            )
        } catch let error as AppleEmulatorError where error.kind == .unknownClient {
            return Self.badRequest(error.reason)
        }
        return try Self.json(
            AuthorizeResponse(authorization, view: emulator.view(of: authorization.user, clientID: body.clientID ?? defaultClientID))
        )
    }

    /// `POST /_emulator/web-user`: who consents on `/auth/authorize` from now on (a known `sub`, or a new user).
    private func setWebUser(_ input: UserInput) async throws -> Response {
        let user = resolve(input)
        emulator.setWebUser(user)
        return try Self.json(["sub": user.sub, "email": user.email ?? ""])
    }

    /// The user a control request names: a known `sub` with the fields it gives changed, or a new user made from them
    /// (a fresh relay address under `relay_domain` when no email is given).
    private func resolve(_ input: UserInput?) -> EmulatedUser {
        guard let sub = input?.sub, var user = emulator.user(sub: sub) else {
            return emulator.makeUser(
                sub: input?.sub,
                email: input?.email,
                isPrivateEmail: input?.isPrivateEmail,
                emailVerified: input?.emailVerified ?? true,
                firstName: input?.firstName,
                lastName: input?.lastName,
                orgID: input?.orgID,
                relayDomain: input?.relayDomain
            )
        }
        if let email = input?.email {
            user.email = email
            user.isPrivateEmail = input?.isPrivateEmail ?? EmulatedUser.isPrivateRelay(email)
        }
        user.firstName = input?.firstName ?? user.firstName
        user.lastName = input?.lastName ?? user.lastName
        user.emailVerified = input?.emailVerified ?? user.emailVerified
        user.orgID = input?.orgID ?? user.orgID
        return user
    }

    private func revokeGrant(_ body: RevokeGrantRequest) async throws -> Response {
        try Self.json(["revoked_grants": emulator.revokeGrant(sub: body.sub, clientID: body.clientID)])
    }

    private func injectFailure(_ body: FailureRequest) async throws -> Response {
        guard let endpoint = EmulatorEndpoint(rawValue: body.endpoint) else {
            return Self.badRequest("endpoint must be one of \(EmulatorEndpoint.allCases.map(\.rawValue))")
        }
        let failures: [EmulatorFailure] = [
            body.status.map { .status($0) },
            body.timeout == true ? .timeout : nil,
            body.appleError.map { .appleError($0) },
        ].compactMap { $0 }
        guard failures.count == 1, let failure = failures.first else {
            return Self.badRequest("give exactly one of status, timeout: true, apple_error")
        }
        guard (body.count ?? 1) > 0 else {
            return Self.badRequest("count must be positive")
        }
        emulator.injectFailure(endpoint: endpoint, failure: failure, count: body.count ?? 1)
        return Self.noContent
    }

    private func notify(_ body: NotificationRequest) async throws -> Response {
        let payload = try emulator.signNotification(
            type: body.type,
            sub: body.sub,
            clientID: body.clientID ?? defaultClientID,
            email: body.email,
            isPrivateEmail: body.isPrivateEmail,
            jti: body.jti
        )
        guard body.send == true else {
            return try Self.json(NotificationResponse(payload: payload))
        }
        guard emulator.notifyURL != nil else {
            return Self.badRequest("send needs a notification URL (--notify-url)")
        }
        do {
            let status = try await emulator.sendNotification(payload: payload)
            return try Self.json(NotificationResponse(payload: payload, status: status))
        } catch let error as AppleEmulatorError {
            return try Self.json(NotificationResponse(payload: payload, error: error.reason), status: .badGateway)
        }
    }

    // MARK: Plumbing

    /// The client id a control request means when it names none: the first the emulator serves.
    private var defaultClientID: String { emulator.configuration.clientIDs[0] }

    private func respond<Body: Decodable>(
        to request: Request,
        with handler: (Body) async throws -> Response
    ) async throws -> Response {
        var request = request
        guard let buffer = try? await request.collectBody(upTo: Self.maximumBodySize) else {
            return Self.badRequest("the body is too large")
        }
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: Data(buffer.readableBytesView))
        } catch {
            return Self.badRequest("the body is not the expected JSON: \(error)")
        }
        return try await handler(body)
    }

    private static var noContent: Response { Response(status: .noContent) }

    private static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json", .contentLength: "\(data.count)"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    private static func badRequest(_ description: String) -> Response {
        let body = ["error": "invalid_request", "error_description": description]
        return (try? json(body, status: .badRequest)) ?? Response(status: .badRequest)
    }
}
