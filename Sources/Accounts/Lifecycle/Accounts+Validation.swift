import AppleID
import Foundation
public import Logging

extension Accounts {
    /// When an account is next due after a validation at `now`: one interval later plus up to 10 % (at most an hour)
    /// of jitter, never earlier, so accounts created together spread out and none is validated twice in an interval.
    func nextValidation(after now: Date) -> Date {
        let interval = configuration.refreshValidationInterval.seconds
        return now.addingTimeInterval(interval + min(interval * 0.1, 3600) * random.unit())
    }

    /// One pass of the refresh-token validator (``RefreshValidationHandler``) on the lifecycle's engine, as the server
    /// runs it each tick; the validation benchmark and tests call it directly. Returns how many accounts it claimed.
    @discardableResult
    public func processDueValidations(limit: Int = 64, logger: Logger) async -> Int {
        await engine.runPass(RefreshValidationHandler(accounts: self), limit: limit, logger: logger)
    }
}
