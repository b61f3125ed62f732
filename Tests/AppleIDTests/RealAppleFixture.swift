import AppleID
import Foundation
import Testing

/// One genuine (or deliberately tampered) Apple artifact from `Fixtures/` (see the fixtures' README upstream).
struct RealAppleFixture: Decodable, Sendable, CustomTestStringConvertible {
    struct Payload: Decodable, Sendable {
        let aud: String
        let iat: Int
        let exp: Int
        let nonce: String?
        let events: String?
        let sub: String?
        let email: String?
    }

    struct Window: Decodable, Sendable {
        let suggestedClockOverride: Int

        private enum CodingKeys: String, CodingKey {
            case suggestedClockOverride = "suggested_clock_override"
        }
    }

    let id: String
    let kind: String
    let jwt: String
    let payload: Payload
    let jwk: [String: String]
    let jwkSourceFile: String
    let validWindow: Window?

    private enum CodingKeys: String, CodingKey {
        case id, kind, jwt, payload, jwk
        case jwkSourceFile = "jwk_source_file"
        case validWindow = "valid_window"
    }

    var testDescription: String { id }

    /// The Apple subject the token is about (from `sub`, or from a notification's `events`).
    var subject: String? {
        if let sub = payload.sub { return sub }
        guard let events = payload.events,
            let object = try? JSONSerialization.jsonObject(with: Data(events.utf8)) as? [String: Any]
        else { return nil }
        return object["sub"] as? String
    }

    /// A tampered copy that must be refused.
    var isNegative: Bool { kind.hasPrefix("negative") }

    /// A server-to-server notification (genuine or tampered).
    var isNotification: Bool { kind.hasSuffix("server_to_server_notification") }

    /// An instant inside the token's validity window.
    var validInstant: Date {
        Date(timeIntervalSince1970: TimeInterval(validWindow?.suggestedClockOverride ?? payload.iat + 60))
    }

    /// A key set holding only this token's key.
    var ownKeyJSON: Data {
        // Force-try: a dictionary of strings always serializes.
        try! JSONSerialization.data(withJSONObject: ["keys": [jwk]])
    }

    /// The Fixtures folder in the test bundle.
    static var folder: URL {
        // Force-unwrap: the test target declares the folder as a resource.
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!
    }

    /// Every token fixture (identity tokens, notifications, negative controls), by file name.
    static let all: [RealAppleFixture] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix("jwks-") && !$0.hasPrefix("_") && $0.hasSuffix(".json") }.compactMap { name in
            guard let data = try? Data(contentsOf: folder.appending(path: name)) else { return nil }
            return try? JSONDecoder().decode(RealAppleFixture.self, from: data)
        }
    }()

    /// The names of every JWKS file.
    static let jwksFiles: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix("jwks-") }.sorted()
    }()

    /// The contents of a fixture file.
    static func data(named name: String) throws -> Data {
        try Data(contentsOf: folder.appending(path: name))
    }
}
