public import Foundation

/// One of the user's sessions, on this device or another (`GET /v1/sessions`).
public struct DeviceSession: Sendable, Hashable, Identifiable, Decodable {
    /// The session's id, `sess_…`: pass it to ``OrchardClient/endSession(id:)``.
    public var id: String
    /// When the user signed in there.
    public var createdAt: Date
    /// When the session ends at the latest.
    public var expiresAt: Date
    /// When that device last checked its session, to the minute; `nil` before its first check.
    public var lastSeenAt: Date?
    /// The label given at sign-in (``OrchardClient/signIn(identityToken:authorizationCode:nonce:user:device:)``'s
    /// `device`; for the web flow, the browser and system, such as "Safari on macOS").
    public var device: String?
    /// Whether it is this device's session.
    public var isCurrent: Bool

    enum CodingKeys: String, CodingKey {
        case id, device
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case lastSeenAt = "last_seen_at"
        case isCurrent = "current"
    }
}

extension OrchardClient {
    /// The user's live sessions, newest first, this device's among them (``DeviceSession/isCurrent``).
    public func sessions() async throws(OrchardError) -> [DeviceSession] {
        struct Answer: Decodable {
            var sessions: [DeviceSession]
        }
        let stored = try storedSession()
        let answer: Answer = try await call("GET", "/v1/sessions", bearer: stored.token)
        return answer.sessions
    }

    /// Ends one of the user's sessions, as signing out on that device would ("I lost my phone").
    ///
    /// Ending this device's own session signs the app out, as ``signOut()`` does.
    /// - Throws: ``OrchardError/problem(_:status:detail:reason:)`` with ``ProblemCode/notFound`` when the id is not one
    ///   of the user's live sessions (it ended already, or was never theirs), and without asking Orchard when it is not
    ///   shaped like a session id (`sess_` and letters, digits, `_` or `-`): an id that is a path (`../account`) must
    ///   never reach another route.
    public func endSession(id: String) async throws(OrchardError) {
        guard Self.isSessionID(id) else {
            throw .problem(.notFound, status: 404, detail: "not a session id", reason: nil)
        }
        let stored = try storedSession()
        let _: Empty = try await call("DELETE", "/v1/sessions/\(id)", bearer: stored.token)
        // If that was this device's session, Orchard now answers session_revoked, and that signs the app out.
        _ = try? await sessions()
    }

    /// Whether `id` has the shape of a session id as ``sessions()`` lists them: `sess_` and 1 to 64 ASCII letters,
    /// digits, `_` or `-`.
    static func isSessionID(_ id: String) -> Bool {
        let rest = id.utf8.dropFirst(5)
        return id.hasPrefix("sess_") && (1...64).contains(rest.count)
            && rest.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// Signs out every other device of the user; this one stays signed in.
    /// - Returns: How many sessions ended.
    @discardableResult
    public func signOutOtherDevices() async throws(OrchardError) -> Int {
        struct Answer: Decodable {
            var ended: Int
        }
        let stored = try storedSession()
        let answer: Answer = try await call("DELETE", "/v1/sessions", bearer: stored.token)
        return answer.ended
    }
}
