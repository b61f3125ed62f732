import HTTPTypes

extension OrchardProblem {
    /// `404 web_flow_disabled`: `APPLE_REDIRECT_URI` is not set.
    public static let webFlowDisabled = OrchardProblem(
        .webFlowDisabled,
        detail: "the web flow is off: set APPLE_REDIRECT_URI to turn it on"
    )

    /// `403 csrf_rejected`: a cookie-authenticated unsafe request from another origin than this site's.
    public static let csrfRejected = OrchardProblem(
        .csrfRejected,
        detail: "a cookie-authenticated request must come from this site's origin (or carry no Origin)"
    )
}
