import SQLKit

/// How SQLKit writes SQL for SQLite: `?NNN` placeholders, double-quoted identifiers, `RETURNING` and upserts (SQLite
/// 3.35 or later, which every supported Debian ships).
///
/// Orchard talks to SQLite through GRDB rather than sqlite-nio, so it states the dialect itself; it matches sqlite-kit's.
struct OrchardSQLiteDialect: SQLDialect {
    var name: String { "sqlite" }
    var identifierQuote: any SQLKit.SQLExpression { SQLRaw("\"") }
    var literalStringQuote: any SQLKit.SQLExpression { SQLRaw("'") }
    var literalDefault: any SQLKit.SQLExpression { SQLLiteral.null }
    var supportsIfExists: Bool { true }
    var supportsDropBehavior: Bool { false }
    var supportsAutoIncrement: Bool { false }
    var autoIncrementClause: any SQLKit.SQLExpression { SQLRaw("AUTOINCREMENT") }
    var enumSyntax: SQLEnumSyntax { .unsupported }
    var alterTableSyntax: SQLAlterTableSyntax { .init(allowsBatch: false) }
    var upsertSyntax: SQLUpsertSyntax { .standard }
    var supportsReturning: Bool { true }
    var unionFeatures: SQLUnionFeatures { [.union, .unionAll, .intersect, .except] }

    func bindPlaceholder(at position: Int) -> any SQLKit.SQLExpression { SQLRaw("?\(position)") }
    func literalBoolean(_ value: Bool) -> any SQLKit.SQLExpression { SQLRaw(value ? "TRUE" : "FALSE") }
}
