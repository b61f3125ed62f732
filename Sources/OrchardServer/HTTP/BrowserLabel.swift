/// A short label for a web-flow session from the browser's `User-Agent` ("Firefox on macOS"), so that the user can tell
/// their sessions apart in `GET /v1/sessions`. Only the browser's and the system's names are kept, never versions or the
/// rest of the header.
enum BrowserLabel {
    /// Browsers, most specific first: Edge and Opera also say "Chrome", Chrome also says "Safari".
    private static let browsers: [(marker: String, name: String)] = [
        ("Edg", "Edge"), ("OPR/", "Opera"), ("SamsungBrowser/", "Samsung Internet"), ("Firefox/", "Firefox"),
        ("FxiOS/", "Firefox"), ("CriOS/", "Chrome"), ("Chrome/", "Chrome"), ("Chromium/", "Chrome"), ("Safari/", "Safari"),
    ]
    /// Systems, most specific first: an iPhone's header also says "Mac OS X", Android's says "Linux".
    private static let systems: [(marker: String, name: String)] = [
        ("iPhone", "iOS"), ("iPad", "iPadOS"), ("Android", "Android"), ("CrOS", "ChromeOS"), ("Macintosh", "macOS"),
        ("Windows", "Windows"), ("Linux", "Linux"),
    ]

    /// The label for `userAgent`, or `nil` when it names no browser or system Orchard knows.
    static func label(userAgent: String?) -> String? {
        guard let userAgent, userAgent.utf8.count <= 1_024 else { return nil }
        let browser = browsers.first { userAgent.contains($0.marker) }?.name
        let system = systems.first { userAgent.contains($0.marker) }?.name
        switch (browser, system) {
        case (let browser?, let system?): return "\(browser) on \(system)"
        case (let browser?, nil): return browser
        case (nil, let system?): return "A browser on \(system)"
        case (nil, nil): return nil
        }
    }
}
