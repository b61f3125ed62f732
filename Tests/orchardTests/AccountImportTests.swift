import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

/// `orchard accounts import`: an app's existing users, from exports written as each source writes them, become
/// accounts their next Sign in with Apple finds.
@Suite("Importing accounts from Firebase, Supabase, Auth0 and Orchard's JSON Lines")
struct AccountImportTests {
    /// An installation on the selected backend, and a folder for the exports.
    typealias Setup = InstallationOnBackend

    /// A user the emulator knows, as the source holds them.
    struct SourceUser {
        let id: String
        let user: EmulatedUser
        let email: String
        let first: String
        let last: String
    }

    static func users(_ setup: Setup, ids: [String]) -> [SourceUser] {
        ids.enumerated().map { index, id in
            let email = "person\(index)-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            let user = setup.base.emulator.makeUser(email: email, isPrivateEmail: false)
            return SourceUser(id: id, user: user, email: email, first: "Person\(index)", last: "Surname\(index)")
        }
    }

    // MARK: Exports as each source writes them

    /// The Firebase Admin SDK's `listUsers` page, each `UserRecord.toJSON()`, with one user who signed in with Google.
    static func firebaseListUsers(_ users: [SourceUser]) -> String {
        let records = users.map { user in
            """
            {"uid": "\(user.id)", "email": "\(user.email)", "emailVerified": true, "displayName": "\(user.first) \(user.last)",
             "disabled": false, "metadata": {"lastSignInTime": "Wed, 11 Jan 2023 08:30:00 GMT", "creationTime": "Tue, 10 Jan 2023 10:00:00 GMT",
             "lastRefreshTime": null}, "tokensValidAfterTime": "Tue, 10 Jan 2023 10:00:00 GMT",
             "providerData": [{"uid": "\(user.user.sub)", "displayName": "\(user.first) \(user.last)", "email": "\(user.email)",
               "photoURL": null, "providerId": "apple.com", "phoneNumber": null}]}
            """
        }
        let google = """
            {"uid": "googleOnly42", "email": "g@example.com", "emailVerified": true, "disabled": false,
             "metadata": {"creationTime": "Tue, 10 Jan 2023 10:00:00 GMT"},
             "providerData": [{"uid": "10987654321", "email": "g@example.com", "providerId": "google.com"}]}
            """
        return "{\"users\": [\n" + (records + [google]).joined(separator: ",\n") + "\n], \"pageToken\": null}"
    }

    /// `firebase auth:export users.json --format=json`: `localId`, `createdAt` in milliseconds, `providerUserInfo`; the
    /// last user's Apple entry left out, as the CLI often does (firebase-tools#3401).
    static func firebaseAuthExport(_ users: [SourceUser]) -> String {
        let records = users.enumerated().map { index, user in
            let apple =
                index == users.count - 1
                ? ""
                : """
                , "providerUserInfo": [{"providerId": "apple.com", "rawId": "\(user.user.sub)", "email": "\(user.email)",
                  "displayName": "\(user.first) \(user.last)"}]
                """
            return """
                {"localId": "\(user.id)", "email": "\(user.email)", "emailVerified": true, "displayName": "\(user.first) \(user.last)",
                 "passwordHash": "", "salt": "", "lastSignedInAt": "1673425800000", "createdAt": "1673344800000"\(apple)}
                """
        }
        return "{\"users\": [" + records.joined(separator: ",") + "]}"
    }

    /// `auth.identities` rows as `psql` prints `json_agg(row_to_json(i))`, one of them Google's.
    static func supabaseArray(_ users: [SourceUser]) -> String {
        let rows = users.map { user in
            """
            {"provider_id": "\(user.user.sub)", "user_id": "\(user.id)",
             "identity_data": {"iss": "https://appleid.apple.com", "sub": "\(user.user.sub)", "email": "\(user.email)",
               "email_verified": true, "provider_id": "\(user.user.sub)", "full_name": "\(user.first) \(user.last)",
               "custom_claims": {"auth_time": 1705312800}},
             "provider": "apple", "last_sign_in_at": "2024-01-15 10:00:00.123456+00", "created_at": "2024-01-15 10:00:00.123456+00",
             "updated_at": "2024-01-15 10:00:00.123456+00", "email": "\(user.email)", "id": "\(UUID().uuidString.lowercased())"}
            """
        }
        let google = """
            {"provider_id": "1099", "user_id": "\(UUID().uuidString.lowercased())", "identity_data": {"sub": "1099", "email": "g@example.com"},
             "provider": "google", "created_at": "2024-01-15 10:00:00+00", "email": "g@example.com", "id": "\(UUID().uuidString.lowercased())"}
            """
        return "[" + (rows + [google]).joined(separator: ",\n") + "]\n"
    }

