// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "LiveRelay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liverelay", targets: ["liverelay"]),
        .library(name: "Relay", targets: ["Relay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libswscale libavutil",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]
        ),
        .target(
            name: "MediaCore",
            dependencies: ["CFFmpeg", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Demux",
            dependencies: ["CFFmpeg", "MediaCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Decode",
            dependencies: ["CFFmpeg", "MediaCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Mux",
            dependencies: ["CFFmpeg", "MediaCore", "Demux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Relay",
            dependencies: ["MediaCore", "Demux", "Decode", "Mux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RelayServer",
            dependencies: ["Relay", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "liverelay",
            dependencies: [
                "Relay", "RelayServer", "MediaCore", "Demux", "Decode", "Mux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: ["MediaCore", "Demux", "Mux"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "DemuxTests", dependencies: ["Demux", "Mux", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "DecodeTests", dependencies: ["Decode", "Demux", "Mux", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "MuxTests", dependencies: ["Mux", "Decode", "Demux", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "liverelayTests", dependencies: ["TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
    ]
)
