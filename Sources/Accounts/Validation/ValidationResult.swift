public import Foundation

/// What a finished refresh validation records.
public enum ValidationResult: Sendable, Equatable {
    /// Apple accepted the refresh token: `last_validated_at`, the new access token (sealed) when Apple sent one, and the
    /// next due time.
    case validated(at: Date, sealedAccessToken: String?, nextValidationAt: Date)
    /// Not due again until the next sign-in (nobody signed in, no refresh token held, or the grant is gone).
    case unscheduled
    /// A sign-in stored another refresh token while this one was validated: the verdict is about a token no longer
    /// held, so nothing is recorded (the sign-in set the schedule of its own).
    case superseded
}
