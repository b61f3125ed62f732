import AppleID
import Testing

@Suite("Nonces")
struct AppleNonceTests {
    @Test("the hash is SHA-256 in lowercase hex")
    func hash() {
        #expect(AppleNonce.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(AppleNonce.hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(AppleNonce.Hashed("abc").hex == AppleNonce.hash("abc"))
    }

    @Test("a claim matches the raw nonce itself (web flow) and its hash (native apps)")
    func matches() {
        let raw = "20B20D-0S8-1K8"
        #expect(AppleNonce.matches(claim: raw, raw: raw))
        #expect(AppleNonce.matches(claim: AppleNonce.hash(raw), raw: raw))
        #expect(AppleNonce.matches(claim: raw, nonce: AppleNonce.Hashed(raw)))
        #expect(AppleNonce.matches(claim: AppleNonce.hash(raw), nonce: AppleNonce.Hashed(raw)))
    }

    @Test("any other claim does not match", arguments: ["other", "", "20B20D-0S8-1K9", "20b20d-0s8-1k8"])
    func mismatch(claim: String) {
        #expect(!AppleNonce.matches(claim: claim, raw: "20B20D-0S8-1K8"))
        #expect(!AppleNonce.matches(claim: AppleNonce.hash(claim), raw: "20B20D-0S8-1K8"))
        #expect(!AppleNonce.matches(claim: claim, nonce: AppleNonce.Hashed("20B20D-0S8-1K8")))
    }

    @Test("an uppercase hash is not the hash")
    func uppercaseHash() {
        #expect(!AppleNonce.matches(claim: AppleNonce.hash("n").uppercased(), raw: "n"))
    }

    @Test("lookup keys: a raw claim is stored under its hash; a hash-shaped claim may also be the stored key itself")
    func lookupKeys() {
        #expect(AppleNonce.lookupKeys(forClaim: "raw-nonce") == [AppleNonce.hash("raw-nonce")])
        let hashed = AppleNonce.hash("raw-nonce")
        #expect(AppleNonce.lookupKeys(forClaim: hashed) == [AppleNonce.hash(hashed), hashed])
        #expect(AppleNonce.lookupKeys(forClaim: hashed.uppercased()) == [AppleNonce.hash(hashed.uppercased())])
    }
}
