import ArgumentParser
import Configuration
import Foundation
import OrchardServer

/// `orchard config check`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "The configuration serve would use.",
        subcommands: [Check.self]
    )

    /// `orchard config check`.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load the configuration exactly as serve would and print every effective setting with its source.",
            discussion: """
                One line per setting: NAME=VALUE (environment|file|default). Vault keys, the Apple private key, the \
                webhook secret and a database password are shown as <redacted>. Checks the key file, the vault keys, \
                the URLs and the TLS files as serve does; exit 0 when serve would start with them, else 2 with one \
                line naming the setting at fault. With --apple it then asks Apple, for each configured client id, \
                whether it accepts the team, the key and the client id (a client secret with a code that cannot exist: \
                Apple's invalid_grant means accepted, invalid_client names the client id refused with the likely \
                causes), and fetches Apple's keys: one line each, exit 1 unless every client id is accepted.
                """
        )

        @Flag(help: "Also ask Apple whether it accepts the team, the key and each client id (exit 1 if not).")
        var apple = false

        func run() async throws {
            let configuration = try await CommandSupport.loadConfiguration(needs: .all)
            do {
                try configuration.checkFiles()
            } catch {
                CommandSupport.fail(error)
            }
            let environment = ProcessInfo.processInfo.environment
            let file: ConfigReader?
            do {
                file = try await OrchardConfiguration.makeFileReader(environment: environment)
            } catch {
                CommandSupport.fail(error)
            }
            for (name, value) in configuration.effectiveSettings {
                let source = OrchardConfiguration.source(of: name, environment: environment, file: file)
                print("\(name)=\(value) (\(source.rawValue))")
            }
            if let path = environment["ORCHARD_CONFIG_FILE"], !path.isEmpty { print("ORCHARD_CONFIG_FILE=\(path) (environment)") }
            FileHandle.standardError.write(Data("orchard: the configuration is usable\n".utf8))
            if apple, await !AppleAcceptanceCheck.run(configuration) {
                FileHandle.standardError.write(Data("orchard: Apple does not accept every client id (see the apple: lines)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
