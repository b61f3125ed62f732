import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("orchard serve's tracing: OTLP spans of requests, Apple calls and jobs, and trace ids in the logs", .backendIndependent)
struct TracingTests {
    @Test("a sign-in and a deletion, exported to an OTLP receiver: a server span per request, Apple's calls and the jobs inside")
    func spansOfASignInAndADeletion() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        let receiver = try await OTLPReceiver.start()
        defer { Task { await receiver.stop() } }
        var environment = setup.environment
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        environment["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
        environment["OTEL_BSP_SCHEDULE_DELAY"] = "100"
        environment["ORCHARD_LOG_LEVEL"] = "debug"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)

        let (signIn, authorization, nonce) = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app")
        #expect(signIn.status == 200)
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        // The deletion's own revocation fails, so the background worker's retry makes a trace of its own.
        setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1)
        let deletion = try await client.request(.DELETE, "/v1/account", bearer: token)
        #expect(deletion["apple_revocation"] == "pending")

        let complete = await eventually {
            let names = Set(receiver.spans.map(\.name))
            return ["/v1/auth/apple", "/v1/account", "POST /auth/token", "job pass revocations"].allSatisfy(names.contains)
                && receiver.spans.filter { $0.name == "POST /auth/revoke" }.count == 2
        }
        let spans = receiver.spans
        #expect(complete, "spans received: \(spans.map(\.name)); serve: \(serve.logText)")

        func parent(of span: OTLPReceiver.ExportedSpan) -> OTLPReceiver.ExportedSpan? {
            spans.first { $0.spanID == span.parentSpanID && $0.traceID == span.traceID }
        }
        func ancestors(of span: OTLPReceiver.ExportedSpan) -> [String] {
            var names: [String] = []
            var current = span
            while let next = parent(of: current) {
                names.append(next.name)
                current = next
            }
            return names
        }

        // The sign-in: a server span with its route and status, and the code exchange as its client child.
        let signInSpan = try #require(spans.first { $0.name == "/v1/auth/apple" })
        #expect(signInSpan.kind == 2)
        #expect(signInSpan.parentSpanID == nil)
        #expect(signInSpan.attributes["http.response.status_code"] == "200")
        #expect(signInSpan.attributes["http.route"] == "/v1/auth/apple")
        let exchange = try #require(spans.first { $0.name == "POST /auth/token" })
        #expect(exchange.kind == 3)
        #expect(exchange.traceID == signInSpan.traceID)
        #expect(ancestors(of: exchange).last == "/v1/auth/apple")
        #expect(exchange.attributes["apple.endpoint"] == "token")
        #expect(exchange.attributes["http.response.status_code"] == "200")

        // The deletion: its own attempt is a job span inside the request, with Apple's 503 on its call.
        let deletionSpan = try #require(spans.first { $0.name == "/v1/account" })
        let revokes = spans.filter { $0.name == "POST /auth/revoke" }
        let inRequest = try #require(revokes.first { $0.traceID == deletionSpan.traceID })
        #expect(ancestors(of: inRequest) == ["job revocations", "/v1/account"])
        #expect(inRequest.attributes["http.response.status_code"] == "503")
        // The worker's retry: a trace rooted in a job pass.
        let retried = try #require(revokes.first { $0.traceID != deletionSpan.traceID })
        #expect(ancestors(of: retried) == ["job revocations", "job pass revocations"])
        #expect(retried.attributes["http.response.status_code"] == "200")
        #expect(parent(of: retried)?.attributes["job.outcome"] == "done")

        // The logs written inside the sign-in carry its trace id.
        #expect(serve.logText.contains("trace_id=\(signInSpan.traceID)"), "\(serve.logText)")

        // Nothing the user or Apple handed over is in what was exported.
        let exported = receiver.rawBodies.joined()
        for secret in [authorization.identityToken, authorization.authorizationCode, nonce, token, authorization.user.sub] {
            #expect(!exported.contains(secret))
        }
        #expect(await serve.terminate() == 0)
    }

    @Test("without an OTLP endpoint, serve exports nothing and its logs carry no trace id")
    func offByDefault() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        var environment = setup.environment
        environment["ORCHARD_LOG_LEVEL"] = "debug"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let signIn = try await setup.client(serve).signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
        #expect(signIn.status == 200)
        #expect(await serve.terminate() == 0)
        #expect(serve.logText.contains("Apple accepted the request"))
        #expect(!serve.logText.contains("trace_id="))
    }
}
