public import Accounts
import AppleID
public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Tracing

/// Sends webhook attempts over the shared `HTTPClient` (which follows no redirect), each bounded by one deadline for
/// the whole exchange.
///
/// A receiver's status line decides its attempt: once it has arrived, the body is read (and dropped) only for what is
/// left of the deadline, so a receiver that sends its headers and then stalls holds this attempt for at most the
/// deadline and never the worker. A receiver that does not send its headers in time fails the attempt.
public struct HTTPWebhookTransport: WebhookTransport {
    let client: HTTPClient
    let deadline: Duration

    /// Creates the transport.
    ///
    /// - Parameter deadline: The whole exchange's deadline: 10 seconds, as the contract fixes it.
    public init(client: HTTPClient, deadline: Duration = .seconds(10)) {
        self.client = client
        self.deadline = deadline
    }

    /// POSTs one attempt and returns the status.
    public func post(url: String, body: String, headers: [(String, String)]) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        // A client span (its host only: a receiver's URL may carry a credential), whose context goes to the receiver
        // as `traceparent`, so the app's backend can join the trace. Both are no-ops unless a tracer is bootstrapped.
        let span = startSpan("POST webhook", ofKind: .client)
        defer { span.end() }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = "POST"
            attributes["server.address"] = URL(string: url)?.host()
        }
        InstrumentationSystem.instrument.inject(span.context, into: &request.headers, using: HTTPHeadersInjector())
        request.body = .bytes(ByteBuffer(string: body))
        let status = Mutex<Int?>(nil)
        let prepared = request
        let client = self.client
        let deadline = self.deadline
        do {
            let code = try await withDeadline(deadline) {
                let response = try await client.execute(prepared, deadline: .now() + deadline.timeAmount)
                let code = Int(response.status.code)
                status.withLock { $0 = code }
                _ = try? await response.body.collect(upTo: 64 * 1024)
                return code
            }
            span.attributes["http.response.status_code"] = code
            return code
        } catch is DeadlineExceeded {
            // The status line came in time: it decides, whatever the body did.
            if let code = status.withLock({ $0 }) {
                span.attributes["http.response.status_code"] = code
                return code
            }
            span.setStatus(SpanStatus(code: .error))
            throw DeadlineExceeded()
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            span.setStatus(SpanStatus(code: .error))
            throw DeadlineExceeded()
        } catch {
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }
}

/// Writes a trace context into an outgoing request's headers.
private struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
