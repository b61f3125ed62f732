import AppleID
import Foundation
import NIOCore
import NIOSSL

extension NotificationEndpointDoctor {
    /// What the handshake checks found, and which later checks can run.
    struct TLSFindings: Sendable {
        /// The `tls_handshake` check.
        let handshake: Check
        /// The `certificate` check.
        let certificate: Check
        /// Whether a connection was made (`old_tls_refused` can tell something).
        let connected: Bool
        /// Whether the handshake Apple would make succeeded (`probe` can run).
        let trusted: Bool
    }

    /// `tls_handshake` and `certificate`: a TLS 1.2 or 1.3 handshake verifying the chain against ``trust`` and the
    /// host name, as Apple's servers would; then the server's certificate's dates. When the handshake fails, a second
    /// one that verifies nothing tells a refused certificate (and why) from a server that cannot do TLS 1.2 or 1.3.
    func checkHandshake(_ endpoint: Endpoint, probe: TLSHandshakeProbe) async -> TLSFindings {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.maximumTLSVersion = .tlsv13
        configuration.trustRoots = trust.roots
        configuration.certificateVerification = .fullVerification
        do throws(TLSHandshakeProbe.Failure) {
            let handshake = try await probe.handshake(configuration)
            return TLSFindings(
                handshake: Check(
                    .tlsHandshake,
                    .pass,
                    "\(Self.name(of: handshake.version)), with a chain trusted by \(trust.description), valid for \(endpoint.host)"
                ),
                certificate: checkDates(of: handshake.certificate),
                connected: true,
                trusted: true
            )
        } catch {
            switch error {
            case .unreachable(let reason):
                return TLSFindings(
                    handshake: Check(.tlsHandshake, .fail, "no connection to \(endpoint.host):\(endpoint.port): \(reason)"),
                    certificate: Self.notChecked(.certificate, because: "no connection"),
                    connected: false,
                    trusted: false
                )
            case .timedOut:
                return TLSFindings(
                    handshake: Check(.tlsHandshake, .fail, "connected, but no TLS handshake within \(limitText)"),
                    certificate: Self.notChecked(.certificate, because: "no TLS handshake"),
                    connected: true,
                    trusted: false
                )
            case .setUp(let error):
                return TLSFindings(
                    handshake: Check(.tlsHandshake, .fail, "this machine cannot make the handshake: \(Self.clean("\(error)"))"),
                    certificate: Self.notChecked(.certificate, because: "no TLS handshake"),
                    connected: false,
                    trusted: false
                )
            case .refused(let error):
                return await diagnose(error, endpoint: endpoint, probe: probe)
            }
        }
    }

    /// Why a verified handshake failed: a handshake that verifies nothing gets the certificate the server presents,
    /// which says what was wrong with it; when even that fails, the TLS versions or the protocol are the problem.
    private func diagnose(_ error: any Error, endpoint: Endpoint, probe: TLSHandshakeProbe) async -> TLSFindings {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.maximumTLSVersion = .tlsv13
        configuration.certificateVerification = .none
        let presented: PeerCertificate?
        do throws(TLSHandshakeProbe.Failure) {
            presented = try await probe.handshake(configuration).certificate
        } catch {
            return TLSFindings(
                handshake: Check(.tlsHandshake, .fail, Self.describe(handshakeError: error)),
                certificate: Self.notChecked(.certificate, because: "no TLS 1.2 or 1.3 handshake"),
                connected: true,
                trusted: false
            )
        }
        guard let presented else {
            return TLSFindings(
                handshake: Check(.tlsHandshake, .fail, "the server presented no certificate"),
                certificate: Check(.certificate, .fail, "the server presented no certificate"),
                connected: true,
                trusted: false
            )
        }
        return TLSFindings(
            handshake: Check(.tlsHandshake, .fail, problem(with: presented, refusedWith: error, host: endpoint.host)),
            certificate: checkDates(of: presented),
            connected: true,
            trusted: false
        )
    }

