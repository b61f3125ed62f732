import Foundation
import NIOSSL
import SwiftASN1
import X509

/// What `notifications doctor` reads from the certificate a server presented: its validity period, who it names and
/// who issued it, as plain values (read on the connection's event loop, carried out of it).
struct PeerCertificate: Sendable {
    /// The first instant the certificate is valid.
    let notValidBefore: Date
    /// The last instant it is valid.
    let notValidAfter: Date
    /// Its subject, e.g. `CN=auth.example.com`; `?` when the certificate cannot be parsed.
    let subject: String
    /// Its issuer, e.g. `CN=R11,O=Let's Encrypt,C=US`; `?` when the certificate cannot be parsed.
    let issuer: String
    /// The DNS names and IP addresses among its subject alternative names.
    let names: [String]

    /// Reads `certificate`; its dates come from BoringSSL, its names from its DER encoding.
    init(_ certificate: NIOSSLCertificate) {
        notValidBefore = Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore))
        notValidAfter = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
        let parsed = (try? certificate.toDERBytes()).flatMap { try? Certificate(derEncoded: $0) }
        subject = parsed.map { String(describing: $0.subject) } ?? "?"
        issuer = parsed.map { String(describing: $0.issuer) } ?? "?"
        let alternatives = parsed.flatMap { try? $0.extensions.subjectAlternativeNames }
        names = alternatives.map { $0.compactMap(Self.text) } ?? []
    }

    /// Whether it names no one else than its issuer: a self-signed certificate.
    var isSelfSigned: Bool { subject == issuer && subject != "?" }

    /// The names it is valid for, for a reason: `a.example, b.example`, or its subject when it has no alternative names.
    var namesDescription: String {
        names.isEmpty ? "no alternative name, subject \(subject)" : names.joined(separator: ", ")
    }

    /// Whether one of its names is `host` (a DNS name, or a `*.` wildcard for one label, or an IP address); `nil` when it
    /// has no alternative names to tell by.
    func isValid(for host: String) -> Bool? {
        guard !names.isEmpty else { return nil }
        let host = host.lowercased()
        return names.contains { candidate in
            let candidate = candidate.lowercased()
            if candidate == host { return true }
            guard candidate.hasPrefix("*."), let dot = host.firstIndex(of: ".") else { return false }
            return host[dot...] == candidate.dropFirst()
        }
    }

    /// A DNS name or an IP address as text; `nil` for the other kinds of name.
    private static func text(_ name: GeneralName) -> String? {
        switch name {
        case .dnsName(let name):
            return name
        case .ipAddress(let address):
            let bytes = Array(address.bytes)
            if bytes.count == 4 { return bytes.map { String($0) }.joined(separator: ".") }
            guard bytes.count == 16 else { return nil }
            return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        default:
            return nil
        }
    }
}
