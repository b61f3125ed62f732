import AppleID
import Foundation
import Logging
import NIOCore
import NIOSSL

/// The checks of `orchard notifications doctor`: what Apple's servers need of a notification endpoint, tried from where
/// it runs.
///
/// Each check ends pass, warn or fail with a reason, in this order: `https`, `tls_handshake`, `certificate`,
/// `old_tls_refused`, `probe`. A check that cannot run because of an earlier one fails with `not checked: …`: all
/// four after `https` when the URL is not https; `certificate` and `old_tls_refused` when no connection could be
/// made; `probe` when the handshake Apple would make failed. A URL with a user name or password fails `https`, and
/// the other checks run on it without them. Every network step has the same deadline (5 seconds).
struct NotificationEndpointDoctor: Sendable {
    /// The roots a server's certificate chain must lead to.
    enum Trust: Sendable {
        /// The system's roots, as Apple's servers have their own.
        case system
        /// Only these certificates (`--ca-file`), read from `file`.
        case certificates([NIOSSLCertificate], file: String)

        /// The roots as NIOSSL takes them.
        var roots: NIOSSLTrustRoots {
            switch self {
            case .system: .default
            case .certificates(let certificates, _): .certificates(certificates)
            }
        }

        /// The roots in words, for a reason: `the system roots`, `the certificates in ca.pem`.
        var description: String {
            switch self {
            case .system: "the system roots"
            case .certificates(_, let file): "the certificates in \(file)"
            }
        }
    }

    /// The checks, in the order they run.
    enum CheckName: String, Sendable, CaseIterable, Encodable {
        /// The URL is `https`, with no user name or password.
        case https
        /// A TLS 1.2 or 1.3 handshake with a certificate chain trusted by the roots and valid for the host.
        case tlsHandshake = "tls_handshake"
        /// The server's certificate does not expire within the renewal margin.
        case certificate
        /// TLS 1.0 and 1.1 are refused.
        case oldTLSRefused = "old_tls_refused"
        /// An unsigned probe is answered `400` `notification_invalid` in time, without a redirect.
        case probe
    }

    /// How a check ended.
    enum Outcome: String, Sendable, Encodable {
        /// As Apple needs it.
        case pass
        /// Works, but needs attention (a certificate about to expire, old TLS versions accepted).
        case warn
        /// Apple's notifications would not arrive (or the check could not run).
        case fail
    }

    /// One check and how it ended.
    struct Check: Sendable, Equatable, Encodable {
        /// Which check.
        let name: CheckName
        /// How it ended.
        let result: Outcome
        /// Why, in a sentence.
        let detail: String

        /// A check that ended with `result` because of `detail`.
        init(_ name: CheckName, _ result: Outcome, _ detail: String) {
            self.name = name
            self.result = result
            self.detail = detail
        }
    }

    /// Every check on one URL: what the command prints.
    struct Report: Sendable, Encodable {
        /// The URL checked, with any user name and password replaced by `<redacted>`.
        let url: String
        /// Whether no check failed (warnings do not count against it).
        let ok: Bool
        /// The checks, in ``CheckName`` order.
        let checks: [Check]

        /// A report of `checks` on `url` (given as typed; its credentials are redacted here).
        init(url: String, checks: [Check]) {
            self.url = NotificationEndpointDoctor.redacted(url)
            self.ok = !checks.contains { $0.result == .fail }
            self.checks = checks
        }

        /// The report as plain-text lines: the URL, one line per check, then the verdict.
        var lines: [String] {
            let width = CheckName.allCases.map(\.rawValue.count).max() ?? 0
            var lines = ["url: \(url)"]
            for check in checks {
                let name = check.name.rawValue.padding(toLength: width, withPad: " ", startingAt: 0)
                lines.append("\(name)  \(check.result == .fail ? "FAIL" : check.result.rawValue)  \(check.detail)")
            }
            let warnings = checks.filter { $0.result == .warn }.count
            if !ok {
                lines.append("result: FAIL")
            } else {
                lines.append(warnings == 0 ? "result: pass" : "result: pass, \(warnings) warning\(warnings == 1 ? "" : "s")")
            }
            return lines
        }

