import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// deploy/nginx/session-check.conf, run: nginx lets a request through to the app's backend only while Orchard accepts
/// its session.
@Suite("The nginx session-check recipe, run", .backendIndependent)
struct SessionCheckRecipeTests {
    @Test(
        "nginx's auth_request to GET /v1/session lets a live session through and refuses a signed-out one at once",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") || ProcessInfo.processInfo.environment["CI"] == "true",
            "nginx is not installed (Debian: nginx)"
        )
    )
    func nginxSessionCheck() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"), "nginx is not installed (Debian: nginx)")
        let setup = try await ServeProcessTests.Setup.start()
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let work = try TemporaryDirectory()
        var processes: [Process] = []
        defer {
            for process in processes { ChildProcess.endNow(process) }
            work.remove()
            Task {
                await serve.terminate()
                await setup.stop()
            }
        }
        // The app's backend: a static file server.
        let backendPort = try await ServeProcess.freePort()
        try FileManager.default.createDirectory(atPath: work.file("site/api"), withIntermediateDirectories: true)
        try "from the backend\n".write(toFile: work.file("site/api/hello"), atomically: true, encoding: .utf8)
        let backend = Process()
        backend.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        backend.arguments = ["python3", "-m", "http.server", String(backendPort), "--bind", "127.0.0.1", "--directory", work.file("site")]
        backend.standardOutput = FileHandle.nullDevice
        backend.standardError = FileHandle.nullDevice
        try ChildProcess.start(backend)
        processes.append(backend)

        // The recipe as shipped, pointed at this Orchard, this backend and a free port.
        let nginxPort = try await ServeProcess.freePort()
        let recipe = try String(contentsOf: BrowserTests.root.appendingPathComponent("deploy/nginx/session-check.conf"), encoding: .utf8)
        let site = recipe.replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server \(serve.baseURL.dropFirst("http://".count));")
            .replacingOccurrences(of: "listen 8443;", with: "listen 127.0.0.1:\(nginxPort);")
            .replacingOccurrences(of: "http://127.0.0.1:9000", with: "http://127.0.0.1:\(backendPort)")
        #expect(site != recipe)
        let root = work.path
        let conf = """
            \(geteuid() == 0 ? "user root;" : "")
            pid \(root)/nginx.pid;
            error_log \(root)/error.log;
            events {}
            http {
                access_log off;
                client_body_temp_path \(root)/body; proxy_temp_path \(root)/proxy; fastcgi_temp_path \(root)/fastcgi;
                uwsgi_temp_path \(root)/uwsgi; scgi_temp_path \(root)/scgi;
            \(site)
            }
            """
        try conf.write(toFile: work.file("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-p", root, "-c", work.file("nginx.conf"), "-g", "daemon off;"]
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try ChildProcess.start(nginx)
        processes.append(nginx)

        let client = setup.client(serve)
        let signIn = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
        let session = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        let url = "http://127.0.0.1:\(nginxPort)/api/hello"
        #expect(await eventually(timeout: 20) { (try? await client.request(.GET, url, bearer: session).status) == 200 }, "nginx did not come up")
        let through = try await client.request(.GET, url, bearer: session)
        #expect(String(decoding: through.body, as: UTF8.self) == "from the backend\n")
        #expect(try await client.request(.GET, url).status == 401, "no session")
        #expect(try await client.request(.GET, url, bearer: "unknown").status == 401, "an unknown session")
        #expect(try await client.request(.GET, url, headers: [("Cookie", "__Host-orchard_session=\(session)")]).status == 200, "the cookie")
        #expect(try await client.request(.DELETE, "/v1/session", bearer: session).status == 204)
        #expect(try await client.request(.GET, url, bearer: session).status == 401, "refused by the very next request after sign-out")
    }
}
