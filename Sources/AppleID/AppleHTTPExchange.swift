import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// One request to Apple and its answer, with the transport failures already turned into ``AppleIDError``.
struct AppleHTTPExchange {
    /// The largest body read from Apple; its answers are a few hundred bytes.
    static let maximumBodyBytes = 256 * 1024

    /// The status Apple answered with.
    let status: Int
    /// The body Apple answered with.
    let body: Data

    /// Sends `request` and reads the whole answer, body included, within `timeout`; redirects are not followed.
    /// - Throws: ``AppleIDError/Code-swift.enum/appleUnavailable`` when Apple cannot be reached, the deadline passes,
    ///   the body cannot be read, or Apple answers with a redirect (a 3xx is never followed: a form carrying a client
    ///   secret or a refresh token is not resent elsewhere).
    static func perform(
        _ request: HTTPClientRequest,
        httpClient: HTTPClient,
        timeout: Duration,
        logger: Logger
    ) async throws(AppleIDError) -> AppleHTTPExchange {
        let deadline = NIODeadline.now() + timeout.timeAmount
        let exchange: AppleHTTPExchange
        do {
            exchange = try await withDeadline(timeout) {
                let response = try await httpClient.execute(request, deadline: deadline, logger: logger)
                let body = try await response.body.collect(upTo: maximumBodyBytes)
                return AppleHTTPExchange(status: Int(response.status.code), body: Data(buffer: body))
            }
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw .appleUnavailable("Apple did not answer within \(timeout)")
        } catch is DeadlineExceeded {
            throw .appleUnavailable("Apple's answer did not arrive whole within \(timeout)")
        } catch is CancellationError {
            throw .appleUnavailable("the request to Apple was cancelled")
        } catch {
            throw .appleUnavailable("Apple could not be reached (\(Self.describe(error)))")
        }
        if (300..<400).contains(exchange.status) {
            throw .appleUnavailable("Apple answered HTTP \(exchange.status), a redirect, which Orchard does not follow")
        }
        return exchange
    }

    /// A short description of a transport error that carries no request content.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: type(of: error))
    }

    /// A `POST` of a form (`application/x-www-form-urlencoded`) to `url`.
    static func formPost(to url: URL, fields: [(String, String)], bearer: String? = nil) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: formEncode(fields)))
        return request
    }

    /// A `GET` of `url`, asking for JSON.
    static func get(_ url: URL) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/json")
        return request
    }

    /// `name=value&...`, each part percent-encoded so that only RFC 3986's unreserved characters stay as they are.
    static func formEncode(_ fields: [(String, String)]) -> String {
        var unreserved = CharacterSet(charactersIn: "-._~")
        unreserved.formUnion(CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
        func encode(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
        }
        return fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}
