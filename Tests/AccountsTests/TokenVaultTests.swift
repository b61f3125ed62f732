import Accounts
import AppleID
import Foundation
import Testing

@Suite struct TokenVaultTests {
    let old = VaultKey.generate(id: "k1")
    let new = VaultKey.generate(id: "k2")

    @Test("a sealed value opens with the same context and hides its plaintext")
    func sealAndOpen() throws {
        let vault = TokenVault(keys: [old])
        let sealed = try vault.seal("r.refresh-token-value", context: "account:a:refresh_token")
        #expect(!sealed.contains("refresh-token-value"))
        #expect(sealed.hasPrefix("v1.k1."))
        #expect(try vault.open(sealed, context: "account:a:refresh_token").value == "r.refresh-token-value")
    }

    @Test("a ciphertext moved to another record or field does not open")
    func boundToContext() throws {
        let vault = TokenVault(keys: [old])
        let sealed = try vault.seal("someone@example.com", context: "account:a:email")
        #expect(throws: VaultError.corrupt) { try vault.open(sealed, context: "account:b:email") }
        #expect(throws: VaultError.corrupt) { try vault.open(sealed, context: "account:a:name") }
    }

    @Test("a value not in the vault's format does not open, and names no key unless it is well formed")
    func malformed() throws {
        let vault = TokenVault(keys: [old])
        let sealed = try vault.seal("value", context: "c")
        let body = String(sealed.dropFirst("v1.k1.".count))
        for bad in ["", "v1", "v1.", "v1.k1", "v2.k1.\(body)", "v1k1.\(body)", "v1.k1.\(body).x", "v1.k1.!\(body)", "x\(sealed)"] {
            #expect(throws: VaultError.corrupt, "\(bad)") { try vault.open(bad, context: "c") }
        }
        #expect(throws: VaultError.unknownKey("k9")) { try vault.open("v1.k9.\(body)", context: "c") }
        #expect(throws: VaultError.unknownKey("")) { try vault.open("v1..\(body)", context: "c") }
        #expect(try vault.open("v1.k1.\(body)", context: "c").value == "value")
        // The format is cut on bytes: a dot followed by a combining mark is still the dot before the key id.
        #expect(throws: VaultError.unknownKey("\u{301}k1")) { try vault.open("v1.\u{301}k1.\(body)", context: "c") }
        // keyID(of:) reads the same format as open.
        #expect(vault.keyID(of: sealed) == "k1")
        #expect(vault.keyID(of: "v1.k9.\(body)") == "k9")
        #expect(vault.keyID(of: "v1.\u{301}k1.\(body)") == "\u{301}k1")
        for bad in ["", "v1", "v1.", "v1.k1", "v2.k1.\(body)", "v1k1.\(body)"] {
            #expect(vault.keyID(of: bad) == nil, "\(bad)")
        }
    }

    @Test("after rotation the new key seals and the old one still opens")
    func rotation() throws {
        let before = TokenVault(keys: [old])
        let sealed = try before.seal("value", context: "c")
        let after = TokenVault(keys: [new, old])
        #expect(try after.open(sealed, context: "c").value == "value")
        #expect(after.keyID(of: try after.seal("value", context: "c")) == "k2")
        #expect(throws: VaultError.unknownKey("k1")) { try TokenVault(keys: [new]).open(sealed, context: "c") }
    }

    @Test("the subject hash is keyed, stable, and found under an older key after rotation")
    func subjectHash() {
        let subject = Redacted("001542.b04100c51acb48d3a570684f17d6394d.1603")
        let before = TokenVault(keys: [old]).subjectHash(subject)
        #expect(before.count == 64)
        #expect(before == TokenVault(keys: [old]).subjectHash(subject))
        #expect(before != TokenVault(keys: [new]).subjectHash(subject))
        #expect(TokenVault(keys: [new, old]).subjectHashCandidates(subject).contains(before))
    }

    @Test("ORCHARD_VAULT_KEYS parses ID:BASE64 lists and names the bad entry")
    func parseKeys() throws {
        let spec = "\(new.specification),\(old.specification)"
        #expect(try VaultKey.parseList(spec).map(\.id) == ["k2", "k1"])
        #expect(throws: VaultError.self) { try VaultKey.parseList("") }
        #expect(throws: VaultError.self) { try VaultKey.parseList("nocolon") }
        #expect(throws: VaultError.self) { try VaultKey.parseList("k:not-base64!") }
        #expect(throws: VaultError.self) { try VaultKey.parseList("k:\(Data(count: 16).base64EncodedString())") }
        #expect(throws: VaultError.self) { try VaultKey.parseList("\(old.specification),\(old.specification)") }
    }
}
