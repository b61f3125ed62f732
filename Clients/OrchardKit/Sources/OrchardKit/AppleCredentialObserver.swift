#if canImport(AuthenticationServices)
public import AuthenticationServices
public import Foundation
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

    /// Starts watching for `client`.
    public init(client: OrchardClient) {
        var names = [ASAuthorizationAppleIDProvider.credentialRevokedNotification]
        #if canImport(UIKit) && !os(watchOS)
        names.append(UIApplication.willEnterForegroundNotification)
        #elseif canImport(AppKit)
        names.append(NSApplication.didBecomeActiveNotification)
        #endif
        var tasks = [Task { _ = await client.checkAppleCredentialState() }]
        for name in names {
            tasks.append(
                Task {
                    for await _ in NotificationCenter.default.notifications(named: name).map({ _ in () }) {
                        if name == ASAuthorizationAppleIDProvider.credentialRevokedNotification {
                            await client.appleCredentialWasRevoked()
                        } else {
                            _ = await client.checkAppleCredentialState()
                        }
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
