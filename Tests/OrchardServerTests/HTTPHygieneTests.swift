import Accounts
import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("HTTP hygiene: problem details for every failure")
struct HTTPHygieneTests {
    @Test("bad JSON, a missing field and a wrong type are 400 invalid_request naming the field")
    func badJSON() async throws {
        try await OrchardHarness.with { h in
            let notJSON = try await h.request(.POST, "/v1/auth/apple", body: Data("{nope".utf8), headers: [("Content-Type", "application/json")])
            #expect(notJSON.status == 400)
            #expect(notJSON.code == "invalid_request")
            #expect(notJSON.header("Content-Type") == "application/problem+json")
            #expect(notJSON["type"] == "urn:orchard:error:invalid_request")
            #expect(notJSON.json["status"] as? Int == 400)

            let missing = try await h.request(.POST, "/v1/auth/apple", json: ["identity_token": "a.b.c"])
            #expect(missing.code == "invalid_request")
            #expect(missing["detail"]?.contains("authorization_code") == true)

            let wrongType = try await h.request(.POST, "/v1/auth/apple", json: ["identity_token": 5, "authorization_code": "x"])
            #expect(wrongType.code == "invalid_request")
            #expect(wrongType["detail"] == "field 'identity_token' must be a string")

            let array = try await h.request(.POST, "/v1/auth/apple", body: Data("[]".utf8), headers: [("Content-Type", "application/json")])
            #expect(array.code == "invalid_request")
            #expect(array["detail"] == "the body must be an object")

            let empty = try await h.request(.POST, "/v1/auth/apple")
            #expect(empty.code == "invalid_request")
        }
    }

    @Test("repeated refusals each answer with their own detail, however they alternate")
    func repeatedRefusals() async throws {
        try await OrchardHarness.with { h in
            for _ in 0..<3 {
                for field in ["identity_token", "authorization_code", "nonce"] {
                    var body: [String: any Sendable] = ["identity_token": "a.b.c", "authorization_code": "x", "nonce": "n"]
                    body[field] = 5
                    let response = try await h.request(.POST, "/v1/auth/apple", json: body)
                    #expect(response.status == 400)
                    #expect(response.code == "invalid_request")
                    #expect(response["detail"] == "field '\(field)' must be a string")
                    #expect(response.header("Content-Type") == "application/problem+json")
                    #expect(response.header("Cache-Control") == "no-store")
                }
            }
        }
    }

    @Test("every code a client can see answers the contract's status, and each lifecycle code has its own")
    func statusTable() {
        // The contract's "Failures and their codes", row by row, and the HTTP hygiene rules' codes.
        let contract: [String: Int] = [
            "invalid_request": 400, "identity_token_malformed": 401, "identity_token_signature": 401, "identity_token_issuer": 401,
            "identity_token_audience": 401, "identity_token_expired": 401, "nonce_missing": 401, "nonce_mismatch": 401,
            "nonce_reused": 401, "authorization_code_rejected": 401, "subject_mismatch": 401, "apple_client_rejected": 502,
            "apple_unavailable": 503, "storage_unavailable": 503, "session_invalid": 401, "session_revoked": 401, "not_found": 404,
            "notification_invalid": 400, "state_invalid": 400, "internal_error": 500, "payload_too_large": 413,
            "method_not_allowed": 405, "rate_limited": 429, "csrf_rejected": 403, "web_flow_disabled": 404,
            // The operator listener's, from the contract's "Operators".
            "operator_unauthorized": 401,
        ]
        #expect(Set(ProblemCode.allCases.map(\.rawValue)) == Set(contract.keys))
        for code in ProblemCode.allCases {
            #expect(Int(code.status.code) == contract[code.rawValue], "\(code)")
            #expect(!code.title.isEmpty)
        }
        var seen = Set<ProblemCode>()
        for code in AccountsError.Code.allCases {
            let problem = OrchardProblem(AccountsError(code, "why"))
            #expect(problem.code.rawValue == code.rawValue, "\(code) is answered with the code of its own name")
            seen.insert(problem.code)
        }
        #expect(seen.count == AccountsError.Code.allCases.count)
    }

