import OrchardKit
import Testing

@Suite("Problem codes")
struct ProblemCodeTests {
    @Test("every code Orchard sends maps to its case and back; an unknown one is kept as other")
    func roundTrip() {
        for code in ["nonce_reused", "session_revoked", "session_invalid", "apple_unavailable", "rate_limited", "state_invalid"] {
            let mapped = ProblemCode(code: code)
            #expect(mapped != .other(code))
            #expect(mapped.code == code)
        }
        #expect(ProblemCode(code: "session_revoked") == .sessionRevoked)
        #expect(ProblemCode(code: "a_future_code") == .other("a_future_code"))
        #expect(ProblemCode.other("a_future_code").code == "a_future_code")
    }
}
