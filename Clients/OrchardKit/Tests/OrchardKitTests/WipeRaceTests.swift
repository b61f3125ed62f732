import Foundation
import OrchardKit
import Testing

/// A sign-out that lands while a call waits on Orchard wins: the call's answer must not store the wiped session again
/// or publish `signedIn`. "Orchard" is a ``GatedServer`` that holds its answer until the test has signed out.
@Suite("A wipe while a call waits on Orchard")
struct WipeRaceTests {
    /// The ways the app is signed out that need no answer from Orchard's session route.
    enum Wipe: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case signOut
        case appleCredentialRevoked

        /// The name shown for the test case.
        var testDescription: String { rawValue }

        /// Signs `client` out this way.
        func run(on client: OrchardClient) async throws {
            switch self {
            case .signOut: try await client.signOut()
            case .appleCredentialRevoked: await client.appleCredentialWasRevoked()
            }
        }

        /// The reason the client publishes for it.
        var reason: SignOutReason {
            switch self {
            case .signOut: .signedOut
            case .appleCredentialRevoked: .appleCredentialRevoked
            }
        }
    }

    /// The account "Orchard" describes, as JSON.
    static let account = """
        {"id": "acct_1", "apple_sub": "001234.abc.0001", "is_private_email": false, "email_forwarding": "enabled",
        "created_at": "2025-01-01T00:00:00Z", "apple_credential": "valid"}
        """

    /// A session as an earlier sign-in stored it (`Account` has no public initializer, so it is decoded).
    static func storedSession() throws -> StoredSession {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let json = #"{"token": "old-token", "expiresAt": "2100-01-01T00:00:00Z", "account": \#(account)}"#
        return try decoder.decode(StoredSession.self, from: Data(json.utf8))
    }

    /// A store in a new folder of its own (mode 0700).
    static func fileStore() throws -> FileSessionStore {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchardkit-wipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return FileSessionStore(url: folder.appendingPathComponent("session.json"))
    }

    /// Counts the wipe handler's runs.
    final class Wipes: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    @Test(
        "session() waiting on a slow Orchard, then a wipe: the answer neither restores the session nor publishes signedIn",
        arguments: Wipe.allCases
    )
    func wipeDuringSession(wipe: Wipe) async throws {
        let server = try GatedServer(answers: [
            "GET /v1/session": .init(status: 200, body: #"{"account": \#(Self.account)}"#, gated: true),
            "DELETE /v1/session": .init(status: 204, body: ""),
        ])
        defer { server.stop() }
        let store = try Self.fileStore()
        defer { try? FileManager.default.removeItem(at: store.url.deletingLastPathComponent()) }
        let stored = try Self.storedSession()
        try store.save(stored)
        let client = try OrchardClient(baseURL: server.url, store: store)
        let wipes = Wipes()
        await client.onWipe { wipes.add() }
        #expect(await client.state == .signedIn(stored.account))

        let checking = Task { try await client.session() }
        _ = try await poll("session() to reach the server") { server.requests.contains("GET /v1/session") ? true : nil }
        try await wipe.run(on: client)
        #expect(await client.state == .signedOut(wipe.reason))
        #expect(try store.load() == nil)
        #expect(wipes.count == 1)

        server.openGate()
        await #expect(throws: OrchardError.notSignedIn) { try await checking.value }
        #expect(await client.state == .signedOut(wipe.reason))
        #expect(try store.load() == nil)
        #expect(wipes.count == 1)
        // With nothing stored, the next check asks nothing of Orchard.
        await #expect(throws: OrchardError.notSignedIn) { try await client.session() }
        #expect(server.requests.filter { $0 == "GET /v1/session" }.count == 1)
    }

    @Test("signIn waiting on a slow Orchard, then a sign-out: the new session is not stored and signedIn is not published", arguments: Wipe.allCases)
    func wipeDuringSignIn(wipe: Wipe) async throws {
        let server = try GatedServer(answers: [
            "POST /v1/auth/apple": .init(
                status: 200,
                body: #"{"session": {"token": "new-token", "expires_at": "2100-01-01T00:00:00Z"}, "account": \#(Self.account)}"#,
                gated: true
            )
        ])
        defer { server.stop() }
        let store = try Self.fileStore()
        defer { try? FileManager.default.removeItem(at: store.url.deletingLastPathComponent()) }
        let client = try OrchardClient(baseURL: server.url, store: store)
        let wipes = Wipes()
        await client.onWipe { wipes.add() }

        let signingIn = Task { try await client.signIn(identityToken: "identity", authorizationCode: "code", nonce: "nonce") }
        _ = try await poll("signIn to reach the server") { server.requests.contains("POST /v1/auth/apple") ? true : nil }
        try await wipe.run(on: client)
        server.openGate()
        await #expect(throws: OrchardError.notSignedIn) { try await signingIn.value }
        #expect(await client.state == .signedOut(.noSession))
        #expect(try store.load() == nil)
        // Nothing was stored, so there was nothing to wipe: the handlers did not run.
        #expect(wipes.count == 0)
    }

    @Test("accessToken() waiting on a slow Orchard, then a wipe: the token is not kept, and the next call asks again", arguments: Wipe.allCases)
    func wipeDuringAccessToken(wipe: Wipe) async throws {
        let server = try GatedServer(answers: [
            "POST /v1/session/token": .init(
                status: 200,
                body: #"{"access_token": "minted-before-the-wipe", "token_type": "Bearer", "expires_in": 300}"#,
                gated: true
            ),
            "DELETE /v1/session": .init(status: 204, body: ""),
            "POST /v1/auth/apple": .init(
                status: 200,
                body: #"{"session": {"token": "new-token", "expires_at": "2100-01-01T00:00:00Z"}, "account": \#(Self.account)}"#
            ),
        ])
        defer { server.stop() }
        let store = try Self.fileStore()
        defer { try? FileManager.default.removeItem(at: store.url.deletingLastPathComponent()) }
        try store.save(try Self.storedSession())
        let client = try OrchardClient(baseURL: server.url, store: store)

        let asking = Task { try await client.accessToken() }
        _ = try await poll("accessToken() to reach the server") { server.requests.contains("POST /v1/session/token") ? true : nil }
        try await wipe.run(on: client)
        server.openGate()
        await #expect(throws: OrchardError.notSignedIn) { try await asking.value }
        // Nothing was kept for the wiped session: signed out, there is no token to hand out.
        await #expect(throws: OrchardError.notSignedIn) { try await client.accessToken() }

        // Signed in again: the token minted for the wiped session is not handed out; Orchard is asked anew.
        _ = try await client.signIn(identityToken: "identity", authorizationCode: "code", nonce: "nonce")
        _ = try await client.accessToken()
        #expect(server.requests.filter { $0 == "POST /v1/session/token" }.count == 2, "\(server.requests)")
    }

    @Test("without a wipe, session() and signIn through the same slow server store and publish as before")
    func noWipe() async throws {
        let server = try GatedServer(answers: [
            "GET /v1/session": .init(status: 200, body: #"{"account": \#(Self.account)}"#, gated: true),
            "POST /v1/auth/apple": .init(
                status: 200,
                body: #"{"session": {"token": "new-token", "expires_at": "2100-01-01T00:00:00Z"}, "account": \#(Self.account)}"#
            ),
        ])
        defer { server.stop() }
        let store = try Self.fileStore()
        defer { try? FileManager.default.removeItem(at: store.url.deletingLastPathComponent()) }
        let client = try OrchardClient(baseURL: server.url, store: store)
        let account = try await client.signIn(identityToken: "identity", authorizationCode: "code", nonce: "nonce")
        #expect(try store.load()?.token == "new-token")
        #expect(await client.state == .signedIn(account))

        let checking = Task { try await client.session() }
        _ = try await poll("session() to reach the server") { server.requests.contains("GET /v1/session") ? true : nil }
        server.openGate()
        #expect(try await checking.value == account)
        #expect(try store.load()?.token == "new-token")
        #expect(await client.state == .signedIn(account))
    }
}
