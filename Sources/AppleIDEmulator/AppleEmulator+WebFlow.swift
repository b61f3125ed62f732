import Foundation
import Synchronization

extension AppleEmulator {
    /// The user who consents on `/auth/authorize` when no `login_hint` names another: Jane Appleseed, with a private
    /// relay address.
    public static let webDemoUser = EmulatedUser(
        sub: "001234.a991ec0ffee0d15ea5e0b0a710a77e55.0001",
        email: "jane.appleseed@privaterelay.appleid.com",
        isPrivateEmail: true,
        firstName: "Jane",
        lastName: "Appleseed"
    )

    /// Makes `user` the one who consents on `/auth/authorize` when no `login_hint` names another (`nil`: back to
    /// ``webDemoUser``), so that a test can sign a given user in through a real browser, which only clicks the app's
    /// "Sign in with Apple" button.
    public func setWebUser(_ user: EmulatedUser?) {
        if let user { state.withLock { $0.remember(user) } }
        webUserSub.withLock { $0 = user?.sub }
    }

    /// Answers a browser's visit to `/auth/authorize` as Apple does once the user consents: a code and an identity
    /// token (whose `nonce` is the request's, exactly), the `state`, and on the first authorization the `user` JSON
    /// (`{"name": {"firstName", "lastName"}, "email"}`, as far as `scope` asks), to be posted to the redirect URI.
    ///
    /// With ``WebAuthorizationRequest/error`` it posts that error and the `state` instead, and authorizes nothing.
    /// An unknown client, a missing redirect URI, or a response type or mode Apple would refuse, answers 400.
    public func answerWebAuthorization(_ request: WebAuthorizationRequest) -> WebAuthorizationAnswer {
        if let refusal = refusal(of: request) {
            return WebAuthorizationAnswer(status: 400, action: nil, fields: [], refusal: refusal, user: nil)
        }
        let clientID = request.clientID ?? ""
        let redirectURI = request.redirectURI ?? ""
        var stateField: [WebAuthorizationAnswer.Field] = []
        if let state = request.state { stateField.append(.init(name: "state", value: state)) }
        if let error = request.error, !error.isEmpty {
            return WebAuthorizationAnswer(
                status: 200,
                action: redirectURI,
                fields: [.init(name: "error", value: error)] + stateField,
                refusal: nil,
                user: nil
            )
        }
        let user = consentingUser(request)
        let authorization: EmulatedAuthorization
        do {
            authorization = try authorize(user: user, clientID: clientID, nonce: request.nonce, redirectURI: redirectURI)
        } catch {
            return WebAuthorizationAnswer(status: 400, action: nil, fields: [], refusal: "server_error", user: nil)
        }
        var fields: [WebAuthorizationAnswer.Field] = [
            .init(name: "code", value: authorization.authorizationCode)
        ]
        if (request.responseType ?? "").split(separator: " ").contains("id_token") {
            fields.append(.init(name: "id_token", value: authorization.identityToken))
        }
        fields += stateField
        if authorization.isFirstAuthorization, let json = userJSON(user, scope: request.scope) {
            fields.append(.init(name: "user", value: json))
        }
        return WebAuthorizationAnswer(status: 200, action: redirectURI, fields: fields, refusal: nil, user: user)
    }

    /// Why Apple would refuse the request outright, in its terms; `nil` when it would show the consent page.
    private func refusal(of request: WebAuthorizationRequest) -> String? {
        guard let clientID = request.clientID, configuration.allClientIDs.contains(clientID) else { return "invalid_client" }
        guard let redirect = request.redirectURI.flatMap(URL.init(string:)), let scheme = redirect.scheme?.lowercased(),
            scheme == "https" || scheme == "http", redirect.host?.isEmpty == false
        else { return "invalid_request: redirect_uri must be an absolute http(s) URL" }
        let types = Set((request.responseType ?? "").split(separator: " ").map(String.init))
        guard types.contains("code"), types.isSubset(of: ["code", "id_token"]) else { return "unsupported_response_type" }
        guard request.responseMode == "form_post" else {
            return "invalid_request: the emulator answers response_mode=form_post only (required with id_token or scope)"
        }
        return nil
    }

    /// Who consents: the user `login_hint` names (by subject or email), one made for it, else the one
    /// ``setWebUser(_:)`` chose, else ``webDemoUser``.
    private func consentingUser(_ request: WebAuthorizationRequest) -> EmulatedUser {
        guard let hint = request.loginHint?.trimmingCharacters(in: .whitespaces), !hint.isEmpty else {
            let sub = webUserSub.withLock { $0 } ?? Self.webDemoUser.sub
            return user(sub: sub) ?? Self.webDemoUser
        }
        if hint.contains("@") {
            let known = state.withLock { state in state.users.values.first { $0.email?.lowercased() == hint.lowercased() } }
            return known ?? makeUser(email: hint, firstName: request.firstName, lastName: request.lastName)
        }
        return user(sub: hint) ?? makeUser(sub: hint, firstName: request.firstName, lastName: request.lastName)
    }

    /// The `user` JSON of the first authorization, holding what `scope` asks for; `nil` when that is nothing.
    private func userJSON(_ user: EmulatedUser, scope: String?) -> String? {
        let scopes = Set((scope ?? "").split(separator: " ").map(String.init))
        var object: [String: any Sendable] = [:]
        if scopes.contains("name"), user.firstName != nil || user.lastName != nil {
            var name: [String: any Sendable] = [:]
            if let first = user.firstName { name["firstName"] = first }
            if let last = user.lastName { name["lastName"] = last }
            object["name"] = name
        }
        if scopes.contains("email"), let email = user.email { object["email"] = email }
        guard !object.isEmpty, let data = try? JSONText.object(object, order: ["name", "firstName", "lastName", "email"]) else {
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }
}