    /// Auth0's user export job (NDJSON), with a user of a database connection.
    static func auth0(_ users: [SourceUser]) -> String {
        let lines = users.map { user in
            """
            {"user_id": "\(user.id)", "email": "\(user.email)", "email_verified": true, "given_name": "\(user.first)", \
            "family_name": "\(user.last)", "name": "\(user.first) \(user.last)", "created_at": "2024-01-15T10:00:00.000Z", \
            "identities": [{"provider": "apple", "user_id": "\(user.user.sub)", "connection": "apple", "isSocial": true}]}
            """
        }
        let password = """
            {"user_id": "auth0|65a4f0c1", "email": "p@example.com", "email_verified": false, "created_at": "2024-01-15T10:00:00.000Z", \
            "identities": [{"provider": "auth0", "user_id": "65a4f0c1", "connection": "Username-Password-Authentication", "isSocial": false}]}
            """
        return (lines + [password]).joined(separator: "\n") + "\n"
    }

    /// Orchard's JSON Lines.
    static func orchardLines(_ users: [SourceUser], refreshTokens: [String: String] = [:]) -> String {
        users.map { user in
            var object: [String: Any] = [
                "apple_sub": user.user.sub, "account_id": user.id, "email": user.email, "email_verified": true,
                "is_private_email": false, "name": ["first_name": user.first, "last_name": user.last], "created_at": "2024-03-01T12:00:00Z",
            ]
            if let token = refreshTokens[user.id] { object["refresh_token"] = token }
            return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }.joined(separator: "\n") + "\n"
    }

    // MARK: Tests

    @Test(
        "each source's export becomes accounts with the source's user id, email and name; non-Apple users are counted apart",
        arguments: ["firebase-list-users", "firebase-auth-export", "supabase", "auth0", "orchard"]
    )
    func shapes(_ shape: String) async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let ids: [String] =
            switch shape {
            case "firebase-list-users", "firebase-auth-export":
                ["xQ3fFmT9aZbJ2kLpYw8RcN7dUeV1", "Hk2PzW5yB8tMnQ4rVs6XcL9jA3Gd", "aB0cD1eF2gH3iJ4kL5mN6oP7q"]
            case "supabase": (0..<3).map { _ in UUID().uuidString.lowercased() }
            case "auth0": ["apple|001234.\(String(repeating: "ab", count: 16)).0456", "apple|tracked.user-1", "apple|x@y:z_9.W-"]
            default: ["user-\(UUID().uuidString)", "legacy:42", "acct_custom_7"]
            }
        let users = Self.users(setup, ids: ids)
        let (source, text, appleUsers, notApple): (String, String, [SourceUser], Int) =
            switch shape {
            case "firebase-list-users": ("firebase", Self.firebaseListUsers(users), users, 1)
            case "firebase-auth-export": ("firebase", Self.firebaseAuthExport(users), Array(users.dropLast()), 1)
            case "supabase": ("supabase", Self.supabaseArray(users), users, 1)
            case "auth0": ("auth0", Self.auth0(users), users, 1)
            default: ("orchard", Self.orchardLines(users), users, 0)
            }
        let file = try setup.file("\(shape).json", text)
        let imported = try await setup.run(["accounts", "import", file, "--from", source])
        #expect(imported.status == 0, "\(imported.standardError)")
        let counts = Setup.counts(imported.standardOutput)
        #expect(counts["imported"] == appleUsers.count, "\(imported.standardOutput)")
        #expect(counts["no_apple_identity"] == notApple)
        #expect(counts["skipped"] == 0 && counts["duplicate"] == 0 && counts["invalid"] == 0)
        for user in appleUsers {
            let shown = try await setup.show(user.id)
            #expect(shown["id"] == user.id)
            #expect(shown["apple_sub"] == user.user.sub)
            #expect(shown["email"] == user.email)
            #expect(shown["name"] == "\(user.first) \(user.last)")
            #expect(shown["apple_credential"] == "unknown")
            let history = try await setup.run(["accounts", "history", user.id, "--json"])
            let events = try JSONSerialization.jsonObject(with: Data(history.standardOutput.utf8)) as? [[String: Any]]
            #expect(events?.map { $0["type"] as? String } == ["imported"])
            #expect(events?.first?["reason"] as? String == source)
        }
        // Created when the source created them.
        let created = try await setup.show(appleUsers[0].id)["created_at"] ?? ""
        let expected =
            switch shape {
            case "firebase-list-users", "firebase-auth-export": "2023-01-10T10:00:00Z"
            case "supabase", "auth0": "2024-01-15T10:00:00Z"
            default: "2024-03-01T12:00:00Z"
            }
        #expect(created == expected)

