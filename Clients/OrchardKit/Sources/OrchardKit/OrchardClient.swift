public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
#if canImport(CryptoKit)
import CryptoKit
#endif

/// A nonce Orchard issued for one sign-in.
public struct Nonce: Sendable, Hashable {
    /// The nonce to send back to Orchard with the identity token.
    public var value: String
    /// When Orchard stops accepting it.
    public var expiresAt: Date

    #if canImport(CryptoKit)
    /// What to hand Apple as the request's `nonce`: SHA-256 of ``value``, lowercase hex. Apple puts it in the
    /// identity token, and Orchard checks it against the nonce it issued.
    public var sha256: String {
        SHA256.hash(data: Data(value.utf8)).map { String(format: "%02x", $0) }.joined()
    }
    #endif
}

/// What Apple handed the app on the user's first authorization only: Orchard keeps the name (Apple sends it nowhere
/// else). Apple's signed token, not this, is the source of the email.
public struct FirstAuthorizationUser: Sendable, Hashable {
    /// Given name.
    public var firstName: String?
    /// Family name.
    public var lastName: String?
    /// The email Apple showed the app (Orchard takes the signed one).
    public var email: String?

    /// Creates the details of a first authorization.
    public init(firstName: String? = nil, lastName: String? = nil, email: String? = nil) {
        self.firstName = firstName
        self.lastName = lastName
        self.email = email
    }
}

