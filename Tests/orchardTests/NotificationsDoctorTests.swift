import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// `orchard notifications doctor`, run as an operator runs it: against Orchard's own HTTPS listener, and against small
/// TLS servers (python3's http.server) that each get one thing wrong, all with certificates from a test CA.
@Suite("orchard notifications doctor", .backendIndependent)
struct NotificationsDoctorTests {
    /// The checks, in the order the report lists them.
    static let names = ["https", "tls_handshake", "certificate", "old_tls_refused", "probe"]

    @Test("Orchard's own HTTPS, trusted through --ca-file: every check passes, exit 0, and --json has the documented shape")
    func orchardPasses() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let server = try authority.issue("localhost")
        // `orchard serve` in a process of its own, as an operator runs it: the probe must be answered within 5 s, and a
        // server inside this process, beside a parallel pass, once was not.
        try await InstallationOnBackend.withServe(tls: server, from: authority) { serve, _ in
            try await Self.checkPasses("https://localhost:\(serve.port)/v1/apple/notifications", caFile: authority.certificateFile)
        }
    }

    /// Runs the doctor on Orchard's endpoint at `url`, with `--json` and without, and checks that every check passed.
    private static func checkPasses(_ url: String, caFile: String) async throws {
        let run = try await doctor(url, caFile: caFile)
        #expect(run.status == 0, "\(run)")
        for name in ["https", "tls_handshake", "certificate", "probe"] {
            #expect(run.result(name) == "pass", "\(name): \(run)")
        }
        // Orchard speaks TLS 1.2 and later only; a warning would still not fail the run.
        #expect(run.result("old_tls_refused") != "fail", "\(run)")
        #expect(run.detail("tls_handshake").contains("localhost"))
        #expect(run.detail("probe").contains("400 notification_invalid"))

        #expect(run.report["url"] as? String == url)
        #expect(run.report["ok"] as? Bool == true)
        #expect(Set(run.report.keys) == ["url", "ok", "checks"])
        let checks = try #require(run.report["checks"] as? [[String: Any]])
        #expect(checks.compactMap { $0["name"] as? String } == names)
        for check in checks {
            #expect(Set(check.keys) == ["name", "result", "detail"])
            #expect(!((check["detail"] as? String) ?? "").isEmpty)
        }

        let text = try await OrchardProcess.runInBackground(
            ["notifications", "doctor", url, "--ca-file", caFile],
            timeout: 120
        )
        #expect(text.status == 0, "\(text.standardOutput)\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "url: \(url)")
        for name in names {
            #expect(lines.contains { $0.hasPrefix(name + " ") && !$0.contains(" FAIL ") }, "\(name): \(text.standardOutput)")
        }
        #expect(lines.last?.hasPrefix("result: pass") == true, "\(text.standardOutput)")
    }

    @Test("--help names every check, the options and the exit statuses")
    func help() async throws {
        let result = try await OrchardProcess.runInBackground(["notifications", "doctor", "--help"])
        #expect(result.status == 0)
        for word in ["USAGE", "--ca-file", "--json"] + Self.names {
            #expect(result.standardOutput.contains(word), "\(word): \(result.standardOutput)")
        }
    }

    @Test("an endpoint that answers the probe with a redirect fails the probe, naming where it points: exit 1")
    func redirectFails() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let stub = try await StubEndpoint.start(authority.issue("localhost"), mode: .redirect, in: directory)
        defer { stub.stop() }
        let run = try await Self.doctor(stub.url, caFile: authority.certificateFile)
        #expect(run.status == 1, "\(run)")
        #expect(run.report["ok"] as? Bool == false)
        #expect(run.result("tls_handshake") == "pass", "\(run)")
        #expect(run.result("probe") == "fail", "\(run)")
        #expect(run.detail("probe").contains("301"))
        #expect(run.detail("probe").contains("redirect"))
        #expect(run.detail("probe").contains("https://elsewhere.example/v1/apple/notifications"))
    }

    @Test("an endpoint that takes the probe and never answers fails the probe at its 5-second limit: exit 1, not a wait for the server")
    func silentFails() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let stub = try await StubEndpoint.start(authority.issue("localhost"), mode: .silent, in: directory)
        defer { stub.stop() }
        let started = ContinuousClock.now
        let run = try await Self.doctor(stub.url, caFile: authority.certificateFile)
        let took = ContinuousClock.now - started
        #expect(run.status == 1, "\(run)")
        #expect(run.result("tls_handshake") == "pass", "\(run)")
        #expect(run.result("probe") == "fail", "\(run)")
        #expect(run.detail("probe").contains("no answer within 5"), "\(run)")
        // The server holds the probe for 60 s; the command gave up at its limit, well before.
        #expect(took < .seconds(45), "the doctor waited \(took)")
    }

    @Test("a plain http URL fails https, and every later check as not checked; a URL with a password fails https, never printed")
    func notHTTPS() async throws {
        // A real Orchard endpoint, answering on plain HTTP: Apple posts to none such, however well it answers.
        let served = try await OrchardHarness.start()
        defer { Task { await served.stop() } }
        let port = served.server.port
        #expect(try await served.request(.POST, "/v1/apple/notifications", json: ["payload": "probe"]).code == "notification_invalid")
        let plain = try await Self.doctor("http://127.0.0.1:\(port)/v1/apple/notifications")
        #expect(plain.status == 1, "\(plain)")
        #expect(plain.result("https") == "fail")
        #expect(plain.detail("https").contains("http"))
        for name in Self.names.dropFirst() {
            #expect(plain.result(name) == "fail", "\(name): \(plain)")
            #expect(plain.detail(name).hasPrefix("not checked"), "\(name): \(plain)")
        }
        let text = try await OrchardProcess.runInBackground(["notifications", "doctor", "http://127.0.0.1:\(port)/v1/apple/notifications"])
        #expect(text.status == 1)
        #expect(text.standardOutput.split(separator: "\n").last == "result: FAIL", "\(text.standardOutput)")

        // The other checks still run, on the URL without its credentials; nothing listens on this port.
        let closed = try await ServeProcess.freePort()
        let credentials = try await Self.doctor("https://operator:s3cret@localhost:\(closed)/v1/apple/notifications")
        #expect(credentials.status == 1, "\(credentials)")
        #expect(credentials.result("https") == "fail")
        #expect(credentials.report["url"] as? String == "https://<redacted>@localhost:\(closed)/v1/apple/notifications")
        #expect(!credentials.output.contains("s3cret"))
        #expect(credentials.result("tls_handshake") == "fail")
        #expect(credentials.detail("tls_handshake").contains("no connection"), "\(credentials)")
    }

    @Test("a certificate that expires in 5 days is a warning (exit 0); one for another host fails the handshake, naming both")
    func certificateDates() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let expiring = try await StubEndpoint.start(authority.issue("expiring", validFor: 5 * 86_400), mode: .answer, in: directory)
        defer { expiring.stop() }
        let soon = try await Self.doctor(expiring.url, caFile: authority.certificateFile)
        #expect(soon.status == 0, "\(soon)")
        #expect(soon.report["ok"] as? Bool == true)
        #expect(soon.result("certificate") == "warn", "\(soon)")
        #expect(soon.detail("certificate").contains("expires"))
        for name in ["https", "tls_handshake", "probe"] {
            #expect(soon.result(name) == "pass", "\(name): \(soon)")
        }
        #expect(soon.result("old_tls_refused") != "fail", "\(soon)")

        let elsewhere = try await StubEndpoint.start(
            authority.issue("elsewhere", hosts: ["other.example"]),
            mode: .answer,
            in: directory
        )
        defer { elsewhere.stop() }
        let wrongHost = try await Self.doctor(elsewhere.url, caFile: authority.certificateFile)
        #expect(wrongHost.status == 1, "\(wrongHost)")
        #expect(wrongHost.result("tls_handshake") == "fail")
        #expect(wrongHost.detail("tls_handshake").contains("not valid for localhost"), "\(wrongHost)")
        #expect(wrongHost.detail("tls_handshake").contains("other.example"), "\(wrongHost)")
        #expect(wrongHost.result("probe") == "fail")
        #expect(wrongHost.detail("probe").hasPrefix("not checked"))
    }

    @Test("without --ca-file, a certificate from a CA that is no system root fails tls_handshake as not trusted; no probe is sent")
    func untrusted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let stub = try await StubEndpoint.start(authority.issue("localhost"), mode: .answer, in: directory)
        defer { stub.stop() }
        let run = try await Self.doctor(stub.url)
        #expect(run.status == 1, "\(run)")
        #expect(run.result("https") == "pass")
        #expect(run.result("tls_handshake") == "fail")
        #expect(run.detail("tls_handshake").contains("not trusted"), "\(run)")
        #expect(run.detail("tls_handshake").contains("Orchard Test CA"), "the issuer is named: \(run)")
        #expect(run.result("probe") == "fail")
        #expect(run.detail("probe").hasPrefix("not checked"))
    }

    @Test("a server that still accepts TLS 1.1 gets a warning for it, not a failure: exit 0")
    func oldTLSWarns() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let stub = try await StubEndpoint.start(authority.issue("localhost"), mode: .oldTLS, in: directory)
        defer { stub.stop() }
        let run = try await Self.doctor(stub.url, caFile: authority.certificateFile)
        #expect(run.status == 0, "\(run)")
        #expect(run.result("old_tls_refused") == "warn", "\(run)")
        #expect(run.detail("old_tls_refused").contains("TLS 1."))
        #expect(run.result("probe") == "pass", "\(run)")
    }

    // MARK: Running the command

    /// One run of `orchard notifications doctor URL --json`.
    struct Run: CustomStringConvertible {
        /// The exit status.
        let status: Int32
        /// The JSON report.
        let report: [String: Any]
        /// Standard output and standard error.
        let output: String

        /// The result of the check `name` (`pass`, `warn`, `fail`).
        func result(_ name: String) -> String? {
            check(name)?["result"] as? String
        }

        /// The detail of the check `name`.
        func detail(_ name: String) -> String {
            check(name)?["detail"] as? String ?? ""
        }

        private func check(_ name: String) -> [String: Any]? {
            (report["checks"] as? [[String: Any]])?.first { $0["name"] as? String == name }
        }

        var description: String { "exit \(status): \(output)" }
    }

    /// Runs the command on `url` with `--json` (and `--ca-file` when given).
    static func doctor(_ url: String, caFile: String? = nil) async throws -> Run {
        var arguments = ["notifications", "doctor", url, "--json"]
        if let caFile { arguments += ["--ca-file", caFile] }
        let result = try await OrchardProcess.runInBackground(arguments, timeout: 120)
        let output = result.standardOutput + result.standardError
        let report = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
            "not one JSON object: \(output)"
        )
        return Run(status: result.status, report: report, output: output)
    }
}

