#if canImport(AuthenticationServices)
public import AuthenticationServices
import Foundation
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

/// Apple's device-side credential state, from `ASAuthorizationAppleIDProvider`.
public struct AppleIDCredentialStateProvider: CredentialStateProvider {
    /// Creates the provider.
    public init() {}

    public func credentialState(forUserID userID: String) async throws -> AppleCredentialState {
        switch try await ASAuthorizationAppleIDProvider().credentialState(forUserID: userID) {
        case .authorized: .authorized
        case .revoked: .revoked
        case .notFound: .notFound
        case .transferred: .transferred
        @unknown default: .authorized
        }
    }
}

extension FirstAuthorizationUser {
    /// The name and email of an Apple ID credential (present on the first authorization only).
    public init(_ credential: ASAuthorizationAppleIDCredential) {
        self.init(
            firstName: credential.fullName?.givenName,
            lastName: credential.fullName?.familyName,
            email: credential.email
        )
    }
}

/// Watches Apple's signals for a client: `credentialRevokedNotification`, and the app's return to the foreground
/// (plus once at start, for the launch), where it asks ``OrchardClient/checkAppleCredentialState()``.
///
/// Keep it alive as long as the client (e.g. beside it in the app's model).
public final class AppleCredentialObserver: Sendable {
    private let tasks: [Task<Void, Never>]

    /// Starts watching for `client`. Call it on the main actor (AppKit's notification names are main-actor API).
    @MainActor
    public init(client: OrchardClient) {
        #if canImport(UIKit) && !os(watchOS)
        let foreground: Notification.Name? = UIApplication.willEnterForegroundNotification
        #elseif canImport(AppKit)
        let foreground: Notification.Name? = NSApplication.didBecomeActiveNotification
        #else
        let foreground: Notification.Name? = nil
        #endif
        // Detached: the loops run off the main actor, so no `Notification` crosses an isolation boundary.
        var tasks = [
            Task.detached { _ = await client.checkAppleCredentialState() },
            Task.detached {
                for await _ in NotificationCenter.default
                    .notifications(named: ASAuthorizationAppleIDProvider.credentialRevokedNotification)
                    .map({ _ in () })
                {
                    await client.appleCredentialWasRevoked()
                }
            },
        ]
        if let foreground {
            tasks.append(
                Task.detached {
                    for await _ in NotificationCenter.default.notifications(named: foreground).map({ _ in () }) {
                        _ = await client.checkAppleCredentialState()
                    }
                }
            )
        }
        self.tasks = tasks
    }

    deinit {
        for task in tasks { task.cancel() }
    }
}
#endif
