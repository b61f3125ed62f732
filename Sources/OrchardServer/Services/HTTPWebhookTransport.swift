public import Accounts
public import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Sends webhook attempts over the shared `HTTPClient`, each with a 10-second deadline.
public struct HTTPWebhookTransport: WebhookTransport {
    let client: HTTPClient

    /// Creates the transport.
    public init(client: HTTPClient) {
        self.client = client
    }

    /// POSTs one attempt and returns the status.
    public func post(url: String, body: String, headers: [(String, String)]) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try? await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}
