import Foundation
import OrchardKit
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OrchardKit against a real `orchard serve` and `orchard apple-emulator` (see ``Servers``).
@Suite("OrchardClient against orchard serve and the Apple emulator", .serialized)
struct OrchardClientTests {
    /// Counts the wipe handler's runs.
    final class Wipes: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    /// Collects what the client publishes.
    final class States: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [AuthState] = []
        func add(_ state: AuthState) { lock.withLock { seen.append(state) } }
        var all: [AuthState] { lock.withLock { seen } }
    }

    struct Signed {
        let client: OrchardClient
        let account: Account
        let sub: String
        let wipes: Wipes
        let states: States
        let store: FileSessionStore
    }

    /// A fresh user through the whole native sign-in: nonce from Orchard, Apple's sheet (the emulator), sign-in.
    static func signIn(
        _ servers: Servers,
        credentialStates: (any CredentialStateProvider)? = nil,
        sub existing: String? = nil,
        device: String? = nil,
        orgID: String? = nil
    ) async throws -> Signed {
        let store = FileSessionStore(url: servers.folder.appendingPathComponent("app/session-\(UUID().uuidString).json"))
        let client = try OrchardClient(baseURL: servers.orchardURL, store: store, credentialStates: credentialStates)
        let wipes = Wipes()
        let states = States()
        await client.onWipe { wipes.add() }
        Task {
            for await state in client.states { states.add(state) }
        }
        let nonce = try await client.nonce()
        let sub = existing ?? "001234.\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()).0001"
        // Apple gets the raw nonce here (Linux has no CryptoKit for `Nonce.sha256`); Orchard accepts either form.
        let authorization = try await servers.authorize(sub: sub, nonce: nonce.value, orgID: orgID)
        let account = try await client.signIn(
            identityToken: authorization.identityToken,
            authorizationCode: authorization.authorizationCode,
            nonce: nonce.value,
            user: FirstAuthorizationUser(firstName: "Ada", lastName: "Lovelace", email: "ada@example.com"),
            device: device
        )
        return Signed(client: client, account: account, sub: sub, wipes: wipes, states: states, store: store)
    }

    static func signedOutReason(_ client: OrchardClient) async -> SignOutReason? {
        if case .signedOut(let reason) = await client.state { return reason }
        return nil
    }

    @Test("sign-in stores the session 0600 and publishes signedIn; session() and a new client from the store see the account")
    func signInAndSession() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let signed = try await Self.signIn(servers)
        #expect(signed.account.appleSub == signed.sub)
        #expect(signed.account.name == Account.Name(firstName: "Ada", lastName: "Lovelace"))
        #expect(signed.account.appleCredential == .valid)
        #expect(await signed.client.state == .signedIn(signed.account))
        let attributes = try FileManager.default.attributesOfItem(atPath: signed.store.url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let again = try await signed.client.session()
        #expect(again.id == signed.account.id)
        // The next launch: a client over the same store starts signed in.
        let relaunched = try OrchardClient(baseURL: servers.orchardURL, store: signed.store)
        #expect(await relaunched.state == .signedIn(again))
        #expect(try await relaunched.session().id == signed.account.id)

        // A nonce is single use: the same Apple authorization cannot sign in twice.
        let nonce = try await signed.client.nonce()
        let authorization = try await servers.authorize(sub: signed.sub, nonce: nonce.value)
        _ = try await signed.client.signIn(
            identityToken: authorization.identityToken,
            authorizationCode: authorization.authorizationCode,
            nonce: nonce.value
        )
        let reused = await #expect(throws: OrchardError.self) {
            try await signed.client.signIn(identityToken: authorization.identityToken, authorizationCode: "other", nonce: nonce.value)
        }
        #expect(reused?.problemCode == .nonceReused)
    }

    @Test("sign-out: Orchard ends the session, the store is empty, the wipe handler runs once, signedOut(signed_out)")
    func signOut() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let signed = try await Self.signIn(servers)
        let token = try #require(try signed.store.load()?.token)
        try await signed.client.signOut()
        #expect(await Self.signedOutReason(signed.client) == .signedOut)
        #expect(try signed.store.load() == nil)
        #expect(signed.wipes.count == 1)
        // Orchard refuses the old token: the session ended there too.
        var request = URLRequest(url: servers.orchardURL.appendingPathComponent("v1/session"))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 401)
        // Signed out already: a second sign-out wipes nothing more, and calls need a session.
        try await signed.client.signOut()
        #expect(signed.wipes.count == 1)
        await #expect(throws: OrchardError.notSignedIn) { try await signed.client.session() }
        _ = try await poll("signedOut on the stream") { signed.states.all.last == .signedOut(.signedOut) ? true : nil }
    }

    @Test("deleteAccount: revoked, pending (Apple failing) and manual_required (no token held), each signing out once")
    func deletion() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }

        let revoked = try await Self.signIn(servers)
        let first = try await revoked.client.deleteAccount()
        #expect(first.appleRevocation == .revoked)
        #expect(first.manualRevocationURL == nil)
        #expect(await Self.signedOutReason(revoked.client) == .accountDeleted)
        #expect(revoked.wipes.count == 1)
        #expect(try revoked.store.load() == nil)
        #expect(try await servers.acceptedRevocations() == 1)

        let pending = try await Self.signIn(servers)
        try await servers.failRevocations(status: 503, count: 1)
        let second = try await pending.client.deleteAccount()
        #expect(second.appleRevocation == .pending)
        #expect(await Self.signedOutReason(pending.client) == .accountDeleted)
        #expect(pending.wipes.count == 1)
        // Orchard's worker keeps at it until Apple accepts.
        _ = try await poll("the queued revocation to reach Apple") { try await servers.acceptedRevocations() == 2 ? true : nil }

        let manual = try await Self.signIn(servers)
        try servers.sql("UPDATE accounts SET sealed_refresh_token = NULL, sealed_access_token = NULL WHERE id = '\(manual.account.id)'")
        let third = try await manual.client.deleteAccount()
        #expect(third.appleRevocation == .manualRequired)
        #expect(third.manualRevocationURL != nil)
        #expect(manual.wipes.count == 1)
    }

    @Test("a grant revoked at Apple: the daily validation (2 s here) ends the session; the next call signs the app out once")
    func validationSignsOut() async throws {
        let servers = try await Servers.start(validationInterval: 2)
        defer { servers.stop() }
        let signed = try await Self.signIn(servers)
        try await servers.revokeGrant(sub: signed.sub)
        let error = try await poll("the validation to end the session", timeout: 30) { () -> OrchardError? in
            do throws(OrchardError) {
                _ = try await signed.client.session()
                return nil
            } catch {
                return error
            }
        }
        guard case .problem(.sessionRevoked, status: 401, _, let reason) = error else {
            Issue.record("expected session_revoked, got \(error)")
            return
        }
        #expect(reason == "apple_credential_revoked")
        #expect(await Self.signedOutReason(signed.client) == .appleCredentialRevoked)
        #expect(signed.wipes.count == 1)
        #expect(try signed.store.load() == nil)
        _ = try await poll("signedOut on the stream") { signed.states.all.last == .signedOut(.appleCredentialRevoked) ? true : nil }
        // The stream: signed out at creation (an empty store), signed in, then signed out once for the revocation.
        #expect(signed.states.all.first == .signedOut(.noSession))
        #expect(signed.states.all.filter { $0 == .signedOut(.appleCredentialRevoked) }.count == 1)
    }

    @Test("Apple's consent-revoked notification ends the session at Orchard; the app signs out with apple_credential_revoked")
    func consentRevokedNotification() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let signed = try await Self.signIn(servers)
        try await servers.revokeGrant(sub: signed.sub)
        #expect(try await servers.notify("consent-revoked", sub: signed.sub) == 200)
        let error = try await poll("the notification to be processed") { () -> OrchardError? in
            do throws(OrchardError) {
                _ = try await signed.client.session()
                return nil
            } catch {
                return error
            }
        }
        #expect(error.problemCode == .sessionRevoked)
        #expect(await Self.signedOutReason(signed.client) == .appleCredentialRevoked)
        #expect(signed.wipes.count == 1)
        // Later calls fail without wiping again.
        await #expect(throws: OrchardError.notSignedIn) { try await signed.client.deleteAccount() }
        #expect(signed.wipes.count == 1)
    }

    /// Apple's device-side state, as a test sets it.
    final class FakeCredentialStates: CredentialStateProvider, @unchecked Sendable {
        private let lock = NSLock()
        private var answer: AppleCredentialState = .authorized
        func set(_ state: AppleCredentialState) { lock.withLock { answer = state } }
        func credentialState(forUserID userID: String) async throws -> AppleCredentialState { lock.withLock { answer } }
    }

    @Test("device-side credential state: authorized keeps the session; notFound and revoked sign out once")
    func credentialState() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let states = FakeCredentialStates()
        let signed = try await Self.signIn(servers, credentialStates: states)
        #expect(await signed.client.checkAppleCredentialState() == .authorized)
        #expect(await signed.client.state == .signedIn(signed.account))
        states.set(.notFound)
        #expect(await signed.client.checkAppleCredentialState() == .notFound)
        #expect(await Self.signedOutReason(signed.client) == .appleCredentialNotFound)
        #expect(signed.wipes.count == 1)
        // Nothing stored any more: the check has nothing to ask about and wipes nothing again.
        states.set(.revoked)
        #expect(await signed.client.checkAppleCredentialState() == nil)
        #expect(signed.wipes.count == 1)

        let second = try await Self.signIn(servers, credentialStates: states)
        await second.client.appleCredentialWasRevoked()
        #expect(await Self.signedOutReason(second.client) == .appleCredentialRevoked)
        #expect(second.wipes.count == 1)
    }
}
