import Foundation
import OrchardTesting
import Testing

@Suite("The served OpenAPI document against the running server (schemathesis, every check)")
struct SchemathesisTests {
    @Test(
        "no 5xx, answers as documented, schema-valid requests accepted and invalid ones refused, on every operation",
        .timeLimit(.minutes(10))
    )
    func everyOperationAsDocumented() async throws {
        try await BrowserTests.runPythonSuite(
            "Tests/schemathesis/run.py",
            output: "test-output/schemathesis",
            name: "the schemathesis checks",
            missing: "schemathesis is not installed",
            // Every check on every operation on both backends; the SQLite pass generates run.py's 150 cases per
            // operation, the PostgreSQL pass half as many. This suite is each pass's longest by a minute and a half
            // (over 300 s beside the others on 2 cores), and CI keeps within 35 minutes.
            onPostgres: ["--max-examples", "75"]
        )
    }
}
