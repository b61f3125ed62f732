import AppleID
import AppleIDEmulator
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Testing

extension ServeProcessTests {
    @Test("concurrent writes committed together are each durable: kill -9 right after their answers loses none")
    func groupCommitSurvivesKill() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        let jtis = (0..<48).map { "durable-\($0)-\(UUID().uuidString)" }

        let (statuses, nonces) = try await withThrowingTaskGroup(of: (Int?, String?).self) { group in
            for jti in jtis {
                group.addTask {
                    let payload = try setup.emulator.signNotification(
                        type: "email-disabled",
                        sub: "000000.\(jti).0000",
                        clientID: "com.example.orchard.app",
                        jti: jti
                    )
                    let status = try await setup.emulator.sendNotification(payload: payload, to: "\(serve.baseURL)/v1/apple/notifications")
                    return (status, nil)
                }
            }
            for _ in 0..<16 {
                group.addTask { (nil, try await client.issueNonce()) }
            }
            return try await group.reduce(into: ([Int](), [String]())) { result, answer in
                if let status = answer.0 { result.0.append(status) }
                if let nonce = answer.1 { result.1.append(nonce) }
            }
        }
        // Every answer is in: kill at once, with no chance to flush anything more.
        await serve.kill()
        #expect(statuses.count == 48 && statuses.allSatisfy { $0 == 200 })
        #expect(nonces.count == 16)

        let database = try await SQLiteDatabaseClient.open(path: setup.directory.file("orchard.sqlite"), logger: Logger(label: "test"))
        let (storedJTIs, storedNonces) = try await database.withDatabase { db in
            (
                Set(try await db.raw("SELECT jti FROM notification_inbox").all().map { try $0.decode(column: "jti", as: String.self) }),
                Set(try await db.raw("SELECT hash FROM nonces").all().map { try $0.decode(column: "hash", as: String.self) })
            )
        }
        await database.close()
        #expect(Set(jtis).subtracting(storedJTIs).isEmpty, "acknowledged notifications were lost")
        #expect(Set(nonces.map(AppleNonce.hash)).subtracting(storedNonces).isEmpty, "issued nonces were lost")
    }
}
