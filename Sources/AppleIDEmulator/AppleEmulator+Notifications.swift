import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

extension AppleEmulator {
    /// How long a notification POST may take.
    static let notificationDeadline = TimeAmount.seconds(10)

    /// Signs a notification (see ``signNotification(type:sub:clientID:email:isPrivateEmail:jti:eventTime:)``) and posts
    /// it as Apple does; returns the HTTP status the receiver answered.
    ///
    /// - Throws: ``AppleEmulatorError/Kind/noNotifyURL`` when no notification URL is set;
    ///   ``AppleEmulatorError/Kind/notificationDeliveryFailed`` when the receiver cannot be reached in 10 s.
    public func sendNotification(
        type: String,
        sub: String,
        clientID: String,
        email: String? = nil,
        isPrivateEmail: Bool? = nil,
        jti: String? = nil
    ) async throws -> Int {
        let payload = try signNotification(
            type: type,
            sub: sub,
            clientID: clientID,
            email: email,
            isPrivateEmail: isPrivateEmail,
            jti: jti
        )
        return try await sendNotification(payload: payload)
    }

    /// Posts an already signed notification JWS as `{"payload": JWS}` to the notification URL (or to `url`); returns
    /// the HTTP status the receiver answered.
    public func sendNotification(payload: String, to url: String? = nil) async throws -> Int {
        guard let url = url ?? notifyURL else {
            throw AppleEmulatorError(.noNotifyURL, reason: "no notification URL is set")
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONText.object([(key: "payload", value: payload)])))
        do {
            let response = try await httpClient.execute(request, timeout: Self.notificationDeadline, logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 20)
            logger.debug(
                "posted a notification",
                metadata: ["apple_emulator.notify_status": "\(response.status.code)"]
            )
            return Int(response.status.code)
        } catch {
            throw AppleEmulatorError(.notificationDeliveryFailed, reason: "could not post the notification", underlying: error)
        }
    }
}
