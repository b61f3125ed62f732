import Testing

@testable import OrchardServer

@Suite("A web-flow session's label from the browser's User-Agent")
struct BrowserLabelTests {
    @Test(
        "the browser and the system, nothing else",
        arguments: [
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on macOS"),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                "Safari on iOS"
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
                "Edge on Windows"
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
                "Chrome on Android"
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36",
                "Chrome on Linux"
            ),
            ("Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0 Mobile/15E148", "Chrome on iPadOS"),
            ("curl/8.5.0", nil),
            ("Something (X11; Linux x86_64)", "A browser on Linux"),
        ] as [(String, String?)]
    )
    func labels(_ userAgent: String, _ expected: String?) {
        #expect(BrowserLabel.label(userAgent: userAgent) == expected)
    }

    @Test("no header or an oversized one gives no label")
    func absent() {
        #expect(BrowserLabel.label(userAgent: nil) == nil)
        #expect(BrowserLabel.label(userAgent: String(repeating: "Firefox/1 ", count: 200)) == nil)
    }
}