/// The app's client of an Orchard server: sign-in, the session, sign-out and deletion, and one stream of
/// ``AuthState``.
///
/// Signing out happens in one place. Whenever Orchard answers `session_revoked` or `session_invalid` (to any call),
/// on ``deleteAccount()``, on ``signOut()``, and when Apple's device-side state says the credential is `revoked` or
/// `notFound` (``checkAppleCredentialState()``, ``appleCredentialWasRevoked()``), the client removes the stored
/// session, runs every handler registered with ``onWipe(_:)`` once, and publishes ``AuthState/signedOut(_:)``.
///
/// A sign-out is never undone by an answer that was already on its way: a call that waits on Orchard and then stores a
/// session or publishes ``AuthState/signedIn(_:)`` (``signIn(identityToken:authorizationCode:nonce:user:device:)``,
/// ``session()``) does neither when the app was signed out while it waited, and throws ``OrchardError/notSignedIn``.
public actor OrchardClient {
    /// Every change of ``state``, starting with the state at creation. One consumer (the app's model) reads it.
    public nonisolated let states: AsyncStream<AuthState>
    /// Whether a user is signed in.
    public private(set) var state: AuthState

    private let continuation: AsyncStream<AuthState>.Continuation
    private let baseURL: URL
    private let store: any SessionStore
    private let urlSession: URLSession
    private let credentialStates: (any CredentialStateProvider)?
    private var wipeHandlers: [@Sendable () async -> Void] = []
    /// Moves each time the stored session goes or is replaced (every ``wipe(_:)``, and every sign-in). A call that
    /// stores a session, publishes `signedIn` or keeps an access token after waiting on Orchard reads it before its
    /// request and goes ahead only if it has not moved.
    private(set) var wipeGeneration = 0
    /// The access token ``accessToken()`` got last, while it has more than a fifth of its lifetime left.
    var cachedAccessToken: CachedAccessToken?
    /// The time, for the access token's lifetime (injected by tests).
    let now: @Sendable () -> Date

    /// Creates the client of the Orchard at `baseURL`, keeping the session in `store`.
    ///
    /// - Parameters:
    ///   - credentialStates: Apple's device-side credential state (``AppleIDCredentialStateProvider`` on Apple
    ///     platforms); `nil` skips that check.
    ///   - now: the time, for when a cached access token is renewed.
    /// - Throws: what `store` throws when reading the stored session.
    public init(
        baseURL: URL,
        store: any SessionStore,
        urlSession: URLSession = .shared,
        credentialStates: (any CredentialStateProvider)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.now = now
        self.baseURL = baseURL
        self.store = store
        self.urlSession = urlSession
        self.credentialStates = credentialStates
        let stored = try store.load()
        state = stored.map { .signedIn($0.account) } ?? .signedOut(.noSession)
        (states, continuation) = AsyncStream.makeStream(of: AuthState.self, bufferingPolicy: .unbounded)
        continuation.yield(state)
    }

    /// Registers work to run when the user is signed out for any reason: delete the user's data kept in the Keychain
    /// or on disk and return the UI to its signed-out state (TN3194). Each handler runs once per sign-out.
    public func onWipe(_ handler: @escaping @Sendable () async -> Void) {
        wipeHandlers.append(handler)
    }

    /// Asks Orchard for a nonce for one sign-in (`POST /v1/auth/apple/nonce`).
    public func nonce() async throws(OrchardError) -> Nonce {
        struct Answer: Decodable {
            var nonce: String
            var expiresAt: Date
            enum CodingKeys: String, CodingKey {
                case nonce
                case expiresAt = "expires_at"
            }
        }
        let answer: Answer = try await call("POST", "/v1/auth/apple/nonce", bearer: nil)
        return Nonce(value: answer.nonce, expiresAt: answer.expiresAt)
    }

    /// Signs in with what Apple handed the app (`POST /v1/auth/apple`) and stores the session.
    ///
    /// - Parameters:
    ///   - identityToken: the credential's `identityToken`, as text.
    ///   - authorizationCode: the credential's `authorizationCode`, as text: Orchard exchanges it for the tokens it
    ///     needs to revoke the user's grant when the account is deleted.
    ///   - nonce: ``Nonce/value`` of the nonce whose SHA-256 went to Apple.
    ///   - user: the name (and email) Apple gave on the first authorization only.
    ///   - device: a label for this session that the user recognizes in ``sessions()`` on their other devices, such as
    ///     "iPhone, signed in in Lyon" (since iOS 16 `UIDevice.current.name` gives only the model: "iPhone"); at most 64
    ///     characters, no control characters. Stored encrypted.
    /// - Returns: The account, new or returning.
    /// - Throws: ``OrchardError/notSignedIn`` when the app was signed out (``signOut()``,
    ///   ``appleCredentialWasRevoked()``, any other sign-out) while Orchard answered: the sign-out wins, and the new
    ///   session is neither stored nor published (Orchard ends it when it expires).
    public func signIn(
        identityToken: String,
        authorizationCode: String,
        nonce: String,
        user: FirstAuthorizationUser? = nil,
        device: String? = nil
    ) async throws(OrchardError) -> Account {
        struct Body: Encodable {
            struct User: Encodable {
                var name: Account.Name?
                var email: String?
            }
            var identityToken: String
            var authorizationCode: String
            var nonce: String
            var user: User?
            var device: String?
            enum CodingKeys: String, CodingKey {
                case nonce, user, device
                case identityToken = "identity_token"
                case authorizationCode = "authorization_code"
            }
        }
        struct Answer: Decodable {
            struct Session: Decodable {
                var token: String
                var expiresAt: Date
                enum CodingKeys: String, CodingKey {
                    case token
                    case expiresAt = "expires_at"
                }
            }
            var session: Session
            var account: Account
        }
        var posted: Body.User?
        if let user {
            let name = user.firstName == nil && user.lastName == nil ? nil : Account.Name(firstName: user.firstName, lastName: user.lastName)
            posted = Body.User(name: name, email: user.email)
        }
        let body = Body(identityToken: identityToken, authorizationCode: authorizationCode, nonce: nonce, user: posted, device: device)
        let generation = wipeGeneration
        let answer: Answer = try await call("POST", "/v1/auth/apple", bearer: nil, body: body)
        guard wipeGeneration == generation else { throw .notSignedIn }
        do {
            try store.save(StoredSession(token: answer.session.token, expiresAt: answer.session.expiresAt, account: answer.account))
        } catch {
            throw .transport("the session could not be stored: \(error)")
        }
        // The new session replaces any earlier one: an access token of the earlier session (perhaps another user's) is
        // never handed out for it, including one that a call still waiting on Orchard would keep.
        cachedAccessToken = nil
        wipeGeneration += 1
        publish(.signedIn(answer.account))
        return answer.account
    }

    /// Asks Orchard whether the session still holds (`GET /v1/session`) and returns the account as it stands.
    ///
    /// A revoked or unknown session signs the app out (see the type's documentation) before the error is thrown.
    ///
    /// - Throws: ``OrchardError/notSignedIn`` when no session is stored, and when the app was signed out while Orchard
    ///   answered: the answer is then dropped, so the wiped session is not stored again and `signedIn` is not published.
    public func session() async throws(OrchardError) -> Account {
        struct Answer: Decodable {
            var account: Account
        }
        let generation = wipeGeneration
        let stored = try storedSession()
        let answer: Answer = try await call("GET", "/v1/session", bearer: stored.token)
        guard wipeGeneration == generation else { throw .notSignedIn }
        var updated = stored
        updated.account = answer.account
        try? store.save(updated)
        publish(.signedIn(answer.account))
        return answer.account
    }

    /// Signs out (`DELETE /v1/session`): Orchard ends the session, and the app is signed out whatever Orchard answers.
    ///
    /// - Throws: ``OrchardError/transport(_:)`` when Orchard could not be told: the app is signed out all the same, and
    ///   the session ends at Orchard when it expires.
    public func signOut() async throws(OrchardError) {
        guard let stored = try? store.load() else {
            await wipe(.signedOut)
            return
        }
        var unreachable: OrchardError?
        do {
            let _: Empty = try await call("DELETE", "/v1/session", bearer: stored.token)
        } catch {
            // A problem answer means the session had already ended at Orchard; only an unreachable Orchard is reported.
            if case .problem = error {} else { unreachable = error }
        }
        await wipe(.signedOut)
        if let unreachable { throw unreachable }
    }

    /// Deletes the account (`DELETE /v1/account`): Orchard erases it, ends its sessions and revokes the user's grant at
    /// Apple; the app is then signed out (``SignOutReason/accountDeleted``).
    ///
    /// - Returns: What happened at Apple: when it is ``AccountDeletion/AppleRevocation/manualRequired``, show the user
    ///   ``AccountDeletion/manualRevocationURL`` so they can remove the app from their Apple ID themselves.
    public func deleteAccount() async throws(OrchardError) -> AccountDeletion {
        struct Answer: Decodable {
            var appleRevocation: String
            var manualRevocationURL: String?
            enum CodingKeys: String, CodingKey {
                case appleRevocation = "apple_revocation"
                case manualRevocationURL = "manual_revocation_url"
            }
        }
        let stored = try storedSession()
        let answer: Answer = try await call("DELETE", "/v1/account", bearer: stored.token)
        await wipe(.accountDeleted)
        return AccountDeletion(
            appleRevocation: AccountDeletion.AppleRevocation(rawValue: answer.appleRevocation) ?? .pending,
            manualRevocationURL: answer.manualRevocationURL.flatMap(URL.init(string:))
        )
    }

    /// Asks Apple's device-side credential state of the signed-in user and signs out on `revoked` or `notFound`.
    /// Call it at launch and on return to the foreground (``AppleCredentialObserver`` does both on Apple platforms).
    ///
    /// - Returns: The state Apple gave, or `nil` when no one is signed in, no provider was given, or asking failed.
    @discardableResult
    public func checkAppleCredentialState() async -> AppleCredentialState? {
        guard let credentialStates, let stored = try? store.load() else { return nil }
        guard let answer = try? await credentialStates.credentialState(forUserID: stored.account.appleSub) else { return nil }
        switch answer {
        case .revoked: await wipe(.appleCredentialRevoked)
        case .notFound: await wipe(.appleCredentialNotFound)
        case .authorized, .transferred: break
        }
        return answer
    }

    /// Signs out because Apple posted `credentialRevokedNotification` (the user revoked the app in their Apple ID
    /// settings, or signed out of their Apple ID on the device).
    public func appleCredentialWasRevoked() async {
        await wipe(.appleCredentialRevoked)
    }

    // MARK: - One place for signing out

    /// Removes the stored session, runs the wipe handlers and publishes `signedOut(reason)`; does nothing when the app
    /// is already signed out, so each sign-out runs the handlers once.
    ///
    /// Every call counts in ``wipeGeneration``, even one with nothing to wipe: a sign-in still waiting on Orchard must
    /// not sign the app back in after the user signed out.
    func wipe(_ reason: SignOutReason) async {
        wipeGeneration += 1
        cachedAccessToken = nil
        if case .signedOut = state, (try? store.load()) == nil { return }
        // The state changes before the handlers run: a second failure arriving meanwhile finds it signed out.
        publish(.signedOut(reason))
        try? store.remove()
        for handler in wipeHandlers { await handler() }
    }

    private func publish(_ new: AuthState) {
        guard new != state else { return }
        state = new
        continuation.yield(new)
    }

    func storedSession() throws(OrchardError) -> StoredSession {
        guard let stored = try? store.load() else { throw .notSignedIn }
        return stored
    }

    // MARK: - HTTP

    struct Empty: Decodable {}

    private struct Problem: Decodable {
        var code: String
        var detail: String?
        var reason: String?
    }

    func call<Answer: Decodable>(
        _ method: String,
        _ path: String,
        bearer: String?,
        query: [URLQueryItem] = [],
        body: (some Encodable)? = String?.none
    ) async throws(OrchardError) -> Answer {
        var url = baseURL.appendingPathComponent(String(path.dropFirst()))
        if !query.isEmpty { url.append(queryItems: query) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            do {
                request.httpBody = try OrchardJSON.encoder.encode(body)
            } catch {
                throw .transport("the request could not be encoded: \(error)")
            }
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            throw .transport(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw .unexpectedResponse(status: 0) }
        guard (200..<300).contains(http.statusCode) else {
            guard let problem = try? OrchardJSON.decoder.decode(Problem.self, from: data) else {
                throw .unexpectedResponse(status: http.statusCode)
            }
            let code = ProblemCode(code: problem.code)
            // A session Orchard no longer accepts signs the app out, from whichever call found out.
            if bearer != nil, code == .sessionRevoked || code == .sessionInvalid {
                await wipe(code == .sessionInvalid ? .sessionExpired : SignOutReason(rawValue: problem.reason ?? "") ?? .signedOut)
            }
            throw .problem(code, status: http.statusCode, detail: problem.detail, reason: problem.reason)
        }
        if Answer.self == Empty.self, let empty = Empty() as? Answer { return empty }
        do {
            return try OrchardJSON.decoder.decode(Answer.self, from: data)
        } catch {
            throw .unexpectedResponse(status: http.statusCode)
        }
    }
}