    /// What is wrong with a certificate the verified handshake refused: the host name, its dates, or its chain.
    private func problem(with certificate: PeerCertificate, refusedWith error: any Error, host: String) -> String {
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return "the certificate is not valid for \(host): it names \(Self.clean(certificate.namesDescription))"
        }
        let now = clock.now()
        if certificate.notValidAfter <= now {
            return "the certificate expired on \(certificate.notValidAfter.formatted(.iso8601))"
        }
        if certificate.notValidBefore > now {
            return "the certificate is not valid before \(certificate.notValidBefore.formatted(.iso8601))"
        }
        var reason: String
        if certificate.isSelfSigned {
            reason = "the certificate is not trusted: it is self-signed (\(Self.clean(certificate.subject))), not issued by \(trust.description)"
        } else {
            let issuer = Self.clean(certificate.issuer)
            reason =
                "the certificate is not trusted: its chain does not lead to \(trust.description) (issuer \(issuer); an intermediate "
                + "certificate missing on the server, or a private CA: see --ca-file)"
        }
        if certificate.isValid(for: host) == false {
            reason += "; nor is it valid for \(host): it names \(Self.clean(certificate.namesDescription))"
        }
        return reason
    }

    /// `certificate`: the server's certificate is valid now and for longer than ``renewalMargin`` (else warn).
    func checkDates(of certificate: PeerCertificate?) -> Check {
        guard let certificate else { return Check(.certificate, .fail, "the server presented no certificate") }
        let now = clock.now()
        let until = certificate.notValidAfter.formatted(.iso8601)
        if certificate.notValidBefore > now {
            return Check(.certificate, .fail, "not valid before \(certificate.notValidBefore.formatted(.iso8601))")
        }
        let left = certificate.notValidAfter.timeIntervalSince(now)
        guard left > 0 else { return Check(.certificate, .fail, "expired on \(until)") }
        let days = Int(left / 86_400)
        let inDays = days == 0 ? "less than a day" : days == 1 ? "1 day" : "\(days) days"
        guard left >= renewalMargin else {
            return Check(.certificate, .warn, "expires on \(until), in \(inDays): renew it, Apple's posts fail once it has expired")
        }
        return Check(.certificate, .pass, "valid until \(until) (\(inDays))")
    }

    /// `old_tls_refused`: a handshake offering only TLS 1.0 and 1.1, which verifies nothing (it is about the versions).
    /// Accepted: warn; refused: pass; no answer either way: warn.
    func checkOldTLS(_ probe: TLSHandshakeProbe) async -> Check {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv1
        configuration.maximumTLSVersion = .tlsv11
        configuration.certificateVerification = .none
        do throws(TLSHandshakeProbe.Failure) {
            let handshake = try await probe.handshake(configuration)
            return Check(
                .oldTLSRefused,
                .warn,
                "the server accepts \(Self.name(of: handshake.version ?? .tlsv11)): Apple uses TLS 1.2 or later, so turning 1.0 and 1.1 off loses nothing"
            )
        } catch {
            switch error {
            case .refused:
                return Check(.oldTLSRefused, .pass, "TLS 1.0 and 1.1 refused")
            case .timedOut:
                return Check(.oldTLSRefused, .warn, "no answer to a TLS 1.0 or 1.1 handshake within \(limitText): neither accepted nor refused")
            case .unreachable(let reason):
                return Check(.oldTLSRefused, .warn, "could not tell: \(reason)")
            case .setUp(let error):
                return Check(.oldTLSRefused, .warn, "could not tell: this machine cannot offer TLS 1.0 or 1.1 (\(Self.clean("\(error)")))")
            }
        }
    }

    /// `TLS 1.3`, `TLS 1.2`, …
    static func name(of version: TLSVersion?) -> String {
        switch version {
        case .tlsv1: "TLS 1.0"
        case .tlsv11: "TLS 1.1"
        case .tlsv12: "TLS 1.2"
        case .tlsv13: "TLS 1.3"
        case nil: "TLS (version unknown)"
        }
    }

    /// A failed handshake in a few words, from BoringSSL's reason (`WRONG_VERSION_NUMBER`, …) rather than its whole
    /// error stack.
    static func describe(handshakeError error: any Error) -> String {
        let text = String(describing: error)
        if error is TLSHandshakeProbe.Closed || text.contains("EOF during handshake") {
            return "the server closed the connection during the handshake"
        }
        let reasons = text.components(separatedBy: "OPENSSL_internal:").dropFirst()
            .map { part in String(part.prefix { character in character.isUppercase || character.isNumber || character == "_" }) }
            .filter { !$0.isEmpty }
        guard let reason = reasons.first else { return "the handshake failed: \(clean(text))" }
        switch reason {
        case "WRONG_VERSION_NUMBER":
            return "the server did not answer in TLS (plain HTTP on this port?)"
        case "UNSUPPORTED_PROTOCOL", "TLSV1_ALERT_PROTOCOL_VERSION":
            return "the server speaks neither TLS 1.2 nor TLS 1.3"
        case "SSLV3_ALERT_HANDSHAKE_FAILURE", "NO_SHARED_CIPHER", "NO_CIPHERS_AVAILABLE":
            return "the server refused the handshake: no TLS version or cipher suite in common"
        default:
            return "the handshake failed: \(reason.lowercased().replacingOccurrences(of: "_", with: " "))"
        }
    }
}
