import AppleID
import AppleIDEmulator
import Foundation
import SwiftProtobuf

/// The JSON readers on the package mirror, on the payload of an identity token: how much of a verification's time
/// around the RSA operation would another reader than Foundation's save? (Verification's goal is 0.6 × openssl.)
///
/// `JSONReaderBenchmark [--seconds 2]` decodes one emulator-signed token's payload in a loop with: Foundation's
/// `JSONDecoder` into Orchard's ``AppleIdentityClaims`` (what the verifier runs), Foundation's `JSONSerialization`,
/// and swift-protobuf's JSON reader into a message of the same sixteen claims (the lenient ones as
/// `google.protobuf.Value`, unknown fields ignored). The protobuf figure leaves out turning its values into Orchard's
/// types, so it is a lower bound. Prints one JSON object: microseconds per decode.
@main
struct JSONReaderBenchmark {
    static func main() throws {
        var seconds = 2.0
        if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--seconds", let value = Double(CommandLine.arguments[2]) {
            seconds = value
        }
        let clientID = "com.example.orchard.app"
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "EMULATOR01",
                keyID: "EMULATORK1",
                clientIDs: [clientID],
                clientPublicKeyPEM: AppleEmulatorConfiguration.makeClientKey().publicKeyPEM
            )
        )
        let token = try emulator.signIdentityToken(
            claims: emulator.identityTokenClaims(
                user: emulator.makeUser(),
                clientID: clientID,
                nonce: "n-\(UUID().uuidString)",
                authorizationCode: "c\(UUID().uuidString)"
            )
        )
        let parts = token.split(separator: ".")
        guard let payload = Base64URL.decode(parts[1].utf8) else { throw Failure() }
        let bytes = [UInt8](payload)
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true

        // Each reader must read the token, or its figure means nothing.
        let decoder = JSONDecoder()
        let claims = try decoder.decode(AppleIdentityClaims.self, from: payload)
        let message = try ClaimsMessage(jsonUTF8Bytes: bytes, options: options)
        guard message.sub == claims.sub.value, message.nonce == claims.nonce, message.exp != nil else { throw Failure() }

        let report = [
            "foundation_json_decoder_us": try microseconds(seconds) { _ = try decoder.decode(AppleIdentityClaims.self, from: payload) },
            "foundation_json_serialization_us": try microseconds(seconds) { _ = try JSONSerialization.jsonObject(with: payload) },
            "swift_protobuf_json_us": try microseconds(seconds) { _ = try ClaimsMessage(jsonUTF8Bytes: bytes, options: options) },
            "payload_bytes": Double(payload.count),
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    struct Failure: Error {}

    /// Microseconds per call of `body`, run back to back for `seconds`.
    static func microseconds(_ seconds: Double, _ body: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        let start = clock.now
        var count = 0
        while clock.now < deadline {
            for _ in 0..<256 { try body() }
            count += 256
        }
        return (clock.now - start) / .microseconds(1) / Double(count)
    }
}
