import OrchardServer
import Testing

@Suite("return_to: a path on this site, never another site")
struct ReturnPathTests {
    @Test(
        "paths on this site are accepted as they are",
        arguments: ["/", "/account", "/account?tab=email&x=1", "/a/b/c#section", "/%2F%2Fencoded-stays-a-path", "/café"]
    )
    func accepted(_ path: String) {
        #expect(ReturnPath(validating: path)?.path == path)
    }

    @Test(
        "other sites, scheme-relative and backslash tricks, scripts, whitespace and control characters are refused",
        arguments: [
            "", "account", "https://evil.example", "//evil.example", "///evil.example", "/\\evil.example", "\\\\evil.example",
            "/account\\..\\admin", "javascript:alert(1)", " /account", "/acc ount", "/account\t", "/account\n", "/account\r\nX: y",
            "/account\u{0}", "/account\u{7F}", "/account\u{85}", "/account\u{A0}", "/account\u{2028}", "/account\u{200B}",
            "/account\u{FEFF}", String(repeating: "/a", count: 1100),
        ]
    )
    func refused(_ path: String) {
        #expect(ReturnPath(validating: path) == nil)
    }

    @Test("an error marker joins the query, before any fragment; Location is ASCII")
    func errorMarker() {
        #expect(ReturnPath.defaultPath.withError("user_cancelled_authorize") == "/account?error=user_cancelled_authorize")
        #expect(ReturnPath(validating: "/a?b=1#top")?.withError("x") == "/a?b=1&error=x#top")
        #expect(ReturnPath.location("/café") == "/caf%C3%A9")
    }
}
