import Foundation
import OrchardTesting
import Testing

/// The real Apple-signed fixtures, shared with the AppleID tests.
struct Fixture: Sendable, CustomTestStringConvertible {
    let name: String
    let jwt: String
    let jwks: String
    let at: Date
    let exp: Date
    let audience: String
    let genuine: Bool

    var testDescription: String { name }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("AppleIDTests/Fixtures")

    static func all() throws -> [Fixture] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { ($0.hasPrefix("idtoken-") || $0.hasPrefix("s2s-") || $0.hasPrefix("negative-")) && $0.hasSuffix(".json") }
            .sorted()
        var byID: [String: [String: Any]] = [:]
        for file in files {
            let data = try Data(contentsOf: directory.appendingPathComponent(file))
            byID[String(file.dropLast(5))] = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
        return try files.map { file -> Fixture in
            let id = String(file.dropLast(5))
            let object = byID[id]!
            let source = object["derived_from"].flatMap { byID[$0 as! String] } ?? object
            let jwk = try #require(source["jwk"])
            let jwks = try JSONSerialization.data(withJSONObject: ["keys": [jwk]])
            let window = try #require(source["valid_window"] as? [String: Any])
            let payload = try #require(source["payload"] as? [String: Any])
            return Fixture(
                name: id,
                jwt: try #require(object["jwt"] as? String),
                jwks: String(decoding: jwks, as: UTF8.self),
                at: Date(timeIntervalSince1970: try #require(window["suggested_clock_override"] as? Double)),
                exp: Date(timeIntervalSince1970: try #require(window["exp"] as? Double)),
                audience: try #require(payload["aud"] as? String),
                genuine: !id.hasPrefix("negative-")
            )
        }
    }
}

@Suite("orchard token inspect over Apple's real tokens", .backendIndependent)
struct TokenInspectCommandTests {
    static let fixtures = (try? Fixture.all()) ?? []

    func run(_ fixture: Fixture, at: Date, audience: String, viaStandardInput: Bool = false) async throws -> OrchardProcess.Result {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let keys = directory.file("jwks.json")
        try fixture.jwks.write(toFile: keys, atomically: true, encoding: .utf8)
        let formatter = ISO8601DateFormatter()
        return try await OrchardProcess.runInBackground(
            ["token", "inspect", viaStandardInput ? "-" : fixture.jwt, "--jwks", keys, "--at", formatter.string(from: at), "--audience", audience],
            standardInput: viaStandardInput ? fixture.jwt + "\n" : nil
        )
    }

    @Test("the fixtures are all there")
    func fixturesPresent() {
        #expect(Self.fixtures.filter(\.genuine).count == 20)
        #expect(Self.fixtures.filter { !$0.genuine }.count == 3)
    }

    @Test("genuine tokens pass inside their window; tampered ones fail the signature", arguments: Self.fixtures)
    func inspect(_ fixture: Fixture) async throws {
        let result = try await run(fixture, at: fixture.at, audience: fixture.audience)
        if fixture.genuine {
            #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
            #expect(result.standardOutput.contains("signature"))
        } else {
            #expect(result.status == 1)
            #expect(result.standardOutput.lowercased().contains("fail"))
        }
        let payload = try #require(fixture.jwt.split(separator: ".").dropFirst().first)
        _ = payload
        #expect(!result.standardOutput.contains(fixture.jwt), "the token must not be echoed")
    }

    @Test("a genuine token fails after its exp and with another audience", arguments: Self.fixtures.filter(\.genuine).prefix(3))
    func failsOutsideWindow(_ fixture: Fixture) async throws {
        let late = try await run(fixture, at: fixture.exp.addingTimeInterval(3600), audience: fixture.audience)
        #expect(late.status == 1)
        #expect(late.standardOutput.lowercased().contains("fail"))
        let foreign = try await run(fixture, at: fixture.at, audience: "com.example.someone-else")
        #expect(foreign.status == 1)
    }

    @Test("the token can come from standard input with -")
    func standardInput() async throws {
        let genuine = Self.fixtures.first { $0.genuine }
        let fixture = try #require(genuine)
        #expect(try await run(fixture, at: fixture.at, audience: fixture.audience, viaStandardInput: true).status == 0)
    }
}
