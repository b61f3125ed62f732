import Crypto
public import Foundation
import SwiftASN1
import X509

/// A certificate authority of a test's own: it issues server certificates as PEM files, which a TLS server of the test
/// loads and a client trusts through the authority's certificate file (`--ca-file`), never a system root.
public struct TestCertificateAuthority: Sendable {
    /// A server certificate and its private key, as PEM files.
    public struct Issued: Sendable {
        /// The certificate (PEM).
        public let certificateFile: String
        /// Its private key (PKCS #8, PEM).
        public let keyFile: String
    }

    /// The authority's own certificate (PEM): the file a client trusts.
    public let certificateFile: String
    private let directory: TemporaryDirectory
    private let key: P256.Signing.PrivateKey
    private let name: DistinguishedName

    /// Makes an authority named `commonName`, valid from an hour ago for a year, and writes its certificate to
    /// `ca.pem` in `directory`.
    public init(in directory: TemporaryDirectory, commonName: String = "Orchard Test CA") throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600),
            notValidAfter: Date().addingTimeInterval(365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        self.directory = directory
        self.key = key
        self.name = name
        certificateFile = directory.file("ca.pem")
        try certificate.serializeAsPEM().pemString.write(toFile: certificateFile, atomically: true, encoding: .utf8)
    }

    /// Issues a server certificate for the DNS names `hosts`, valid from an hour ago for `lifetime` seconds, signed by
    /// this authority, and writes it and a fresh key to `NAME.pem` and `NAME-key.pem`.
    public func issue(_ name: String, hosts: [String] = ["localhost"], validFor lifetime: TimeInterval = 90 * 86_400) throws -> Issued {
        let serverKey = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(hosts.first ?? name) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600),
            notValidAfter: Date().addingTimeInterval(lifetime),
            issuer: self.name,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(hosts.map { GeneralName.dnsName($0) })
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        let issued = Issued(certificateFile: directory.file("\(name).pem"), keyFile: directory.file("\(name)-key.pem"))
        try certificate.serializeAsPEM().pemString.write(toFile: issued.certificateFile, atomically: true, encoding: .utf8)
        try serverKey.pemRepresentation.write(toFile: issued.keyFile, atomically: true, encoding: .utf8)
        return issued
    }
}
