import AppleID
import Foundation
import Testing

@Suite("Apple's REST answers")
struct AppleRESTErrorTests {
    private func failure(_ status: Int, _ body: String) -> AppleIDError {
        AppleRESTClient.failure(status: status, body: Data(body.utf8))
    }

    @Test("invalid_grant is authorization_code_rejected, with Apple's code kept")
    func invalidGrant() {
        let error = failure(400, #"{"error":"invalid_grant","error_description":"The code has already been used."}"#)
        #expect(error.code == .authorizationCodeRejected)
        #expect(error.appleErrorCode == .invalidGrant)
        #expect(!error.isTransient)
        #expect(error.reason.contains("already been used"))
    }

    @Test(
        "Apple's refusals of Orchard's own request are apple_client_rejected, with Apple's code kept",
        arguments: [
            ("invalid_client", AppleErrorCode.invalidClient), ("unauthorized_client", .unauthorizedClient),
            ("invalid_request", .invalidRequest), ("unsupported_grant_type", .unsupportedGrantType),
            ("invalid_scope", .invalidScope), ("something_new", .other("something_new")),
        ]
    )
    func clientRejected(raw: String, code: AppleErrorCode) {
        let error = failure(400, #"{"error":"\#(raw)"}"#)
        #expect(error.code == .appleClientRejected)
        #expect(error.appleErrorCode == code)
        #expect(!error.isTransient)
    }

    @Test(
        "5xx, 429 and bodies that are not Apple's error JSON are apple_unavailable (transient)",
        arguments: [(500, "{}"), (502, "<html>"), (503, ""), (429, #"{"error":"invalid_grant"}"#), (400, "oops"), (404, ""), (400, "{}")]
    )
    func unavailable(status: Int, body: String) {
        let error = failure(status, body)
        #expect(error.code == .appleUnavailable)
        #expect(error.isTransient)
        #expect(error.appleErrorCode == nil)
    }

    @Test("Apple's error codes read and write Apple's spelling")
    func errorCodes() throws {
        for raw in ["invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "x"] {
            #expect(AppleErrorCode(rawValue: raw).rawValue == raw)
        }
        let body = try JSONDecoder().decode(AppleErrorResponse.self, from: Data(#"{"error":"invalid_client"}"#.utf8))
        #expect(body == AppleErrorResponse(error: .invalidClient))
    }

    @Test("token answers are read with bearer or Bearer, with or without a refresh token, and print no token")
    func tokenResponse() throws {
        let exchange = try JSONDecoder().decode(
            AppleTokenResponse.self,
            from: Data(#"{"access_token":"a.b","token_type":"bearer","expires_in":3600,"refresh_token":"r.0.x","id_token":"e.f.g"}"#.utf8)
        )
        #expect(exchange.accessToken?.value == "a.b")
        #expect(exchange.refreshToken?.value == "r.0.x")
        #expect(exchange.idToken?.value == "e.f.g")
        #expect(exchange.expiresIn == 3600)
        let refresh = try JSONDecoder().decode(
            AppleTokenResponse.self,
            from: Data(#"{"access_token":"a.c","token_type":"Bearer","expires_in":3600}"#.utf8)
        )
        #expect(refresh.tokenType == "Bearer")
        #expect(refresh.refreshToken == nil)
        #expect(!"\(exchange)".contains("r.0.x"))
        #expect(!"\(exchange)".contains("a.b"))
    }

    @Test("token type hints use Apple's spelling")
    func hints() {
        #expect(TokenTypeHint.refreshToken.rawValue == "refresh_token")
        #expect(TokenTypeHint.accessToken.rawValue == "access_token")
    }
}
