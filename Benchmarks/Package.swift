// swift-tools-version: 6.1

import Foundation
import PackageDescription

// `.package(path: "../")` gives the main package the identity of its checkout's folder (`main`, `orchard`, `bench`…),
// and `.product(package:)` must name that identity. Derive it from this manifest's own path, so the package builds in
// a clone or worktree under any name.
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "orchard-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // JSONReaderBenchmark only: the one JSON reader on the package mirror besides Foundation's.
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
    ],
    targets: [
        .executableTarget(
            name: "ValidationBenchmark",
            dependencies: [
                .product(name: "AppleID", package: mainPackage),
                .product(name: "Accounts", package: mainPackage),
                .product(name: "Storage", package: mainPackage),
                .product(name: "AppleIDEmulator", package: mainPackage),
                .product(name: "OrchardServer", package: mainPackage),
                .product(name: "OrchardTesting", package: mainPackage),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "JSONReaderBenchmark",
            dependencies: [
                .product(name: "AppleID", package: mainPackage),
                .product(name: "AppleIDEmulator", package: mainPackage),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "VerifyBenchmark",
            dependencies: [
                .product(name: "AppleID", package: mainPackage),
                .product(name: "AppleIDEmulator", package: mainPackage),
                .product(name: "Accounts", package: mainPackage),
                .product(name: "OrchardTesting", package: mainPackage),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
