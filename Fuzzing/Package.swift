// swift-tools-version: 6.1

import Foundation
import PackageDescription

// libFuzzer targets for the parsers that face the internet. Build and run them with `Fuzzing/run` (it passes
// `-sanitize=fuzzer`); they do not build without that flag, so they live outside the main package.
//
// `.package(path: "../")` gives the main package the identity of its checkout's folder: derive it from this manifest's
// own path, so the package builds in a clone or worktree under any name.
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let fuzzers = ["FuzzIdentityToken", "FuzzNotification", "FuzzRequestBodies", "FuzzCallbackForm"]

let package = Package(
    name: "orchard-fuzzing",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "AppleID", package: mainPackage),
                .product(name: "OrchardServer", package: mainPackage),
                .product(name: "OrchardTesting", package: mainPackage),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        )
    ]
        + fuzzers.map { name in
            .executableTarget(name: name, dependencies: ["FuzzSupport"], swiftSettings: swiftSettings)
        }
)
