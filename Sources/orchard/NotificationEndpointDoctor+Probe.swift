import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

extension NotificationEndpointDoctor {
    /// `probe`: what Apple's post meets, short of a signature. An unsigned `POST {"payload": "probe"}` must be answered
    /// within ``limit`` by `400` with the problem code `notification_invalid`, and not by a redirect (Apple follows
    /// none).
    func checkProbe(_ endpoint: Endpoint) async -> Check {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.trustRoots = trust.roots
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.redirectConfiguration = .disallow
        configuration.timeout = HTTPClient.Configuration.Timeout(connect: limit, read: limit)
        // A client of its own, for this one request: it trusts what the handshake checks trusted (`--ca-file`) and, as
        // Apple, follows no redirect.
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let check = await post(to: endpoint, with: client)
        try? await client.shutdown()
        return check
    }

    /// Sends the probe and judges the answer.
    private func post(to endpoint: Endpoint, with client: HTTPClient) async -> Check {
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"payload": "probe"}"#))
        let started = NIODeadline.now()
        do {
            let response = try await client.execute(request, deadline: started + limit, logger: logger)
            let status = Int(response.status.code)
            let body = try await response.body.collect(upTo: 1 << 20)
            let milliseconds = (NIODeadline.now() - started).nanoseconds / 1_000_000
            if (300..<400).contains(status) {
                let location = response.headers.first(name: "location").map { " to \(Self.clean($0))" } ?? ""
                return Check(.probe, .fail, "answered \(status), a redirect\(location): Apple follows no redirect, so give Apple the final URL")
            }
            let code = Self.problemCode(in: body)
            if status == 400, code == "notification_invalid" {
                return Check(.probe, .pass, "answered 400 notification_invalid in \(milliseconds) ms")
            }
            let answer = "answered \(status)" + (code.map { " with code \(Self.clean($0))" } ?? "")
            return Check(.probe, .fail, "\(answer), not 400 notification_invalid\(Self.hint(status: status))")
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return Check(.probe, .fail, "no answer within \(limitText)")
        } catch let error as HTTPClientError {
            return Check(.probe, .fail, "no answer: \(Self.clean(error.description))")
        } catch let error as NIOSSLError {
            return Check(.probe, .fail, "no answer: \(Self.describe(handshakeError: error))")
        } catch {
            return Check(.probe, .fail, "no answer: \(Self.clean(TLSHandshakeProbe.describe(connectionError: error)))")
        }
    }

    /// The `code` of a JSON answer (a problem document), if it has one.
    static func problemCode(in body: ByteBuffer) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))
        return (object as? [String: Any])?["code"] as? String
    }

    /// What an unexpected status most likely means, after a colon; empty when there is nothing to add.
    static func hint(status: Int) -> String {
        switch status {
        case 200..<300: ": the endpoint accepted a notification it could not have verified"
        case 401, 403: ": something in front of the endpoint wants credentials, which Apple never sends"
        case 404, 405: ": nothing receives notifications at this path (Orchard's is /v1/apple/notifications)"
        case 500..<600: ": the server or a proxy in front of it failed"
        default: ""
        }
    }
}
