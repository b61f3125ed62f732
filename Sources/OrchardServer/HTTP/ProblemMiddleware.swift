import Accounts
import HTTPTypes
public import Hummingbird
import Logging

/// The outermost middleware: every failure becomes problem details; unknown paths `404`, wrong methods `405`, bodies
/// over 64 KiB `413` before they are read; a bug becomes a bare `500`, and a storage outage a `503` that names no
/// engine, their reasons going only to the log (``ProblemLog``).
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable
    let log: ProblemLog

    /// Creates the middleware over the table of served routes.
    /// - Parameters:
    ///   - routes: The served routes, for `404` and `405`.
    ///   - log: Where the reasons a problem answer leaves out are logged.
    public init(routes: RouteTable, log: ProblemLog) {
        self.routes = routes
        self.log = log
    }

    /// Handles one request.
    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > OrchardProblem.maxBodySize {
            return try OrchardProblem.payloadTooLarge.response(from: request, context: context)
        }
        do {
            return try await next(request, context)
        } catch let problem as OrchardProblem {
            log.record(problem, logger: context.logger)
            return try problem.response(from: request, context: context)
        } catch let error as AccountsError {
            let problem = OrchardProblem(error)
            log.record(problem, logger: context.logger)
            return try problem.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            return try problem(for: error, request: request, context: context).response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
            return try OrchardProblem.internalError.response(from: request, context: context)
        }
    }

    private func problem(for error: any HTTPResponseError, request: Request, context: Context) -> OrchardProblem {
        switch error.status {
        case .notFound:
            if let allowed = routes.allowedMethods(for: request.uri.path) {
                return .methodNotAllowed(allowed: allowed)
            }
            return .notFound
        case .contentTooLarge:
            return .payloadTooLarge
        default:
            // Anything else Hummingbird refuses on its own (a request it cannot read) is the client's fault; a status
            // of the server's is a bug.
            guard (400..<500).contains(error.status.code) else { return .internalError }
            return .invalidRequest("the request could not be read (\(error.status.code) \(error.status.reasonPhrase))")
        }
    }
}