        /// The report as one line of JSON: `{"checks": [{"detail", "name", "result"}], "ok", "url"}`.
        var json: String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }

    /// Where a URL leads: what the network checks connect to.
    struct Endpoint: Sendable {
        /// The URL without its user name and password.
        let url: String
        /// The host name or IP address (without brackets).
        let host: String
        /// The port (443 unless the URL names one).
        let port: Int
        /// The name for SNI and the certificate check; `nil` for an IP address.
        let serverName: String?
    }

    /// The roots the certificate chain must lead to.
    let trust: Trust
    /// The clock the certificate's dates are compared with.
    let clock: any WallClock
    /// The logger of the probe's HTTP client.
    let logger: Logger
    /// The deadline of each network step: connecting, each handshake, the probe's answer.
    var limit: TimeAmount = .seconds(5)
    /// How long before its expiry a certificate is warned about.
    var renewalMargin: TimeInterval = 14 * 86_400

    /// Runs every check on `url`, in order.
    func examine(_ url: String) async -> Report {
        let (https, endpoint) = Self.checkURL(url)
        guard let endpoint else {
            let later: [CheckName] = [.tlsHandshake, .certificate, .oldTLSRefused, .probe]
            return Report(url: url, checks: [https] + later.map { Self.notChecked($0, because: "the URL is not an https URL") })
        }
        let probe = TLSHandshakeProbe(host: endpoint.host, port: endpoint.port, serverName: endpoint.serverName, limit: limit)
        let tls = await checkHandshake(endpoint, probe: probe)
        var checks = [https, tls.handshake, tls.certificate]
        if tls.connected {
            checks.append(await checkOldTLS(probe))
        } else {
            checks.append(Self.notChecked(.oldTLSRefused, because: "no connection"))
        }
        if tls.trusted {
            checks.append(await checkProbe(endpoint))
        } else {
            checks.append(Self.notChecked(.probe, because: "no TLS handshake Apple would accept"))
        }
        return Report(url: url, checks: checks)
    }

    /// The `https` check, and the endpoint when the URL can be connected to (an `https` URL with a host, with or
    /// without a user name and password).
    static func checkURL(_ text: String) -> (Check, Endpoint?) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let rawHost = components.host, !rawHost.isEmpty
        else {
            return (Check(.https, .fail, "not an absolute URL with a host"), nil)
        }
        guard scheme == "https" else {
            return (Check(.https, .fail, "the scheme is \(scheme): Apple posts notifications only to https URLs"), nil)
        }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        var bare = components
        bare.user = nil
        bare.password = nil
        let endpoint = Endpoint(url: bare.string ?? text, host: host, port: components.port ?? 443, serverName: isAddress ? nil : host)
        guard components.user == nil, components.password == nil else {
            return (
                Check(.https, .fail, "the URL holds a user name or password, which Apple never sends (the other checks ran without them)"),
                endpoint
            )
        }
        return (Check(.https, .pass, "https, with no user name or password"), endpoint)
    }

    /// A check that did not run because an earlier one failed.
    static func notChecked(_ name: CheckName, because reason: String) -> Check {
        Check(name, .fail, "not checked: \(reason)")
    }

    /// `url` with its user name and password, if any, replaced by `<redacted>`.
    static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest[..<(rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<schemeEnd.upperBound]) + "<redacted>" + String(url[at...])
    }

    /// Text from the server (a header, an error), shortened and without control characters, fit for one line.
    static func clean(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
        return cleaned.count > 200 ? cleaned.prefix(200) + "…" : cleaned
    }

    /// The deadline in whole seconds, for a reason.
    var limitText: String { "\(limit.nanoseconds / 1_000_000_000) s" }
}
