import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import NIOCore
import NIOSSL

/// The HTTP server of `serve`: plain HTTP/1.1 (behind a TLS-terminating proxy), or, with `ORCHARD_TLS_CERT_FILE` and
/// `ORCHARD_TLS_KEY_FILE`, HTTPS only, TLS 1.2 or later, with HTTP/2 and HTTP/1.1 chosen by ALPN; either way held to
/// the ``ConnectionDeadlines`` for slow and idle clients.
enum ServerTLS {
    /// Plain HTTP/1.1 held to `deadlines` (the metrics listener's, and the public one's without TLS).
    static func plainHTTP(_ deadlines: ConnectionDeadlines = ConnectionDeadlines()) -> HTTPServerBuilder {
        let http1 = deadlines.http1Configuration
        return HTTPServerBuilder { responder in
            deadlines.guarding(HTTP1Channel(responder: responder, configuration: http1))
        }
    }

    /// The server builder for `configuration`.
    ///
    /// - Throws: ``ConfigurationError`` naming the file that cannot be used.
    static func serverBuilder(
        _ configuration: OrchardConfiguration,
        deadlines: ConnectionDeadlines = ConnectionDeadlines()
    ) throws(ConfigurationError) -> HTTPServerBuilder {
        let http1 = deadlines.http1Configuration
        guard let certificateFile = configuration.listener.tlsCertificateFile, let keyFile = configuration.listener.tlsKeyFile else {
            return plainHTTP(deadlines)
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw ConfigurationError(setting: "ORCHARD_TLS_CERT_FILE", problem: "cannot read \(certificateFile) as a PEM certificate chain")
        }
        guard !chain.isEmpty else {
            throw ConfigurationError(setting: "ORCHARD_TLS_CERT_FILE", problem: "\(certificateFile) holds no certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw ConfigurationError(setting: "ORCHARD_TLS_KEY_FILE", problem: "cannot read \(keyFile) as a PEM private key")
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        do {
            // Made once here so that a key that does not match its certificate stops `serve` before it listens.
            _ = try NIOSSLContext(configuration: tls)
            let http2 = HTTP2UpgradeChannel.Configuration(idleTimeout: deadlines.idleTimeout, streamConfiguration: http1)
            let finished = tls
            return HTTPServerBuilder { responder in
                deadlines.guarding(try HTTP2UpgradeChannel(tlsConfiguration: finished, configuration: http2, responder: responder))
            }
        } catch {
            throw ConfigurationError(
                setting: "ORCHARD_TLS_CERT_FILE",
                problem: "the certificate and the key in ORCHARD_TLS_KEY_FILE cannot be used together (\(error))"
            )
        }
    }
}
