// swift-tools-version: 6.1

import PackageDescription

// OrchardKit: the app's half of Sign in with Apple's lifecycle, talking to an Orchard server. It depends on nothing
// but Foundation (FoundationNetworking on Linux) and, on Apple platforms, Security, CryptoKit and
// AuthenticationServices.
let package = Package(
    name: "OrchardKit",
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "OrchardKit", targets: ["OrchardKit"])
    ],
    targets: [
        .target(
            name: "OrchardKit",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .testTarget(
            name: "OrchardKitTests",
            dependencies: ["OrchardKit"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
