import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension WebFlowController {
    /// Apple's form post (`application/x-www-form-urlencoded`).
    struct CallbackForm: Decodable {
        var code: String?
        var idToken: String?
        var state: String?
        var user: String?
        var error: String?

        enum CodingKeys: String, CodingKey {
            case code, state, user, error
            case idToken = "id_token"
        }
    }

    /// The `user` JSON Apple posts on the first authorization: `{"name": {"firstName", "lastName"}, "email"}`.
    struct PostedUser: Decodable {
        struct Name: Decodable {
            var firstName: String?
            var lastName: String?
        }
        var name: Name?
        var email: String?
    }

    /// Takes the state (single use, and only with the `__Host-orchard_web_state` cookie of the browser that started the
    /// flow), then either returns to `return_to?error=CODE` (Apple reported a failure, nothing stored) or signs the
    /// user in and returns to `return_to` with the session cookie. Every answer clears the binder cookie.
    @Sendable func callback(_ request: Request, context: Context) async throws -> Response {
        do {
            var response = try await completeFlow(request, context: context)
            response.headers.append(HTTPField(name: .setCookie, value: WebStateCookie.expiredCookie))
            return response
        } catch var problem as OrchardProblem {
            problem.headers.append(HTTPField(name: .setCookie, value: WebStateCookie.expiredCookie))
            throw problem
        } catch let error as AccountsError {
            // The problem keeps the reason it leaves out, which ProblemMiddleware logs.
            var problem = OrchardProblem(error)
            problem.headers.append(HTTPField(name: .setCookie, value: WebStateCookie.expiredCookie))
            throw problem
        }
    }

    private func completeFlow(_ request: Request, context: Context) async throws -> Response {
        guard let redirectURI, let webClientID else { throw OrchardProblem.webFlowDisabled }
        let form = try await Self.readForm(request)
        let user = try form.user.flatMap(Self.firstAuthorizationUser)
        let pending = try await states.take(form.state, binder: WebStateCookie.binder(in: request.headers))
        let returnTo = ReturnPath(validating: pending.returnTo) ?? .defaultPath

        if let error = form.error, !error.isEmpty {
            let code = Self.errorCode(error)
            context.logger.info("web flow: Apple reported a failed authorization", metadata: ["web_flow.error": "\(code)"])
            return Self.seeOther(ReturnPath.location(returnTo.withError(code)))
        }
        guard let idToken = form.idToken, !idToken.isEmpty else {
            throw OrchardProblem.invalidRequest("Apple's post carries no id_token")
        }
        guard let code = form.code, !code.isEmpty else { throw OrchardProblem.invalidRequest("Apple's post carries no code") }

        let result = try await accounts.signIn(
            SignInRequest(
                identityToken: Redacted(idToken),
                authorizationCode: Redacted(code),
                nonce: pending.nonce,
                clientID: webClientID,
                user: user,
                redirectURI: redirectURI.absoluteString,
                device: BrowserLabel.label(userAgent: request.headers[.userAgent])
            ),
            logger: context.logger
        )
        var response = Self.seeOther(ReturnPath.location(returnTo.path))
        response.headers.append(
            HTTPField(
                name: .setCookie,
                value: SessionCookie.setCookie(token: result.sessionToken.value, expiresAt: result.sessionExpiresAt, now: clock.now())
            )
        )
        return response
    }

    /// Reads at most 64 KiB of form body.
    static func readForm(_ request: Request) async throws -> CallbackForm {
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/x-www-form-urlencoded") else {
            throw OrchardProblem.invalidRequest("the callback takes Apple's form post (application/x-www-form-urlencoded)")
        }
        let buffer = try await request.collectedBody()
        do {
            return try URLEncodedFormDecoder().decode(CallbackForm.self, from: String(buffer: buffer))
        } catch {
            throw OrchardProblem.invalidRequest("the body is not a form with the fields Apple posts")
        }
    }

    /// The `user` JSON as the sign-in's first-authorization details.
    static func firstAuthorizationUser(_ json: String) throws -> SignInRequest.FirstAuthorizationUser? {
        guard !json.isEmpty else { return nil }
        let posted: PostedUser
        do {
            posted = try JSONDecoder().decode(PostedUser.self, from: Data(json.utf8))
        } catch {
            throw OrchardProblem.invalidRequest("field 'user' must be the JSON object Apple posts")
        }
        return SignInRequest.FirstAuthorizationUser(
            firstName: posted.name?.firstName,
            lastName: posted.name?.lastName,
            email: posted.email.map(Redacted.init)
        )
    }

    /// Apple's error code if it has the shape of one (letters, digits, `_`, `-`, `.`), else `authorization_failed`:
    /// it goes into a URL and onto the account page.
    static func errorCode(_ text: String) -> String {
        let allowed =
            text.utf8.count <= 64
            && text.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_-.".unicodeScalars.contains($0))
            }
        return allowed ? text : "authorization_failed"
    }

    /// `303 See Other` to `location`.
    static func seeOther(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