        // The next Sign in with Apple of an imported user signs into the imported account.
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.base.directory.path, http: setup.base.http)
        let client = setup.base.client(serve)
        let signIn = try await client.signIn(appleUsers[0].user, clientID: "com.example.orchard.app").response
        #expect(signIn.status == 200)
        #expect(signIn.json["is_new_account"] as? Bool == false)
        let account = try #require(signIn.json["account"] as? [String: Any])
        #expect(account["id"] as? String == appleUsers[0].id)
        #expect(account["apple_credential"] as? String == "valid")
        #expect((account["name"] as? [String: Any])?["first_name"] as? String == appleUsers[0].first, "the imported name stays")
        #expect(await serve.terminate() == 0)
    }

    @Test("before their next sign-in, imported users are deleted manual_required and Apple's notifications act on them")
    func lifecycleBeforeSignIn() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let users = Self.users(setup, ids: ["imp-delete", "imp-consent", "imp-forwarding", "imp-gone"])
        let file = try setup.file("users.jsonl", Self.orchardLines(users))
        #expect(try await setup.run(["accounts", "import", file]).status == 0)

        // Deleted before a sign-in: no Apple token was ever held here.
        let deleted = try await setup.run(["accounts", "delete", "imp-delete"])
        #expect(deleted.status == 0, "\(deleted.standardError)")
        #expect(deleted.standardOutput.contains("apple_revocation: manual_required"))
        #expect(setup.base.emulator.calls(to: .revoke).isEmpty)

        // Apple's notifications about an imported subject act on its account.
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.base.directory.path, http: setup.base.http)
        let client = setup.base.client(serve)
        for (user, type) in [(users[1], "consent-revoked"), (users[2], "email-disabled"), (users[3], "account-delete")] {
            let payload = try setup.base.emulator.signNotification(type: type, sub: user.user.sub, clientID: "com.example.orchard.app")
            #expect(try await client.request(.POST, "/v1/apple/notifications", json: ["payload": payload]).status == 200)
        }
        #expect(
            await eventually {
                let consent = try? await setup.show("imp-consent")
                let forwarding = try? await setup.show("imp-forwarding")
                let gone = try? await setup.run(["accounts", "show", "imp-gone"])
                return consent?["apple_credential"] == "revoked" && forwarding?["email_forwarding"] == "disabled" && gone?.status == 3
            },
            "the notifications did not act on the imported accounts"
        )
        #expect(await serve.terminate() == 0)
    }

    @Test("a refresh_token in the file is sealed and validated within its first interval: Apple's answer sets valid or revoked")
    func refreshTokens() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let users = Self.users(setup, ids: ["with-token", "with-dead-token"])
        // A refresh token Apple issued for the first user (the system the app leaves had kept it), and one Apple never did.
        let issued = try setup.base.emulator.issueGrant(user: users[0].user, clientID: "com.example.orchard.app").refreshToken
        let file = try setup.file(
            "tokens.jsonl",
            Self.orchardLines(users, refreshTokens: ["with-token": issued, "with-dead-token": "r.never-issued-by-apple"])
        )
        // The first interval is the import's configuration's, as it is serve's.
        let interval = ["ORCHARD_REFRESH_VALIDATION_INTERVAL": "2"]
        #expect(try await setup.run(["accounts", "import", file], environment: interval).status == 0)
        for tableFile in try setup.base.directory.allFileContents() where tableFile.name.hasSuffix(".sqlite") {
            #expect(tableFile.bytes.range(of: Data(issued.utf8)) == nil, "a refresh token in plaintext in \(tableFile.name)")
        }
        let serve = try await ServeProcess.start(
            environment: setup.environment.merging(interval) { $1 },
            logDirectory: setup.base.directory.path,
            http: setup.base.http
        )
        #expect(
            await eventually {
                let alive = (try? await setup.show("with-token"))?["apple_credential"]
                let dead = (try? await setup.show("with-dead-token"))?["apple_credential"]
                return alive == "valid" && dead == "revoked"
            },
            "the imported refresh tokens were not validated"
        )
        #expect(setup.base.emulator.calls(to: .token).contains { $0.grantType == "refresh_token" && $0.refreshToken == issued })
        // Deletion now revokes the validated token.
        let deleted = try await setup.run(["accounts", "delete", "with-token"])
        #expect(deleted.standardOutput.contains("apple_revocation: revoked") || deleted.standardOutput.contains("apple_revocation: pending"))
        #expect(await eventually { setup.base.emulator.calls(to: .revoke).contains { $0.token == issued && $0.status == 200 } })
        #expect(await serve.terminate() == 0)
    }

    @Test("a user deleted here since the first run is not brought back by a re-run of the same file, nor by --dry-run's count")
    func deletedStayDeleted() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let users = Self.users(setup, ids: ["kept-1", "gone-1"])
        let file = try setup.file("users.jsonl", Self.orchardLines(users))
        #expect(try await setup.run(["accounts", "import", file]).status == 0)
        let deleted = try await setup.run(["accounts", "delete", "gone-1"])
        #expect(deleted.status == 0, "\(deleted.standardError)")

        let dry = Setup.counts(try await setup.run(["accounts", "import", file, "--dry-run"]).standardOutput)
        #expect(dry["imported"] == 0 && dry["skipped"] == 2, "\(dry)")
        let again = try await setup.run(["accounts", "import", file])
        #expect(again.status == 0, "\(again.standardError)")
        let counts = Setup.counts(again.standardOutput)
        #expect(counts["imported"] == 0 && counts["skipped"] == 2, "\(counts)")
        #expect(try await setup.run(["accounts", "show", "gone-1"]).status == 3, "the deleted user came back")
        // Under another account id too: the subject is what was deleted.
        let renamed = try setup.file(
            "renamed.jsonl",
            #"{"apple_sub": "\#(users[1].user.sub)", "account_id": "gone-again", "email": "\#(users[1].email)"}"# + "\n"
        )
        #expect(Setup.counts(try await setup.run(["accounts", "import", renamed]).standardOutput)["skipped"] == 1)
        #expect(try await setup.run(["accounts", "show", "gone-again"]).status == 3)
    }

    @Test("a creation date in the future or out of range is an invalid record, never a crash")
    func datesOutOfRange() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let lines = [
            #"{"apple_sub": "001234.aa.0456", "account_id": "future", "created_at": "2999-01-01T00:00:00Z"}"#,
            #"{"apple_sub": "001234.ab.0456", "account_id": "fine", "created_at": "2021-01-01T00:00:00Z"}"#,
        ]
        let file = try setup.file("dates.jsonl", lines.joined(separator: "\n") + "\n")
        let imported = try await setup.run(["accounts", "import", file, "--json"])
        #expect(imported.status == 1, "\(imported.standardError)")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(imported.standardOutput.utf8)) as? [String: Any])
        #expect(counts["imported"] as? Int == 1 && counts["invalid"] as? Int == 1, "\(counts)")
        // Firebase's auth:export writes createdAt as milliseconds in a string: one that is not a finite time in range.
        let firebase = try setup.file(
            "firebase.json",
            """
            {"users": [
              {"localId": "nan-user", "createdAt": "nan", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001234.ac.0456"}]},
              {"localId": "huge-user", "createdAt": "1e300", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001234.ad.0456"}]},
              {"localId": "max-user", "createdAt": 9223372036854775807, "providerUserInfo": [{"providerId": "apple.com", "rawId": "001234.ae.0456"}]},
              {"localId": "ok-user", "createdAt": "1600000000000", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001234.af.0456"}]}
            ]}
            """
        )
        let fromFirebase = try await setup.run(["accounts", "import", firebase, "--from", "firebase", "--json"])
        #expect(fromFirebase.status == 1, "\(fromFirebase.standardError)")
        let firebaseCounts = try #require(try JSONSerialization.jsonObject(with: Data(fromFirebase.standardOutput.utf8)) as? [String: Any])
        #expect(firebaseCounts["imported"] as? Int == 1 && firebaseCounts["invalid"] as? Int == 3, "\(firebaseCounts)")
        #expect(try await setup.run(["accounts", "show", "ok-user"]).status == 0)
    }

    @Test("a re-run skips, a duplicate is counted, bad records are reported by number and rule only, and nothing is in plaintext")
    func nothingTwiceNothingLeaked() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let users = Self.users(setup, ids: ["first-1", "first-2", "first-3"])
        var lines = Self.orchardLines(users).split(separator: "\n").map(String.init)
        // Line 4: the first user's subject again, under another id; line 5: the second user's id again, another subject.
        lines.append(#"{"apple_sub": "\#(users[0].user.sub)", "account_id": "another-id"}"#)
        lines.append(#"{"apple_sub": "001234.\#(String(repeating: "cd", count: 16)).0456", "account_id": "first-2"}"#)
        // Lines 6-9: not JSON, an id with a slash, a client id not configured, no apple_sub; line 10 is empty.
        let secret = "victim-secret-\(UUID().uuidString)@example.com"
        lines.append("{\"apple_sub\": \"\(secret)")
        lines.append(#"{"apple_sub": "001234.ee.0456", "account_id": "has/slash", "email": "\#(secret)"}"#)
        lines.append(#"{"apple_sub": "001234.ff.0456", "client_id": "com.other.app", "email": "\#(secret)"}"#)
        lines.append(#"{"email": "\#(secret)"}"#)
        lines.append("")
        let file = try setup.file("mixed.jsonl", lines.joined(separator: "\n") + "\n")

        let dry = try await setup.run(["accounts", "import", file, "--dry-run", "--json"])
        #expect(dry.status == 1, "\(dry.standardError)")
        let dryCounts = try #require(try JSONSerialization.jsonObject(with: Data(dry.standardOutput.utf8)) as? [String: Any])
        #expect(dryCounts["imported"] as? Int == 3 && dryCounts["duplicate"] as? Int == 2 && dryCounts["invalid"] as? Int == 4)
        #expect(try await setup.run(["accounts", "list"]).standardOutput.split(separator: "\n").count == 1, "--dry-run wrote")

        let first = try await setup.run(["accounts", "import", file, "--json"])
        #expect(first.status == 1)
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(first.standardOutput.utf8)) as? [String: Any])
        #expect(counts["imported"] as? Int == 3)
        #expect(counts["duplicate"] as? Int == 2)
        #expect(counts["invalid"] as? Int == 4)
        #expect(counts["skipped"] as? Int == 0)
        let invalid = try #require(counts["invalid_lines"] as? [[String: Any]])
        #expect(invalid.compactMap { $0["line"] as? Int } == [6, 7, 8, 9])
        for output in [first.standardOutput, first.standardError, dry.standardOutput, dry.standardError] {
            #expect(!output.contains(secret), "a record's content reached the report")
            #expect(!output.contains(users[0].user.sub))
        }

        // Again: everything there is skipped, nothing twice.
        let again = try await setup.run(["accounts", "import", file])
        let againCounts = Setup.counts(again.standardOutput)
        #expect(againCounts["imported"] == 0 && againCounts["skipped"] == 3 && againCounts["duplicate"] == 2)
        #expect(try await setup.run(["accounts", "list"]).standardOutput.split(separator: "\n").count == 4, "a header and three accounts")

        // No email, subject or name of a user in plaintext in the database's files.
        let files: [(name: String, bytes: Data)]
        if let database = setup.database {
            files = try await database.files()
        } else {
            files = try setup.base.directory.allFileContents().filter { $0.name.contains("sqlite") }
        }
        #expect(!files.isEmpty, "the scan found the database's files")
        for user in users {
            for secret in [user.email, user.user.sub, user.first, user.last] {
                for file in files { #expect(file.bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in plaintext in \(file.name)") }
            }
        }
    }

    @Test("an unreadable file or a bad setting exits 2 with one line; a document that is not the source's shape too")
    func badInput() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let missing = try await setup.run(["accounts", "import", setup.base.directory.file("nope.json")])
        #expect(missing.status == 2)
        #expect(missing.standardError.split(separator: "\n").count == 1, "\(missing.standardError)")
        let file = try setup.file("one.jsonl", Self.orchardLines(Self.users(setup, ids: ["one"])))
        let client = try await setup.run(["accounts", "import", file, "--client-id", "com.not.configured"])
        #expect(client.status == 2)
        #expect(client.standardError.contains("--client-id"))
        let noVault = try await setup.run(["accounts", "import", file], environment: ["ORCHARD_VAULT_KEYS": ""])
        #expect(noVault.status == 2)
        let notFirebase = try setup.file("not-firebase.json", #"{"accounts": [{"uid": "a"}]}"#)
        let shape = try await setup.run(["accounts", "import", notFirebase, "--from", "firebase"])
        #expect(shape.status == 2)
        #expect(shape.standardError.contains("users"))
        let usage = try await setup.run(["accounts", "import", file, "--from", "okta"])
        #expect(usage.status == 64)
    }

    @Test("kill -9 in the middle of an import, then a re-run: every account exactly once")
    func killMidway() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let count = 20_000
        let lines = (0..<count).map { index in
            #"{"apple_sub": "001234.\#(String(format: "%032x", index)).0456", "account_id": "bulk-\#(index)", "email": "bulk\#(index)@example.com"}"#
        }
        let file = try setup.file("bulk.jsonl", lines.joined(separator: "\n") + "\n")
        let process = Process()
        process.executableURL = OrchardProcess.executable
        process.arguments = ["accounts", "import", file]
        process.environment = setup.environment.merging(["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcess.start(process)
        let counter: @Sendable () async -> Int = {
            let listed = try? await OrchardProcess.runInBackground(["accounts", "list", "--limit", "1000000"], environment: setup.environment)
            return max(0, (listed?.standardOutput.split(separator: "\n").count ?? 1) - 1)
        }
        #expect(await eventually { await counter() > 0 }, "the import wrote nothing")
        kill(process.processIdentifier, SIGKILL)
        await ChildProcess.end(process)
        let partial = await counter()
        #expect(partial < count, "the import finished before the kill: \(partial)")
        let rerun = try await setup.run(["accounts", "import", file])
        #expect(rerun.status == 0, "\(rerun.standardError)")
        let counts = Setup.counts(rerun.standardOutput)
        #expect(counts["skipped"] == partial, "\(rerun.standardOutput)")
        #expect(counts["imported"] == count - partial)
        #expect(await counter() == count)
    }

    @Test("imported account ids of every allowed shape page their history and appear in access tokens")
    func idsOfEveryShape() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let ids = ["auth0|5f3c9A", "Firebase.UID-AbC_9:x@y", String(repeating: "Z", count: 128)]
        let users = Self.users(setup, ids: ids)
        #expect(try await setup.run(["accounts", "import", try setup.file("shapes.jsonl", Self.orchardLines(users))]).status == 0)
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.base.directory.path, http: setup.base.http)
        let client = setup.base.client(serve)
        for user in users {
            var token = ""
            for _ in 0..<2 {
                let signIn = try await client.signIn(user.user, clientID: "com.example.orchard.app").response
                token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            }
            // Four events (imported, two sign-ins... and the newest first): paged one at a time to the end.
            var seen: [String] = []
            var before: String?
            repeat {
                let page = try await client.request(.GET, "/v1/account/events?limit=1" + (before.map { "&before=\($0)" } ?? ""), bearer: token)
                #expect(page.status == 200, "\(user.id): \(String(decoding: page.body, as: UTF8.self))")
                seen += (page.json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
                before = page.json["next"] as? String
            } while before != nil && seen.count < 10
            #expect(seen == ["signed_in", "signed_in", "imported"], "\(user.id): \(seen)")
            let access = try await client.request(.POST, "/v1/session/token", bearer: token)
            let claims = try AccessTokenClaims.decode(try #require(access["access_token"]))
            #expect(claims["sub"] as? String == user.id)
        }
        #expect(await serve.terminate() == 0)
    }
}

/// An access token's claims, unverified.
enum AccessTokenClaims {
    static func decode(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return [:] }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return (Data(base64Encoded: text).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }) ?? [:]
    }
}

/// What the import tests ask of an installation.
extension InstallationOnBackend {
    /// Writes `text` to a file of the folder and returns its path.
    func file(_ name: String, _ text: String) throws -> String {
        let path = base.directory.file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `orchard accounts show ID` as a dictionary of its lines.
    func show(_ id: String) async throws -> [String: String] {
        let shown = try await run(["accounts", "show", id])
        #expect(shown.status == 0, "accounts show \(id): \(shown.standardError)")
        return Dictionary(
            shown.standardOutput.split(separator: "\n").compactMap { line in
                line.firstIndex(of: ":").map { (String(line[..<$0]), line[line.index($0, offsetBy: 2)...].trimmingCharacters(in: .whitespaces)) }
            },
            uniquingKeysWith: { first, _ in first }
        )
    }

    /// The closing counts of an import's output (`name: N` lines).
    static func counts(_ output: String) -> [String: Int] {
        Dictionary(
            output.split(separator: "\n").compactMap { line -> (String, Int)? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, let count = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { return nil }
                return (String(parts[0]), count)
            },
            uniquingKeysWith: { first, _ in first }
        )
    }
}
