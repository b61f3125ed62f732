import ArgumentParser

/// `orchard demo [--serve]`.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole lifecycle on this machine with no set-up, printing each step and what was stored.",
        discussion: """
            Starts the Apple emulator and Orchard on free loopback ports with a temporary SQLite file and a fresh \
            vault key. Scripted users sign up, use sessions and sign out; a notification turns email forwarding off; \
            accounts are deleted with their tokens revoked at Apple, once through an Apple outage; a user who stops \
            using Sign in with Apple in her Apple ID settings is signed out at the next daily validation (the demo's \
            clock moves a day ahead); the database files are scanned for what was deleted; and the web flow runs \
            over HTTP. Needs no configuration.
            """
    )

    @Flag(help: "Keep the server and the emulator running afterwards and print their URLs (Ctrl-C stops them).")
    var serve = false

    func run() async throws {
        try await Demo(keepServing: serve).run()
    }
}
