import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// One answer from Apple's endpoints, with what the call log keeps of it.
struct AppleAnswer: Sendable {
    /// The HTTP status.
    var status: Int
    /// The JSON body; `nil` for an empty body.
    var body: Data?
    /// The Apple error code, for the call log.
    var error: String?
    /// The emulator's own note on why, for the call log.
    var detail: String?

    /// 200 with a JSON body.
    static func json(_ body: Data) -> Self {
        AppleAnswer(status: 200, body: body)
    }

    /// An empty body with the given status.
    static func empty(status: Int, detail: String? = nil) -> Self {
        AppleAnswer(status: status, body: nil, detail: detail)
    }

    /// 400 `{"error": CODE, "error_description"?}`, Apple's error shape.
    static func oauthError(_ error: EmulatorState.OAuthError) -> Self {
        var pairs: [(key: String, value: any Sendable)] = [(key: "error", value: error.code)]
        if let description = error.description {
            pairs.append((key: "error_description", value: description))
        }
        let body = (try? JSONText.object(pairs)) ?? Data()
        return AppleAnswer(status: 400, body: body, error: error.code, detail: error.detail)
    }

    /// 400 with an Apple error code.
    static func oauthError(_ code: String, detail: String?) -> Self {
        oauthError(EmulatorState.OAuthError(code: code, description: nil, detail: detail))
    }

    /// The HTTP response, with Apple's headers on JSON bodies (`no-store`, `no-cache`).
    var response: Response {
        let status = HTTPResponse.Status(code: status)
        guard let body else {
            return Response(status: status, headers: [.contentLength: "0"])
        }
        let headers: HTTPFields = [
            .contentType: "application/json;charset=UTF-8",
            .cacheControl: "no-store",
            HTTPField.Name("Pragma")!: "no-cache",
            .contentLength: "\(body.count)",
        ]
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
