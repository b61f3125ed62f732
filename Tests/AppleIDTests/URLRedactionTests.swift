import AppleID
import Testing

@Suite("URLs with credentials, as logs show them")
struct URLRedactionTests {
    @Test(
        "userinfo and query are replaced by <redacted>; the rest stays",
        arguments: [
            ("https://hooks.example/in", "https://hooks.example/in"),
            ("https://ops:secret@hooks.example/in", "https://<redacted>@hooks.example/in"),
            ("https://token@hooks.example:8443/in?key=secret&x=1", "https://<redacted>@hooks.example:8443/in?<redacted>"),
            ("http://127.0.0.1:9000/hook?", "http://127.0.0.1:9000/hook?<redacted>"),
            ("https://[2001:db8::1]/h?k=v#frag", "https://[2001:db8::1]/h?<redacted>#frag"),
            ("not a url", "<redacted>"),
        ]
    )
    func redaction(_ url: String, _ shown: String) {
        #expect(URLRedaction.redactingCredentials(url) == shown)
    }
}
