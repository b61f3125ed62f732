import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// `/health/live`, `/health/ready`, `/metrics` and `/openapi.yaml`.
struct OperationsController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk
    let registry: PrometheusCollectorRegistry
    /// Whether this listener serves `/metrics` (not with `ORCHARD_METRICS_PORT`).
    let servesMetrics: Bool

    /// Adds the routes; `/metrics` only when this listener serves it (not with `ORCHARD_METRICS_PORT`: then it is an
    /// unknown path here, `404 not_found`).
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/health/live", use: live)
        routes.add(.get, "/health/ready", use: ready)
        routes.add(.get, "/openapi.yaml", use: openAPI)
        if servesMetrics {
            routes.add(.get, "/metrics", use: metrics)
        }
    }

    @Sendable func live(_ request: Request, context: Context) async throws -> Response {
        Self.json(.ok, #"{"status":"live"}"#)
    }

    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        // A database that does not answer is `503 storage_unavailable`; why goes to the log (ProblemMiddleware).
        try await accounts.checkStorage()
        return Self.json(.ok, #"{"status":"ready"}"#)
    }

    @Sendable func metrics(_ request: Request, context: Context) async throws -> Response {
        Self.metricsResponse(registry)
    }

    /// The registry in Prometheus' text format.
    static func metricsResponse(_ registry: PrometheusCollectorRegistry) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    @Sendable func openAPI(_ request: Request, context: Context) async throws -> Response {
        guard let data = OpenAPIDocument.bytes else {
            throw OrchardProblem.notFound
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/yaml"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
