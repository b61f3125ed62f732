import OrchardTesting
import Testing

extension Trait where Self == ConditionTrait {
    /// A suite that touches no database of the run's backend (SQLite files of its own, or none): the SQLite pass runs it,
    /// and the PostgreSQL pass skips it rather than run the same thing twice (`scripts/test`).
    static var backendIndependent: Self {
        .enabled(if: TestDatabase.isSQLitePass, "touches no PostgreSQL: the SQLite pass runs it")
    }
}
