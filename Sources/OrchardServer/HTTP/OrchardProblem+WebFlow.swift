import HTTPTypes

extension OrchardProblem {
    /// `404 web_flow_disabled`: `APPLE_REDIRECT_URI` is not set.
    public static let webFlowDisabled = OrchardProblem(
        .notFound,
        code: "web_flow_disabled",
        title: "Web flow disabled",
        detail: "the web flow is off: set APPLE_REDIRECT_URI to turn it on"
    )

    /// `403 csrf_rejected`: a cookie-authenticated unsafe request from another origin than this site's.
    public static let csrfRejected = OrchardProblem(
        .forbidden,
        code: "csrf_rejected",
        title: "Cross-site request rejected",
        detail: "a cookie-authenticated request must come from this site's origin (or carry no Origin)"
    )
}
