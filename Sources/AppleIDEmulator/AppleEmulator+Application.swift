public import Hummingbird
import Logging
import NIOCore

extension AppleEmulator {
    /// The HTTP application serving Apple's endpoints and the `/_emulator/` control API.
    ///
    /// - Parameters:
    ///   - host: Where to listen; loopback by default, since the emulator mints tokens carrying Apple's issuer.
    ///   - port: The port; 0 picks a free one, reported through `onServerRunning`.
    ///   - onServerRunning: Called once the server listens, with its base URL, e.g. `http://127.0.0.1:54321`.
    public func makeApplication(
        host: String = "127.0.0.1",
        port: Int = 0,
        onServerRunning: @escaping @Sendable (_ baseURL: String) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: BasicRequestContext.self)
        AppleEndpointsController<BasicRequestContext>(emulator: self).addRoutes(to: router)
        EmulatorControlController<BasicRequestContext>(emulator: self).addRoutes(to: router)
        let logger = self.logger
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "orchard-apple-emulator"),
            onServerRunning: { channel in
                let boundPort = channel.localAddress?.port ?? port
                let baseURL = Self.baseURL(host: host, port: boundPort)
                logger.info("Apple emulator listening", metadata: ["apple_emulator.url": "\(baseURL)"])
                await onServerRunning(baseURL)
            },
            logger: logger
        )
    }

    /// `http://HOST:PORT`, with an IPv6 host in brackets.
    static func baseURL(host: String, port: Int) -> String {
        let authority = host.contains(":") ? "[\(host)]" : host
        return "http://\(authority):\(port)"
    }
}
