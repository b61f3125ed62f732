// swift-tools-version: 6.1

import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // A nonisolated async function runs on its caller's executor (SE-0461) instead of hopping to the generic one. `serve`
    // runs Swift concurrency on NIO's event loops, where every such hop is a round trip through the loop's task queue:
    // this took 6 of the 85 executor switches out of each session check (the rest are Hummingbird's and NIO's).
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
]

/// A product of one of the server's dependencies, used only with the `Server` trait (on by default): an app that depends
/// on this repository for OrchardKit turns the trait off (`traits: []`), and SwiftPM then neither builds nor fetches any
/// of them.
func server(_ name: String, _ package: String) -> Target.Dependency {
    .product(name: name, package: package, condition: .when(traits: ["Server"]))
}

let package = Package(
    name: "orchard",
    platforms: [.macOS(.v15), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        // The app's client, the same sources as the package in Clients/OrchardKit: depends on nothing but Foundation.
        .library(name: "OrchardKit", targets: ["OrchardKit"]),
        .executable(name: "orchard", targets: ["orchard"]),
        .library(name: "AppleID", targets: ["AppleID"]),
        .library(name: "Accounts", targets: ["Accounts"]),
        .library(name: "Storage", targets: ["Storage"]),
        .library(name: "AppleIDEmulator", targets: ["AppleIDEmulator"]),
        .library(name: "OrchardServer", targets: ["OrchardServer"]),
        .library(name: "OrchardTesting", targets: ["OrchardTesting"]),
    ],
    traits: [
        .trait(name: "Server", description: "The server, its command and their tests; an app that only needs OrchardKit turns it off."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        // Already built for postgres-kit; Storage names its pool's error (a tripped circuit breaker is an outage).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.27.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Already built for jwt-kit; AppleID's base64url is its decoder and encoder (no alphabet translation by hand).
        .package(url: "https://github.com/swift-extras/swift-extras-base64.git", from: "1.2.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Without its file traits: the configuration file holds `apple.teams`, an array of objects, which its file
        // providers do not read; Orchard reads the file itself (JSON, or YAML with Yams) into an in-memory provider.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // Hummingbird's own dependency (its HTTP parts), named for OrchardServer's connection deadlines: no extra build.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // Already built for jwt-kit; the TLS test makes its certificate with it.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.15.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        // Already built for swift-service-lifecycle; the job loops tick with its AsyncTimerSequence.
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.0.0"),
        // Already built for Hummingbird (its TracingMiddleware): spans around Apple calls and jobs cost nothing
        // unless `serve` bootstraps a tracer.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // The OTLP exporter, for `serve` only (not the libraries, the fuzzers or the benchmarks). The HTTP trait alone:
        // the default gRPC trait would add grpc-swift to every clean build.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .target(
            name: "OrchardKit",
            path: "Clients/OrchardKit/Sources/OrchardKit",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .target(
            name: "AppleID",
            dependencies: [
                server("JWTKit", "jwt-kit"),
                server("Crypto", "swift-crypto"),
                server("CryptoExtras", "swift-crypto"),
                server("ExtrasBase64", "swift-extras-base64"),
                server("AsyncHTTPClient", "async-http-client"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("NIOCore", "swift-nio"),
                server("NIOFoundationCompat", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("Tracing", "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Accounts",
            dependencies: [
                "AppleID",
                // Already built for AppleID; access tokens are signed and their key set written with it.
                server("JWTKit", "jwt-kit"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("Tracing", "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Storage",
            dependencies: [
                "AppleID",
                "Accounts",
                server("SQLKit", "sql-kit"),
                server("GRDB", "GRDB.swift"),
                // GRDB's own SQLite module: the reader steps GRDB's cached statements through the SQLite API, and the
                // change watch its own statements on GRDB's connections.
                server("GRDBSQLite", "GRDB.swift"),
                server("PostgresKit", "postgres-kit"),
                server("PostgresNIO", "postgres-nio"),
                server("_ConnectionPoolModule", "postgres-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("Metrics", "swift-metrics"),
                // Already built for the server: the database's pool and the session memory's listener are services.
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "AppleIDEmulator",
            dependencies: [
                "AppleID",
                server("Hummingbird", "hummingbird"),
                server("JWTKit", "jwt-kit"),
                server("Crypto", "swift-crypto"),
                server("CryptoExtras", "swift-crypto"),
                server("Logging", "swift-log"),
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OrchardServer",
            dependencies: [
                "AppleID",
                "Accounts",
                "Storage",
                server("Hummingbird", "hummingbird"),
                server("HummingbirdCore", "hummingbird"),
                server("HummingbirdHTTP2", "hummingbird"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Configuration", "swift-configuration"),
                server("Yams", "Yams"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("AsyncAlgorithms", "swift-async-algorithms"),
                server("AsyncHTTPClient", "async-http-client"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTPTypes", "swift-nio-extras"),
                server("Tracing", "swift-distributed-tracing"),
            ],
            resources: [.copy("Resources/openapi.yaml")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OrchardTesting",
            dependencies: [
                "AppleID",
                "Accounts",
                "Storage",
                "AppleIDEmulator",
                "OrchardServer",
                server("Hummingbird", "hummingbird"),
                server("HummingbirdTesting", "hummingbird"),
                server("AsyncHTTPClient", "async-http-client"),
                server("Logging", "swift-log"),
                server("InMemoryLogging", "swift-log"),
                server("MetricsTestKit", "swift-metrics"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("NIOCore", "swift-nio"),
                server("Prometheus", "swift-prometheus"),
                server("Metrics", "swift-metrics"),
                server("JWTKit", "jwt-kit"),
                server("Crypto", "swift-crypto"),
                server("CryptoExtras", "swift-crypto"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                // Already built for jwt-kit; TestCertificateAuthority issues the TLS tests' certificates with it.
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "orchard",
            dependencies: [
                "AppleID",
                "Accounts",
                "Storage",
                "AppleIDEmulator",
                "OrchardServer",
                server("ArgumentParser", "swift-argument-parser"),
                server("Hummingbird", "hummingbird"),
                server("AsyncHTTPClient", "async-http-client"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Logging", "swift-log"),
                server("Configuration", "swift-configuration"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("Crypto", "swift-crypto"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                // Already built for the server; `notifications doctor` makes its own TLS handshakes and reads the
                // server's certificate.
                server("NIOSSL", "swift-nio-ssl"),
                server("NIOTLS", "swift-nio"),
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
                server("SQLKit", "sql-kit"),
                server("UnixSignals", "swift-service-lifecycle"),
                server("OTel", "swift-otel"),
                server("Tracing", "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleIDTests",
            dependencies: ["AppleID", "OrchardTesting"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccountsTests",
            dependencies: ["Accounts", "OrchardTesting", server("InMemoryLogging", "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "Accounts", "OrchardTesting",
                server("SQLKit", "sql-kit"),
                server("Logging", "swift-log"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleIDEmulatorTests",
            dependencies: [
                "AppleIDEmulator", "AppleID", "OrchardTesting",
                server("AsyncHTTPClient", "async-http-client"),
                server("JWTKit", "jwt-kit"),
                server("Hummingbird", "hummingbird"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OrchardServerTests",
            dependencies: [
                "OrchardServer", "OrchardTesting", "AppleIDEmulator", "Storage", "Accounts", "AppleID",
                server("JWTKit", "jwt-kit"),
                server("HummingbirdTesting", "hummingbird"),
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("SQLKit", "sql-kit"),
                server("Logging", "swift-log"),
                server("InMemoryLogging", "swift-log"),
                server("MetricsTestKit", "swift-metrics"),
                server("NIOSSL", "swift-nio-ssl"),
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
                server("Crypto", "swift-crypto"),
            ],
            exclude: ["Scripts"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "orchardTests",
            dependencies: [
                "orchard", "OrchardTesting", "AppleIDEmulator", "Storage", "AppleID", "Accounts",
                server("AsyncHTTPClient", "async-http-client"),
                server("SQLKit", "sql-kit"),
                server("Logging", "swift-log"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOSSL", "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
