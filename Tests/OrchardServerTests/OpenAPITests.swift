import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("The OpenAPI document matches the running server")
struct OpenAPITests {
    /// `(method, path)` pairs the document lists, read from its `paths:` section.
    static func documentedOperations(_ yaml: String) -> [(String, String)] {
        var operations: [(String, String)] = []
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.hasPrefix(" ") && !line.isEmpty { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "post", "put", "patch", "delete"].contains(method) { operations.append((method.uppercased(), path)) }
            }
        }
        return operations
    }

    @Test("every documented operation is served (never 404 or 405) and every served path is documented")
    func documentMatchesServer() async throws {
        try await OrchardHarness.withWebFlow { h, _ in
            let yaml = String(decoding: try await h.request(.GET, "/openapi.yaml").body, as: UTF8.self)
            let operations = Self.documentedOperations(yaml)
            #expect(operations.count >= 8)
            for (method, path) in operations {
                let response = try await h.request(HTTPMethod(rawValue: method), path)
                #expect(![404, 405].contains(response.status), "\(method) \(path) answered \(response.status)")
            }
            for path in [
                "/v1/auth/apple/nonce", "/v1/auth/apple", "/v1/session", "/v1/account", "/v1/apple/notifications", "/health/live",
                "/health/ready", "/metrics", "/v1/auth/apple/authorize", "/v1/auth/apple/callback", "/account",
            ] {
                #expect(operations.contains { $0.1 == path }, "\(path) is not documented")
            }
        }
    }

    @Test("every problem code the server can answer is listed in the document")
    func problemCodesDocumented() async throws {
        try await OrchardHarness.with { h in
            let yaml = String(decoding: try await h.request(.GET, "/openapi.yaml").body, as: UTF8.self)
            for code in [
                "invalid_request", "identity_token_malformed", "nonce_reused", "session_revoked", "payload_too_large",
                "method_not_allowed", "not_found", "apple_unavailable", "storage_unavailable", "notification_invalid",
                "web_flow_disabled", "state_invalid", "csrf_rejected",
            ] {
                #expect(yaml.contains("- \(code)"), "\(code) missing")
            }
        }
    }
}
