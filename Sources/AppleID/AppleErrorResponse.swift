/// The body Apple's REST endpoints answer a refused request with: `{"error": CODE, "error_description"?}`.
public struct AppleErrorResponse: Codable, Sendable, Equatable {
    /// Apple's error code.
    public var error: AppleErrorCode
    /// Apple's optional human description (e.g. "The code has already been used.").
    public var errorDescription: String?

    /// Creates an error body.
    public init(error: AppleErrorCode, errorDescription: String? = nil) {
        self.error = error
        self.errorDescription = errorDescription
    }

    private enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}
