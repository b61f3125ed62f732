public import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting

/// The HTTP routes under fuzzing, through a real Orchard (``OrchardHarness``: the emulator, a SQLite file, a socket).
///
/// Besides crashes, a bug is an answer of 500 or more, an error that is not a problem-details document with a `code`,
/// or a forged sign-in, notification or callback answered as a success.
public final class HTTPFuzzing: Sendable {
    let harness: OrchardHarness
    let client: OrchardClient

    /// The shared instance: one Orchard for the whole run.
    public static let shared: HTTPFuzzing = Fuzzer.blocking {
        do {
            let harness = try await OrchardHarness.start { configuration in
                configuration.webFlow.redirectURI = URL(string: OrchardHarness.webRedirectURI)!
                configuration.webFlow.clientID = OrchardHarness.webClientID
            }
            return HTTPFuzzing(harness: harness)
        } catch {
            fatalError("cannot start Orchard for fuzzing: \(error)")
        }
    }

    init(harness: OrchardHarness) {
        self.harness = harness
        client = OrchardClient(baseURL: harness.baseURL, http: harness.http, emulator: harness.emulator)
    }

    /// A JSON request body. The first byte picks the route and the content type:
    /// 0 `POST /v1/auth/apple`, 1 `POST /v1/apple/notifications`, 2 `POST /v1/auth/apple/nonce` (all JSON),
    /// 3 `POST /v1/auth/apple` without a JSON content type.
    public func requestBody(_ input: Data) {
        guard let mode = input.first else { return }
        let body = Data(input.dropFirst())
        let json = [("Content-Type", "application/json")]
        switch mode % 4 {
        case 0: send(.POST, "/v1/auth/apple", body: body, headers: json, input: input, forbidsSuccess: true)
        case 1: send(.POST, "/v1/apple/notifications", body: body, headers: json, input: input, forbidsSuccess: true)
        case 2: send(.POST, "/v1/auth/apple/nonce", body: body, headers: json, input: input, forbidsSuccess: false)
        default: send(.POST, "/v1/auth/apple", body: body, headers: [("Content-Type", "text/plain")], input: input, forbidsSuccess: true)
        }
    }

    /// Apple's form post to the web flow's callback. The first byte picks whether the post carries a fresh, genuine
    /// `state` and its binding cookie (odd: `GET /v1/auth/apple/authorize` first, then `state=…&` before the rest) or is
    /// the rest alone (even).
    public func callbackForm(_ input: Data) {
        guard let mode = input.first else { return }
        var body = Data(input.dropFirst())
        var headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", harness.appleOrigin)]
        if mode % 2 == 1 {
            let client = self.client
            let started = Fuzzer.blocking { try? await client.request(.GET, "/v1/auth/apple/authorize") }
            guard let started, started.status == 302,
                let location = started.header("Location").flatMap(URLComponents.init(string:)),
                let state = location.queryItems?.first(where: { $0.name == "state" })?.value,
                let cookie = started.headers(named: "Set-Cookie").first(where: { $0.hasPrefix("__Host-orchard_web_state=") })
            else {
                Fuzzer.bug("GET /v1/auth/apple/authorize did not start a flow", input: input)
            }
            headers.append(("Cookie", String(cookie.prefix { $0 != ";" })))
            body = Data("state=\(state)&".utf8) + body
        }
        let response = send(.POST, "/v1/auth/apple/callback", body: body, headers: headers, input: input, forbidsSuccess: false)
        if let location = response.header("Location"), location.contains("signed_in") {
            Fuzzer.bug("a forged callback signed in: \(location)", input: input)
        }
    }

    @discardableResult
    private func send(
        _ method: HTTPMethod,
        _ path: String,
        body: Data,
        headers: [(String, String)],
        input: Data,
        forbidsSuccess: Bool
    ) -> TestResponse {
        let client = self.client
        let outcome = Fuzzer.blocking { () -> Result<TestResponse, any Error> in
            do {
                return .success(try await client.request(method, path, body: body, headers: headers))
            } catch {
                return .failure(error)
            }
        }
        let response: TestResponse
        switch outcome {
        case .success(let answered): response = answered
        case .failure(let error): Fuzzer.bug("\(method) \(path) failed: \(error)", input: input)
        }
        let text = String(decoding: response.body, as: UTF8.self)
        if response.status >= 500 { Fuzzer.bug("\(method) \(path) answered \(response.status): \(text)", input: input) }
        if forbidsSuccess && response.status < 300 {
            Fuzzer.bug("\(method) \(path) accepted a forged input: \(response.status) \(text)", input: input)
        }
        guard response.status >= 400 else { return response }
        let problem = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        if response.header("Content-Type")?.hasPrefix("application/problem+json") != true || problem?["code"] as? String == nil {
            Fuzzer.bug("\(method) \(path) answered \(response.status) without a problem document: \(text)", input: input)
        }
        return response
    }
}
