import Foundation
import Logging
import OTel
import OrchardServer
import ServiceLifecycle

/// Distributed tracing for `serve`: OpenTelemetry's OTLP exporter, configured by the OpenTelemetry environment
/// variables, and off unless an OTLP endpoint is set.
enum ServeTracing {
    /// Whether the environment asks for traces: `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// is set, and `OTEL_SDK_DISABLED` is not `true`.
    static func isEnabled(_ environment: [String: String]) -> Bool {
        guard environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return false }
        return ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].contains {
            !(environment[$0] ?? "").isEmpty
        }
    }

    /// Bootstraps the process's tracer with the OTLP exporter (traces only: metrics stay on `/metrics` and logs on
    /// standard error) and returns the service that batches and exports spans; run it first in the service group, so
    /// that it shuts down last and exports the spans of the requests and jobs that drained before it.
    ///
    /// The OpenTelemetry variables apply as the specification says: `OTEL_SERVICE_NAME` (default `orchard`),
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`,
    /// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_SCHEDULE_DELAY` and the rest.
    /// - Throws: ``ConfigurationError`` naming the endpoint setting when the exporter cannot be set up.
    static func bootstrap(environment: [String: String]) throws(ConfigurationError) -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "orchard"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.diagnosticLogLevel = .warning
        do {
            return try OTel.bootstrap(configuration: configuration, environment: environment)
        } catch {
            throw ConfigurationError(setting: "OTEL_EXPORTER_OTLP_ENDPOINT", problem: "cannot set up tracing: \(error)")
        }
    }

    /// What adds `trace_id` and `span_id` to the log lines written inside a traced request or job.
    static var logMetadataProvider: Logger.MetadataProvider { OTel.makeLoggingMetadataProvider() }
}
