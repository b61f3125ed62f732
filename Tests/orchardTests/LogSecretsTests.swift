import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

/// `serve` at `trace`, with a secret in every setting that can hold one: nothing a library describes (its services,
/// configurations, clients) and nothing Orchard logs may carry any of them.
@Suite("Secrets never reach the log, at any level")
struct LogSecretsTests {
    @Test("serve at trace with secrets in every setting: the whole log, start-up to shutdown, holds none of them")
    func traceLogHoldsNoSecret() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        let receiver = try await WebhookReceiver.start()
        let collector = try await OTLPReceiver.start()
        let database = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
        defer {
            Task {
                await receiver.stop()
                await collector.stop()
                await database?.remove()
                await setup.stop()
            }
        }
        var environment = setup.environment
        var secrets: [String: String] = [:]
        // The webhook URL's userinfo and query, and the signing secret.
        let hook = try #require(URLComponents(string: receiver.url))
        let hookURL = "http://hookuser:pa55w0rdHOOK@\(hook.host!):\(hook.port!)\(hook.path)?token=s3cretQUERYvalue"
        environment["ORCHARD_WEBHOOK_URLS"] = hookURL
        secrets["webhook password"] = "pa55w0rdHOOK"
        secrets["webhook query secret"] = "s3cretQUERYvalue"
        let webhookKey = "whsec_" + Data("webhook-signing-key-0123456789abc".utf8).base64EncodedString()
        environment["ORCHARD_WEBHOOK_SECRET"] = webhookKey
        secrets["webhook secret"] = String(webhookKey.dropFirst("whsec_".count))
        // Two vault keys, the second only for decryption.
        let vaultKeys = try #require(environment["ORCHARD_VAULT_KEYS"])
        let oldKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        environment["ORCHARD_VAULT_KEYS"] = vaultKeys + ",k0:" + oldKey
        secrets["vault key"] = String(vaultKeys.split(separator: ":")[1])
        secrets["old vault key"] = oldKey
        // The private key file's contents: every line of its base64 body.
        let pem = try String(contentsOfFile: setup.directory.file("key.p8"), encoding: .utf8)
        for (index, line) in pem.split(separator: "\n").enumerated() where !line.hasPrefix("-----") && line.count >= 16 {
            secrets["private key line \(index)"] = String(line)
        }
        // The database password (PostgreSQL; the test cluster trusts loopback, so any password connects).
        if let database {
            guard case .postgres(let url) = database.url, var components = URLComponents(string: url) else { throw CancellationError() }
            components.password = "pa55w0rdDATABASE"
            environment["ORCHARD_DATABASE_URL"] = components.string
            components.password = "pa55w0rdLISTENER"
            environment["ORCHARD_DATABASE_LISTEN_URL"] = components.string
            secrets["database password"] = "pa55w0rdDATABASE"
            secrets["listener password"] = "pa55w0rdLISTENER"
        }
        // Tracing to a collector whose headers carry a credential.
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
        environment["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
        environment["OTEL_EXPORTER_OTLP_HEADERS"] = "authorization=Bearer otelSECRETheader"
        secrets["OTLP header"] = "otelSECRETheader"
        environment["ORCHARD_LOG_LEVEL"] = "trace"
        receiver.setBehaviour(.down)

        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        // A sign-in, a session check, a deletion (a revocation at Apple, a webhook that fails, then one that arrives).
        let user = setup.emulator.makeUser()
        let signIn = try await client.signIn(user, clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200)
        #expect(try await client.request(.DELETE, "/v1/account", bearer: token).status == 200)
        #expect(await eventually(timeout: 30) { !receiver.attempts.isEmpty }, "the webhook was attempted")
        receiver.setBehaviour(.accept)
        #expect(await eventually(timeout: 60) { !receiver.delivered.isEmpty }, "the webhook was delivered")
        let status = await serve.terminate()
        #expect(status == 0, "serve exited \(status); the end of its log: \(serve.logText.suffix(6_000))")

        let log = serve.logText
        #expect(log.contains("trace") || log.contains("debug"), "the log is at trace: \(log.prefix(500))")
        #expect(log.contains("sl-services") || log.contains("Starting service"), "the service group's start-up lines are in the log")
        for (name, secret) in secrets.sorted(by: { $0.key < $1.key }) {
            #expect(!log.contains(secret), "the log holds the \(name)")
        }
    }
}
