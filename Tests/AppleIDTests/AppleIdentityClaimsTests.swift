import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Identity token claims")
struct AppleIdentityClaimsTests {
    private func decode(_ json: String) throws -> AppleIdentityClaims {
        try JSONDecoder().decode(AppleIdentityClaims.self, from: Data(json.utf8))
    }

    private let base = #""iss":"https://appleid.apple.com","aud":"com.example.orchard","exp":1752662157,"iat":1752575757,"sub":"000739.abc.2105""#

    @Test("booleans sent as the strings \"true\"/\"false\" are read as booleans")
    func booleansAsStrings() throws {
        let claims = try decode(#"{\#(base),"email_verified":"true","is_private_email":"false","nonce_supported":"true"}"#)
        #expect(claims.emailVerified == true)
        #expect(claims.isPrivateEmail == false)
        #expect(claims.nonceSupported == true)
    }

    @Test("booleans sent as JSON booleans are read, and absent ones are nil")
    func booleans() throws {
        let claims = try decode(#"{\#(base),"email_verified":false,"is_private_email":true}"#)
        #expect(claims.emailVerified == false)
        #expect(claims.isPrivateEmail == true)
        #expect(claims.nonceSupported == nil)
    }

    @Test("a boolean claim holding anything else fails to decode")
    func badBoolean() {
        #expect(throws: DecodingError.self) { try decode(#"{\#(base),"email_verified":"yes"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{\#(base),"is_private_email":1}"#) }
    }

    @Test("null booleans and statuses are nil, strings in any case and whole numbers in any shape are read")
    func lenientShapes() throws {
        let nulls = try decode(#"{\#(base),"email_verified":null,"is_private_email":null,"real_user_status":null}"#)
        #expect(nulls.emailVerified == nil)
        #expect(nulls.isPrivateEmail == nil)
        #expect(nulls.realUserStatus == nil)
        let strings = try decode(#"{\#(base),"email_verified":"TRUE","is_private_email":"False","real_user_status":"2"}"#)
        #expect(strings.emailVerified == true)
        #expect(strings.isPrivateEmail == false)
        #expect(strings.realUserStatus == 2)
        #expect(try decode(#"{\#(base),"real_user_status":1.0}"#).realUserStatus == 1)
        #expect(throws: DecodingError.self) { try decode(#"{\#(base),"real_user_status":1.5}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{\#(base),"real_user_status":"likely"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{\#(base),"auth_time":"yesterday"}"#) }
    }

    @Test("every other claim Apple sends is read")
    func allClaims() throws {
        let claims = try decode(
            #"{\#(base),"email":"a@privaterelay.appleid.com","real_user_status":2,"auth_time":1752575750,"nonce":"n","#
                + #""c_hash":"ch","at_hash":"ah","transfer_sub":"000111.def.0001","org_id":"org-1"}"#
        )
        #expect(claims.exp == Date(timeIntervalSince1970: 1_752_662_157))
        #expect(claims.iat == Date(timeIntervalSince1970: 1_752_575_757))
        #expect(claims.realUserStatus == 2)
        #expect(claims.authTime == Date(timeIntervalSince1970: 1_752_575_750))
        #expect(claims.nonce == "n")
        #expect(claims.cHash == "ch")
        #expect(claims.atHash == "ah")
        #expect(claims.transferSub?.value == "000111.def.0001")
        #expect(claims.orgID == "org-1")
        #expect(claims.email?.value == "a@privaterelay.appleid.com")
    }

    @Test("instants are read as whole or fractional seconds, an absent or null auth_time is nil, anything else fails")
    func seconds() throws {
        let fractional = try decode(#"{"iss":"i","aud":"a","exp":1752662157.75,"iat":1752575757,"sub":"s","auth_time":1.5}"#)
        #expect(fractional.exp == Date(timeIntervalSince1970: 1_752_662_157.75))
        #expect(fractional.iat == Date(timeIntervalSince1970: 1_752_575_757))
        #expect(fractional.authTime == Date(timeIntervalSince1970: 1.5))
        #expect(try decode(#"{"iss":"i","aud":"a","exp":1,"iat":1,"sub":"s","auth_time":null}"#).authTime == nil)
        #expect(try decode(#"{"iss":"i","aud":"a","exp":1,"iat":1,"sub":"s"}"#).authTime == nil)
        #expect(try decode(#"{"iss":"i","aud":"a","exp":1752662157.0,"iat":1.7e9,"sub":"s"}"#).exp == Date(timeIntervalSince1970: 1_752_662_157))
        #expect(try decode(#"{"iss":"i","aud":"a","exp":1,"iat":1.7e9,"sub":"s"}"#).iat == Date(timeIntervalSince1970: 1_700_000_000))

        // The kind of failure names the claim's fault in the answer's detail ("has the wrong type", "is missing", "is null").
        func failure(_ json: String) -> DecodingError? {
            do {
                _ = try decode(json)
                return nil
            } catch {
                return error as? DecodingError
            }
        }
        guard case .typeMismatch? = failure(#"{"iss":"i","aud":"a","exp":"1","iat":1,"sub":"s"}"#) else {
            Issue.record("a string exp is not a type mismatch")
            return
        }
        guard case .keyNotFound? = failure(#"{"iss":"i","aud":"a","iat":1,"sub":"s"}"#) else {
            Issue.record("a missing exp is not keyNotFound")
            return
        }
        guard case .valueNotFound? = failure(#"{"iss":"i","aud":"a","exp":null,"iat":1,"sub":"s"}"#) else {
            Issue.record("a null exp is not valueNotFound")
            return
        }
        guard case .typeMismatch? = failure(#"{"iss":"i","aud":"a","exp":1,"iat":1,"sub":"s","auth_time":"x"}"#) else {
            Issue.record("a string auth_time is not a type mismatch")
            return
        }
    }

    @Test("aud as a one-element array is read as its element")
    func audienceArray() throws {
        let claims = try decode(#"{"iss":"i","aud":["com.example.orchard"],"exp":1,"iat":1,"sub":"s"}"#)
        #expect(claims.aud == "com.example.orchard")
    }

    @Test("printing or dumping the claims never shows the subject, the email or the transfer subject")
    func redaction() throws {
        let claims = try decode(#"{\#(base),"email":"person@example.com","transfer_sub":"000111.transfer.0001"}"#)
        var dumped = ""
        dump(claims, to: &dumped)
        let text = "\(claims) \(String(reflecting: claims)) \(dumped)"
        #expect(!text.contains("000739.abc.2105"))
        #expect(!text.contains("person@example.com"))
        #expect(!text.contains("000111.transfer.0001"))
        #expect(text.contains("<redacted>"))
    }

    @Test("encoding writes Apple's shapes and decoding reads them back")
    func roundTrip() throws {
        let claims = try decode(#"{\#(base),"email":"a@b.c","email_verified":"true","real_user_status":1}"#)
        let data = try JSONEncoder().encode(claims)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["exp"] as? Int == 1_752_662_157)
        #expect(object["email_verified"] as? Bool == true)
        #expect(object["sub"] as? String == "000739.abc.2105")
        #expect(try JSONDecoder().decode(AppleIdentityClaims.self, from: data) == claims)
    }
}
