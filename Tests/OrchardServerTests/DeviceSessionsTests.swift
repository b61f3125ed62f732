import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

@Suite("Sessions on several devices through the HTTP API")
struct DeviceSessionsTests {
    /// The sessions `GET /v1/sessions` lists for `token`.
    static func sessions(_ h: OrchardHarness, _ token: String) async throws -> [[String: Any]] {
        let listed = try await h.request(.GET, "/v1/sessions", bearer: token)
        #expect(listed.status == 200, "\(String(decoding: listed.body, as: UTF8.self))")
        return try #require(listed.json["sessions"] as? [[String: Any]])
    }

    /// `date` as the API writes it.
    static func rfc3339(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    @Test("each sign-in is a session with its device label; one device ends another's session, and Apple is not called")
    func listAndEndOne() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let phone = try await h.signUp(user, device: "Alice's iPhone")
            h.clock.advance(by: 1)
            let browser = try await h.signUp(user)
            h.clock.advance(by: 1)
            let tablet = try await h.signUp(user, device: "Alice’s iPad 🍎")

            let listed = try await Self.sessions(h, tablet)
            #expect(listed.map { $0["device"] as? String } == ["Alice’s iPad 🍎", nil, "Alice's iPhone"], "newest first")
            #expect(listed.map { $0["current"] as? Bool } == [true, false, false])
            for session in listed {
                let id = try #require(session["id"] as? String)
                #expect(id.wholeMatch(of: /sess_[0-9a-f]{32}/) != nil, "\(id)")
                // Every key the contract names is there (`device` only for a session that was given a label).
                let required: Set<String> = ["id", "created_at", "expires_at", "last_seen_at", "current"]
                #expect(Set(session.keys).subtracting(["device"]) == required, "\(session.keys.sorted())")
                #expect(session["last_seen_at"] is NSNull, "no session check yet")
                for token in [phone, browser, tablet] { #expect(!id.contains(token) && !id.contains(String(token.prefix(12)))) }
            }
            let phoneID = try #require(listed[2]["id"] as? String)

            h.emulator.clearCalls()
            #expect(try await h.request(.DELETE, "/v1/sessions/\(phoneID)", bearer: tablet).status == 204)
            #expect(h.emulator.calls().isEmpty)
            let ended = try await h.request(.GET, "/v1/session", bearer: phone)
            #expect(ended.status == 401)
            #expect(ended.code == "session_revoked")
            #expect(ended["reason"] == "signed_out")
            #expect(try await h.request(.GET, "/v1/session", bearer: tablet).status == 200)
            #expect(try await h.request(.GET, "/v1/session", bearer: browser).status == 200)
            #expect(try await Self.sessions(h, browser).count == 2)

            let again = try await h.request(.DELETE, "/v1/sessions/\(phoneID)", bearer: tablet)
            #expect(again.status == 404)
            #expect(again.code == "not_found")
            // The ended session cannot act any more, not even on its own list.
            #expect(try await h.request(.GET, "/v1/sessions", bearer: phone).code == "session_revoked")
            #expect(try await h.request(.DELETE, "/v1/sessions", bearer: phone).code == "session_revoked")
        }
    }

    @Test("another account's session id is not_found exactly as an unknown one, and ids of any other shape are not_found")
    func otherAccountsSessions() async throws {
        try await OrchardHarness.with { h in
            let alice = try await h.signUp(h.emulator.makeUser(), device: "Alice's iPhone")
            let bob = try await h.signUp(h.emulator.makeUser(), device: "Bob's iPhone")
            let bobsID = try #require(try await Self.sessions(h, bob).first?["id"] as? String)

            let foreign = try await h.request(.DELETE, "/v1/sessions/\(bobsID)", bearer: alice)
            let unknown = try await h.request(.DELETE, "/v1/sessions/sess_\(String(repeating: "0", count: 32))", bearer: alice)
            #expect(foreign.status == 404)
            #expect(foreign.code == "not_found")
            #expect(foreign.status == unknown.status)
            #expect(foreign.body == unknown.body, "the same answer, byte for byte")
            #expect(try await h.request(.GET, "/v1/session", bearer: bob).status == 200, "Bob's session lives on")

            for id in ["sess_", "sess_ZZ", "x", String(repeating: "a", count: 2_000), "sess_\(String(repeating: "0", count: 31))%00", "%2e%2e"] {
                let answer = try await h.request(.DELETE, "/v1/sessions/\(id)", bearer: alice)
                #expect(answer.status == 404, "\(id.prefix(40))")
                #expect(answer.code == "not_found", "\(id.prefix(40))")
            }
            // Without a session nothing is said about any id.
            #expect(try await h.request(.DELETE, "/v1/sessions/\(bobsID)").code == "session_invalid")
            #expect(try await h.request(.GET, "/v1/sessions", bearer: "unknown").code == "session_invalid")
            #expect(try await h.request(.GET, "/v1/session", bearer: bob).status == 200)
        }
    }

