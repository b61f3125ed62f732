import ArgumentParser

/// The `orchard` executable: parses the command and runs it; the work is in the libraries.
@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchard",
        abstract: "Sign in with Apple, the whole account lifecycle: sign-in, sessions, deletion with token revocation.",
        discussion: """
            Configuration comes from environment variables (see docs/configuration.md), or a JSON/YAML file named by \
            ORCHARD_CONFIG_FILE; the environment wins.
            """,
        subcommands: [
            ServeCommand.self, DemoCommand.self, AppleEmulatorCommand.self, MigrateCommand.self, TokenCommand.self,
            AccountsCommand.self,
            VaultCommand.self,
            KeysCommand.self,
            TransferCommand.self,
            ConfigCommand.self,
            OperatorsCommand.self,
            NotificationsCommand.self,
        ]
    )
}
