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
            missing: "schemathesis is not installed"
        )
    }
}