    @Test("DELETE /v1/sessions ends every other session of the account and keeps the caller's and other accounts'")
    func endOthers() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let others = [try await h.signUp(user, device: "one"), try await h.signUp(user, device: "two")]
            let caller = try await h.signUp(user, device: "three")
            let stranger = try await h.signUp(h.emulator.makeUser())

            let answer = try await h.request(.DELETE, "/v1/sessions", bearer: caller)
            #expect(answer.status == 200)
            #expect(answer.json["ended"] as? Int == 2)
            #expect(Set(answer.json.keys) == ["ended"])
            for token in others {
                let ended = try await h.request(.GET, "/v1/session", bearer: token)
                #expect(ended.code == "session_revoked")
                #expect(ended["reason"] == "signed_out")
            }
            #expect(try await h.request(.GET, "/v1/session", bearer: caller).status == 200)
            #expect(try await h.request(.GET, "/v1/session", bearer: stranger).status == 200)
            #expect(try await Self.sessions(h, caller).map { $0["device"] as? String } == ["three"])
            #expect(try await h.request(.DELETE, "/v1/sessions", bearer: caller).json["ended"] as? Int == 0)
        }
    }

    @Test("last_seen_at is the last session check to the minute, written at most once a minute per session")
    func lastSeen() async throws {
        let counting = Mutex<CountingDatabaseClient?>(nil)
        let countStatements: @Sendable (any DatabaseClient) -> any DatabaseClient = { base in
            let client = CountingDatabaseClient(base)
            counting.withLock { $0 = client }
            return client
        }
        try await OrchardHarness.with(wrapDatabase: countStatements) { h in
            let database = try #require(counting.withLock { $0 })
            let minute = (h.clock.now().timeIntervalSince1970 / 60).rounded(.down) * 60 + 60
            h.clock.set(Date(timeIntervalSince1970: minute + 5))
            let token = try await h.signUp(h.emulator.makeUser(), device: "phone")
            database.reset()
            for _ in 0..<20 { #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200) }
            h.clock.advance(by: 50)
            for _ in 0..<20 { #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200) }
            // The write runs beside the answers: wait for its state, then for its count.
            #expect(
                await eventually(timeout: 10) {
                    (try? await Self.sessions(h, token).first?["last_seen_at"] as? String) == Self.rfc3339(Date(timeIntervalSince1970: minute))
                }
            )
            #expect(database.sent.filter { $0.contains("SET last_seen_at") }.count == 1, "one write in the first minute")

            h.clock.advance(by: 10)
            for _ in 0..<20 { #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200) }
            #expect(
                await eventually(timeout: 10) {
                    (try? await Self.sessions(h, token).first?["last_seen_at"] as? String)
                        == Self.rfc3339(Date(timeIntervalSince1970: minute + 60))
                }
            )
            #expect(database.sent.filter { $0.contains("SET last_seen_at") }.count == 2, "one more in the next minute")
        }
    }

    @Test("a device label over 64 characters, empty, or with a control character is invalid_request and uses up no nonce")
    func badDeviceLabels() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            for device in [String(repeating: "x", count: 65), "", "line\nbreak", "bell\u{7}", "rtl\u{202E}override", "nul\u{0}"] {
                let answer = try await h.signIn(user, device: device).response
                #expect(answer.status == 400, "\(device.debugDescription)")
                #expect(answer.code == "invalid_request", "\(device.debugDescription)")
            }
            #expect(try await h.rowCount("sessions") == 0)
            #expect(try await h.rowCount("accounts") == 0)
            #expect(try await h.rowCount("nonces WHERE consumed_at IS NOT NULL") == 0, "refused before the token is looked at")
            let longest = String(repeating: "é", count: 64)
            let token = try await h.signUp(user, device: longest)
            #expect(try await Self.sessions(h, token).first?["device"] as? String == longest)
        }
    }

    @Test("the device label is sealed at rest (the deletion tests find nothing of it after a deletion)")
    func deviceLabelAtRest() async throws {
        try await OrchardHarness.with { h in
            let label = "Gracelynne's secret laptop"
            _ = try await h.signUp(h.emulator.makeUser(), device: label)
            let sealed = try await h.database.read("SELECT sealed_device FROM sessions WHERE sealed_device IS NOT NULL")
            #expect(sealed.count == 1)
            let files = try await h.databaseBytes()
            #expect(!files.isEmpty, "the scan found the database's files (on PostgreSQL: ORCHARD_TEST_POSTGRES_DATA)")
            for file in files {
                for form in [label, Data(label.utf8).base64EncodedString()] {
                    #expect(file.bytes.range(of: Data(form.utf8)) == nil, "the label in plain form in \(file.name)")
                }
            }
        }
    }
}