    @Test("the memo of encoded problem bodies tells apart every member and starts over when full")
    func problemBodyMemo() throws {
        let memo = EncodedProblemBodies(capacity: 3)
        func members(_ problem: OrchardProblem) throws -> [String: String] {
            let body = try memo.body(of: problem)
            let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] ?? [:]
            return object.compactMapValues { $0 as? String }
        }
        let a = OrchardProblem.invalidRequest("field 'a' must be a string")
        #expect(try members(a)["detail"] == "field 'a' must be a string")
        #expect(try members(a)["detail"] == "field 'a' must be a string")
        #expect(memo.count == 1)
        #expect(try members(.invalidRequest("field 'b' must be a string"))["detail"] == "field 'b' must be a string")
        let revoked = OrchardProblem(.lifecycle(.sessionRevoked), detail: "ended", extra: ["reason": "sign_out"])
        let deleted = OrchardProblem(.lifecycle(.sessionRevoked), detail: "ended", extra: ["reason": "account_deleted"])
        #expect(try members(revoked)["reason"] == "sign_out")
        #expect(try members(deleted)["reason"] == "account_deleted")
        #expect(memo.count <= 3)
        let notFound = OrchardProblem(.lifecycle(.notFound), detail: "d")
        let disabled = OrchardProblem(.webFlowDisabled, detail: "d")
        #expect(try memo.body(of: notFound) != memo.body(of: disabled))
        #expect(try members(notFound)["title"] == "Not found")
        #expect(try members(disabled)["code"] == "web_flow_disabled")
        for n in 0..<10 {
            #expect(try members(.invalidRequest("detail \(n)"))["detail"] == "detail \(n)")
            #expect(memo.count <= 3)
        }
        #expect(try members(a)["detail"] == "field 'a' must be a string")
    }

    @Test("a body over 64 KiB with a Content-Length is 413 payload_too_large, and one of 64 KiB is read")
    func oversized() async throws {
        try await OrchardHarness.with { h in
            let big = Data(repeating: UInt8(ascii: "a"), count: 70 * 1024)
            let response = try await h.request(.POST, "/v1/auth/apple", body: big, headers: [("Content-Type", "application/json")])
            #expect(response.status == 413)
            #expect(response.code == "payload_too_large")
            let json = try await h.request(.POST, "/v1/auth/apple", json: ["identity_token": String(repeating: "x", count: 70 * 1024)])
            #expect(json.status == 413)

            // The limit itself, as the Content-Length announces it: 64 KiB is read (and refused as JSON), a byte more is not.
            let limit = Data(repeating: UInt8(ascii: "a"), count: 64 * 1024)
            let atLimit = try await h.request(.POST, "/v1/auth/apple", body: limit, headers: [("Content-Type", "application/json")])
            #expect(atLimit.status == 400)
            #expect(atLimit.code == "invalid_request")
            let overLimit = try await h.request(
                .POST,
                "/v1/auth/apple",
                body: limit + Data("a".utf8),
                headers: [("Content-Type", "application/json")]
            )
            #expect(overLimit.status == 413)
        }
    }

    @Test("a body sent in chunks, without a Content-Length, is read whole up to 64 KiB and refused one byte beyond")
    func chunkedBodies() async throws {
        try await OrchardHarness.with { h in
            // A sign-in body padded with spaces to `size` bytes, streamed in pieces of 10,000 bytes.
            func post(size: Int) async throws -> (status: Int, code: String?) {
                var body = Data(#"{"identity_token":"a.b.c","authorization_code":"x","nonce":"n"}"#.utf8)
                body.append(Data(repeating: UInt8(ascii: " "), count: size - body.count))
                let pieces = stride(from: 0, to: body.count, by: 10_000).map {
                    ByteBuffer(bytes: body[$0..<min($0 + 10_000, body.count)])
                }
                var request = HTTPClientRequest(url: h.baseURL + "/v1/auth/apple")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .stream(
                    AsyncStream { continuation in
                        for piece in pieces { continuation.yield(piece) }
                        continuation.finish()
                    },
                    length: .unknown
                )
                let response = try await h.client.http.execute(request, timeout: .seconds(60))
                let answer = try await response.body.collect(upTo: 1 << 20)
                let object = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any]
                return (Int(response.status.code), object?["code"] as? String)
            }
            // Read whole: the JSON ends in the first piece and the rest is whitespace, so it is the token that is refused.
            let atLimit = try await post(size: 64 * 1024)
            #expect(atLimit.status == 401)
            #expect(atLimit.code == "identity_token_malformed")
            let overLimit = try await post(size: 64 * 1024 + 1)
            #expect(overLimit.status == 413)
            #expect(overLimit.code == "payload_too_large")
        }
    }

    @Test("an unknown path is 404 not_found; a known path with the wrong method is 405 with Allow")
    func notFoundAndMethod() async throws {
        try await OrchardHarness.with { h in
            let missing = try await h.request(.GET, "/v1/nothing-here")
            #expect(missing.status == 404)
            #expect(missing.code == "not_found")
            let wrong = try await h.request(.GET, "/v1/auth/apple")
            #expect(wrong.status == 405)
            #expect(wrong.code == "method_not_allowed")
            #expect(wrong.header("Allow") == "POST")
            #expect(wrong.header("Content-Type") == "application/problem+json")
            #expect(wrong.header("Cache-Control") == "no-store")
            #expect(try await h.request(.PUT, "/v1/session").code == "method_not_allowed")
        }
    }

    @Test("health, readiness, metrics and the OpenAPI document are served")
    func operations() async throws {
        try await OrchardHarness.with { h in
            #expect(try await h.request(.GET, "/health/live").status == 200)
            #expect(try await h.request(.GET, "/health/ready").status == 200)
            #expect(try await h.signIn(h.emulator.makeUser()).response.status == 200)
            let metrics = try await h.request(.GET, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
            // Orchard's own metrics reach /metrics through the injected factory, with no process-wide bootstrap.
            let exposition = String(decoding: metrics.body, as: UTF8.self)
            #expect(exposition.contains(#"orchard_sign_ins_total{outcome="new_account"} 1"#))
            #expect(exposition.contains(#"orchard_apple_request_duration_seconds_count{endpoint="token",outcome="ok"} 1"#))
            #expect(exposition.contains("orchard_apple_base_url_overridden 1"))
            let openAPI = try await h.request(.GET, "/openapi.yaml")
            #expect(openAPI.status == 200)
            #expect(String(decoding: openAPI.body, as: UTF8.self).hasPrefix("openapi: 3.1"))
        }
    }

    @Test("a method that is not one of HTTP's own is counted as _OTHER, so clients cannot add metric series at will")
    func metricsMethodsBounded() async throws {
        try await OrchardHarness.with { h in
            for method in ["PROPFIND", "MKCOL", "LOCK", "PURGE"] {
                #expect(try await RawHTTP.send(port: h.server.port, method, "/health/live").status == 405)
            }
            let exposition = String(decoding: try await h.request(.GET, "/metrics").body, as: UTF8.self)
            for method in ["PROPFIND", "MKCOL", "LOCK", "PURGE"] { #expect(!exposition.contains(method)) }
            #expect(exposition.contains(#"http_request_method="_OTHER""#))
        }
    }
}
