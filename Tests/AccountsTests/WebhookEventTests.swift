import Foundation
import Testing

@testable import Accounts

@Suite("webhook event bodies")
struct WebhookEventTests {
    @Test("the body is compact JSON with sorted keys, whole seconds in UTC, and only the fields the event has")
    func body() {
        let at = Date(timeIntervalSince1970: 1_795_529_790.75)
        let deleted = WebhookEvent(type: "account.deleted", id: "evt_1", occurredAt: at, accountID: "acct_1", reason: "user_request")
        #expect(
            deleted.body
                == #"{"account_id":"acct_1","id":"evt_1","occurred_at":"2026-11-24T14:16:30Z","reason":"user_request","type":"account.deleted"}"#
        )
        let forwarding = WebhookEvent(
            type: "account.email_forwarding_changed",
            id: "evt_2",
            occurredAt: at,
            accountID: "acct_2",
            emailForwarding: .disabled
        )
        #expect(
            forwarding.body
                == #"{"account_id":"acct_2","email_forwarding":"disabled","id":"evt_2","occurred_at":"2026-11-24T14:16:30Z","type":"account.email_forwarding_changed"}"#
        )
    }

    @Test("a value with a slash or a quote is escaped as JSON requires, and the slash is left as it is")
    func escaping() throws {
        let event = WebhookEvent(type: "account.deleted", id: "evt/\"3", occurredAt: Date(timeIntervalSince1970: 0), accountID: "acct_3")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.body.utf8)) as? [String: String])
        #expect(object["id"] == "evt/\"3")
        #expect(event.body.contains(#""id":"evt/\"3""#))
    }
}
