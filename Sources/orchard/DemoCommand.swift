import ArgumentParser

/// `orchard demo [--serve]`.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole lifecycle on this machine with no set-up, printing each step and what was stored.",
        discussion: """
            Starts the Apple emulator and Orchard on free loopback ports with a temporary SQLite file and a fresh \
            vault key; a scripted user signs up, uses a session, signs in again and signs out. Needs no configuration.
            """
    )

    @Flag(help: "Keep the server and the emulator running afterwards and print their URLs (Ctrl-C stops them).")
    var serve = false

    func run() async throws {
        try await Demo(keepServing: serve).run()
    }
}
