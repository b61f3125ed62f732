import AppleID
import ArgumentParser
import Foundation
import Logging
import NIOSSL
import OrchardServer

extension NotificationsCommand {
    /// `orchard notifications doctor URL [--ca-file FILE] [--json]`.
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check from here what Apple's servers need of a notification endpoint: https, TLS, certificate, an answer.",
            discussion: """
                Prints each check as pass, warn or fail with the reason: https (an https URL, with no user name or \
                password), tls_handshake (TLS 1.2 or 1.3 with a certificate chain trusted by the system roots, or by \
                --ca-file, and valid for the host), certificate (does not expire within 14 days, else warn), \
                old_tls_refused (TLS 1.0 and 1.1 refused, else warn), probe (an unsigned POST {"payload": "probe"} is \
                answered within 5 seconds by 400 notification_invalid, with no redirect: Apple follows none). A check \
                that an earlier failure keeps from running fails with "not checked". Needs no configuration. Exit 0 \
                when no check failed, 1 when one did, 2 when --ca-file cannot be read.
                """
        )

        @Argument(help: "The URL Apple posts notifications to, e.g. https://auth.example.com/v1/apple/notifications.")
        var url: String

        @Option(help: ArgumentHelp("Trust only the CA certificates in this PEM file, instead of the system roots.", valueName: "file"))
        var caFile: String?

        @Flag(help: "Print the report as one JSON object: {\"url\", \"ok\", \"checks\": [{\"name\", \"result\", \"detail\"}]}.")
        var json = false

        func run() async throws {
            CommandSupport.bootstrapLogging(level: .error)
            let trust: NotificationEndpointDoctor.Trust
            if let caFile {
                trust = .certificates(Self.readCertificates(caFile), file: caFile)
            } else {
                trust = .system
            }
            let doctor = NotificationEndpointDoctor(
                trust: trust,
                clock: SystemWallClock(),
                logger: Logger(label: "orchard.notifications.doctor")
            )
            let report = await doctor.examine(url)
            if json {
                Console.line(report.json)
            } else {
                for line in report.lines { Console.line(line) }
            }
            if !report.ok { throw ExitCode(1) }
        }

        /// The certificates of a PEM file; exits 2 naming `--ca-file` when it cannot be read or holds none.
        static func readCertificates(_ path: String) -> [NIOSSLCertificate] {
            guard let certificates = try? NIOSSLCertificate.fromPEMFile(path), !certificates.isEmpty else {
                CommandSupport.fail(ConfigurationError(setting: "--ca-file", problem: "cannot read \(path) as PEM certificates"))
            }
            return certificates
        }
    }
}
