import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import OrchardServer
import OrchardTesting
import SwiftASN1
import Testing
import X509

/// Built-in HTTPS (`ORCHARD_TLS_CERT_FILE`, `ORCHARD_TLS_KEY_FILE`) and the metrics listener (`ORCHARD_METRICS_PORT`).
@Suite("Listeners: built-in HTTPS and a metrics listener of its own")
struct ListenerTests {
    /// A self-signed certificate and its key, as PEM files in `directory`.
    static func makeCertificate(in directory: URL) throws -> (certificate: String, key: String, pem: String) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("localhost") }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-60),
            notValidAfter: Date().addingTimeInterval(3600),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {},
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        let pem = try certificate.serializeAsPEM().pemString
        let certificatePath = directory.appendingPathComponent("cert.pem").path
        let keyPath = directory.appendingPathComponent("key.pem").path
        try pem.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        return (certificatePath, keyPath, pem)
    }

    /// A client that trusts only `pem`, with the TLS versions and HTTP versions given.
    static func client(trusting pem: String, maximumTLS: TLSVersion? = nil, http1Only: Bool = false) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        tls.certificateVerification = .noHostnameVerification
        if let maximumTLS {
            tls.minimumTLSVersion = .tlsv1
            tls.maximumTLSVersion = maximumTLS
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        if http1Only { configuration.httpVersion = .http1Only }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    static func get(_ client: HTTPClient, _ url: String) async throws -> (status: Int, version: HTTPVersion, body: String) {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.version, String(buffer: body))
    }

    /// Runs `body` with an Orchard that speaks HTTPS with a fresh self-signed certificate (whose PEM it is given).
    static func withBuiltInTLS(_ body: (OrchardHarness, _ pem: String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orchard-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.makeCertificate(in: directory)
        try await OrchardHarness.with(
            configure: {
                $0.listener.tlsCertificateFile = files.certificate
                $0.listener.tlsKeyFile = files.key
            },
            { h in try await body(h, files.pem) }
        )
    }

    @Test("with a certificate and key, serve speaks HTTPS only: TLS 1.2 and 1.3 with HTTP/2 and HTTP/1.1, older TLS refused")
    func builtInHTTPS() async throws {
        try await Self.withBuiltInTLS { h, pem in
            let https = h.baseURL.replacingOccurrences(of: "http://", with: "https://")
            let modern = try Self.client(trusting: pem)
            let http1 = try Self.client(trusting: pem, http1Only: true)
            let tls12 = try Self.client(trusting: pem, maximumTLS: .tlsv12)
            let tls11 = try Self.client(trusting: pem, maximumTLS: .tlsv11)
            let h2 = try await Self.get(modern, https + "/health/live")
            #expect(h2.status == 200)
            #expect(h2.version == .http2, "ALPN should choose HTTP/2")
            let h1 = try await Self.get(http1, https + "/health/live")
            #expect(h1.status == 200)
            #expect(h1.version == .http1_1)
            #expect(try await Self.get(tls12, https + "/health/live").status == 200)
            // The API works over it: a nonce through HTTP/2.
            var nonce = HTTPClientRequest(url: https + "/v1/auth/apple/nonce")
            nonce.method = .POST
            #expect(try await modern.execute(nonce, timeout: .seconds(10)).status == .created)

            // Refused at the handshake (the client retries its connection until its deadline, then gives up).
            await #expect(throws: (any Error).self, "TLS 1.1 must be refused") {
                _ = try await tls11.execute(HTTPClientRequest(url: https + "/health/live"), timeout: .seconds(2))
            }
            // Plain HTTP on the same port is not served (the TLS server waits for a handshake that never comes).
            await #expect(throws: (any Error).self) {
                _ = try await h.http.execute(HTTPClientRequest(url: h.baseURL + "/health/live"), timeout: .seconds(2))
            }
            for client in [modern, http1, tls12, tls11] { try await client.shutdown() }
        }
    }

    @Test("with ORCHARD_METRICS_PORT, /metrics is on its own listener and the public one answers it 404 not_found")
    func metricsListener() async throws {
        let port = try await ServeProcess.freePort()
        try await OrchardHarness.with(
            configure: { $0.listener.metricsPort = port },
            { h in
                _ = try await h.request(.POST, "/v1/auth/apple/nonce")
                let hidden = try await h.request(.GET, "/metrics")
                #expect(hidden.status == 404)
                #expect(hidden.code == "not_found")
                let metrics = try await h.request(.GET, "http://127.0.0.1:\(port)/metrics")
                #expect(metrics.status == 200)
                #expect(String(decoding: metrics.body, as: UTF8.self).contains("orchard_"))
                #expect(try await h.request(.GET, "http://127.0.0.1:\(port)/health/live").status == 404)
            }
        )
    }

    @Test("ORCHARD_METRICS_PORT equal to ORCHARD_ADMIN_PORT: one private listener serves /metrics and the operator API")
    func metricsOnTheAdminListener() async throws {
        let port = try await ServeProcess.freePort()
        try await OrchardHarness.with(
            configure: {
                $0.listener.metricsPort = port
                $0.listener.adminPort = port
            },
            { h in
                _ = try await h.request(.POST, "/v1/auth/apple/nonce")
                #expect(try await h.request(.GET, "/metrics").code == "not_found")
                let metrics = try await h.request(.GET, "http://127.0.0.1:\(port)/metrics")
                #expect(metrics.status == 200)
                #expect(String(decoding: metrics.body, as: UTF8.self).contains("orchard_"))
                // The operator routes are there too, and still want an operator.
                #expect(try await h.request(.GET, "http://127.0.0.1:\(port)/admin/v1/delivery").code == "operator_unauthorized")
                #expect(try await h.request(.GET, "http://127.0.0.1:\(port)/admin").status == 200)
            }
        )
    }
}
