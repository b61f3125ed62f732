import Dispatch
import HTTPTypes
public import Hummingbird
public import Metrics
import Synchronization

/// The request metrics of Hummingbird's `MetricsMiddleware`, under the same labels and dimensions (`hb_requests`,
/// `http_server_request_duration`, `hb_request_errors`, `http_server_active_requests`), recorded when the route has
/// answered rather than once the body is written. It runs outside ``ProblemMiddleware`` and counts each request under
/// the status it was answered with; `hb_request_errors` counts the answers of 400 and above, as Hummingbird's counts
/// the `HTTPError`s an app throws. (Hummingbird's, inside the problem middleware, would see Orchard's errors before
/// they become problem answers and count every one as a 500: a 401 for an unknown session would raise the 5xx rate.)
///
/// Hummingbird's middleware records after the write by wrapping every response body in a closure. That takes its
/// writer off the fast path that sends head, body and end in one batched write: each answer would go out in two
/// `write` calls with their own flushes and wake-ups (`Benchmarks/run`'s bare route, `GET /health/live`, guards
/// this). The duration here therefore leaves out the socket write, which the kernel does after the answer is handed
/// over.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache: Cache

    /// Creates the middleware; the metrics go to `factory`.
    public init(factory: any MetricsFactory) {
        self.cache = Cache(factory: factory)
    }

    /// Handles one request.
    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let method = Self.dimension(request.method)
        let active = cache.active(method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            let route = cache.route(Route(path: context.endpointPath ?? "Unknown", method: method, status: response.status))
            route.requests.increment()
            route.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
            if response.status.code >= 400 { route.errors.increment() }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let route = cache.route(Route(path: context.endpointPath ?? "NotFound", method: method, status: status))
            route.requests.increment()
            route.errors.increment()
            throw error
        }
    }

    /// The method as a metric's dimension: one of HTTP's own, else `_OTHER` (OpenTelemetry's name), so that the series
    /// stay bounded whatever a client sends (HTTP/2 takes any token as `:method`).
    static func dimension(_ method: HTTPRequest.Method) -> HTTPRequest.Method {
        switch method {
        case .get, .head, .post, .put, .delete, .patch, .options, .connect, .trace: method
        default: .otherMethods
        }
    }

    struct Route: Hashable {
        let path: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    struct RouteMetrics: Sendable {
        let requests: Counter
        let duration: Timer
        let errors: Counter
    }

    /// The metric handles, made once per method and per route, method and status.
    final class Cache: Sendable {
        private let factory: any MetricsFactory
        private let actives: Mutex<[HTTPRequest.Method: Meter]> = Mutex([:])
        private let routes: Mutex<[Route: RouteMetrics]> = Mutex([:])

        init(factory: any MetricsFactory) {
            self.factory = factory
        }

        func active(_ method: HTTPRequest.Method) -> Meter {
            actives.withLock { actives in
                if let meter = actives[method] { return meter }
                let meter = Meter(
                    label: "http.server.active_requests",
                    dimensions: [("http.request.method", method.description)],
                    factory: factory
                )
                actives[method] = meter
                return meter
            }
        }

        func route(_ route: Route) -> RouteMetrics {
            routes.withLock { routes in
                if let metrics = routes[route] { return metrics }
                let dimensions = [
                    ("http.route", route.path),
                    ("http.request.method", route.method.description),
                    ("http.response.status_code", route.status.code.description),
                ]
                let metrics = RouteMetrics(
                    requests: Counter(label: "hb.requests", dimensions: dimensions, factory: factory),
                    duration: Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory),
                    errors: Counter(
                        label: "hb.request.errors",
                        dimensions: [
                            ("http.route", route.path),
                            ("http.request.method", route.method.description),
                            ("error.type", route.status.code.description),
                        ],
                        factory: factory
                    )
                )
                routes[route] = metrics
                return metrics
            }
        }
    }
}

extension HTTPRequest.Method {
    /// Every method that is not one of HTTP's own, as a metric's dimension.
    fileprivate static let otherMethods = HTTPRequest.Method("_OTHER")!
}
