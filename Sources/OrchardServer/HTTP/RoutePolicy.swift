/// What a route asks of the rules around it (``RouteRule``), declared once where the route is registered
/// (``OrchardRoutes/add(_:_:_:use:)``).
///
/// A route's handler runs inside its policy's rules, so a rule follows the matched route, however the request spells
/// its path (`//v1/auth/apple/nonce` reaches the nonce route and its rate limit alike).
public enum RoutePolicy: Sendable, Hashable, CaseIterable {
    /// No rule beyond the problem answers: health, metrics, the OpenAPI document, Apple's notifications, the page.
    case open
    /// Anonymous and rate-limited: one budget per client shared by every rate-limited route.
    case anonymous
    /// The web-flow callback: rate-limited like ``anonymous``, and every answer, a refusal included, clears the
    /// browser's web-state binder.
    case webFlowCallback
    /// Authenticates with the session (bearer or cookie): a cookie-authenticated unsafe request must come from this
    /// site (`403 csrf_rejected`), and a cookie-authenticated `session_revoked` clears the site.
    case session
    /// A ``session`` route that ends the session: its cookie-authenticated answers clear the site.
    case endsSession
    /// A ``session`` route that ends sessions or mints access tokens: before anything else, one budget per session shared
    /// by every such route (``SessionBudgetMiddleware``).
    case budgetedSession
}