/// A TLS server in python3 that answers every POST with a redirect or as Orchard does (`400` with
/// `{"code": "notification_invalid"}`), for what Orchard itself cannot be made to do.
private struct StubEndpoint {
    /// How it answers.
    enum Mode: String {
        /// `400 notification_invalid`, TLS 1.2 and 1.3 only.
        case answer
        /// `301` to `https://elsewhere.example/v1/apple/notifications`.
        case redirect
        /// `400 notification_invalid`, and TLS 1.0 and 1.1 accepted too.
        case oldTLS = "old-tls"
        /// Reads the probe and answers nothing for 60 s.
        case silent
    }

    let process: Process
    let port: Int

    /// Where the doctor is pointed.
    var url: String { "https://localhost:\(port)/v1/apple/notifications" }

    /// Starts it with `issued` as its certificate, on a port it picks, and waits until it listens.
    static func start(_ issued: TestCertificateAuthority.Issued, mode: Mode, in directory: TemporaryDirectory) async throws -> StubEndpoint {
        let name = UUID().uuidString
        let script = directory.file("\(name).py")
        let portFile = directory.file("\(name).port")
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, issued.certificateFile, issued.keyFile, mode.rawValue, portFile]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcess.start(process)
        // The port file appears once the socket listens (bind and listen come first).
        let started = await eventually(timeout: 30) { FileManager.default.fileExists(atPath: portFile) || !process.isRunning }
        let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
        guard started, let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            ChildProcess.endNow(process)
            throw StubEndpointError(description: "the python3 TLS server did not start (exit \(process.isRunning ? -1 : process.terminationStatus))")
        }
        return StubEndpoint(process: process, port: port)
    }

    /// Ends it.
    func stop() {
        ChildProcess.endNow(process)
    }

    /// The server: arguments CERTIFICATE KEY MODE PORT_FILE.
    static let script = """
        import http.server, json, os, ssl, sys, time, warnings

        warnings.simplefilter("ignore")
        certificate, key, mode, port_file = sys.argv[1:5]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        if mode == "old-tls":
            context.minimum_version = ssl.TLSVersion.TLSv1
            context.set_ciphers("DEFAULT:@SECLEVEL=0")


        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if mode == "silent":
                    time.sleep(60)
                    return
                if mode == "redirect":
                    self.send_response(301)
                    self.send_header("Location", "https://elsewhere.example/v1/apple/notifications")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"code": "notification_invalid"}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/problem+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments):
                pass


        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request, client_address):
                try:
                    connection = context.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    return
                try:
                    self.RequestHandlerClass(connection, client_address, self)
                finally:
                    connection.close()


        server = Server(("127.0.0.1", 0), Handler)
        with open(port_file + ".tmp", "w") as file:
            file.write(str(server.server_address[1]))
        os.replace(port_file + ".tmp", port_file)
        server.serve_forever()
        """
}

/// The python3 TLS server did not start.
private struct StubEndpointError: Error, CustomStringConvertible {
    let description: String
}
