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
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libswscale libswresample libavutil",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libswresample-dev", "libavutil-dev"])]
        ),
        // Wire formats and text a peer sends, parsed without a trap: no FFmpeg, no NIO, no
        // Foundation (XML through libxml2, behind a Swift tree). Both sides of a protocol use it.
        // libxml2 for the XML peers send (ONVIF's SOAP, WS-Discovery): Wire's XMLTree is its one user.
        .systemLibrary(name: "CXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .target(name: "Wire", dependencies: ["CXML2", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: swiftSettings),
        .target(
            name: "MediaCore",
            dependencies: ["CFFmpeg", "Wire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .systemLibrary(
            name: "CSRT",
            pkgConfig: "srt",
            providers: [.apt(["libsrt-gnutls-dev"])]
        ),
        .target(
            name: "Demux",
            dependencies: ["CFFmpeg", "CSRT", "MediaCore", "Wire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Decode",
            dependencies: ["CFFmpeg", "MediaCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Mux",
            dependencies: ["CFFmpeg", "MediaCore", "Demux", "Decode", "Wire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StampedSource",
            dependencies: ["CFFmpeg", "MediaCore", "Demux"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Relay",
            dependencies: [
                "MediaCore", "Demux", "Decode", "Mux", "Wire", "Access",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Catalog",
            dependencies: [
                "Relay",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // A fleet of nodes on one PostgreSQL database: the shared catalog, the node registry and
        // the camera leases that place each pulled stream on exactly one live node.
        .target(
            name: "Fleet",
            dependencies: [
                "Relay", "Wire", "MediaCore", "Demux",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The one authorizer: may these credentials do this action on this stream from this
        // client. No HTTP and no engine: every server adapts its credentials to it, and the
        // engine's configuration holds its settings.
        .target(
            name: "Access",
            dependencies: [
                "Wire", .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IngestServer",
            dependencies: [
                "Relay", "Access", "MediaCore", "Demux", "Wire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RTSPServer",
            dependencies: [
                "Relay", "Access", "Mux", "MediaCore", "Wire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // WebRTC's cryptography from Debian: OpenSSL (DTLS) and libsrtp2 (SRTP).
        .systemLibrary(
            name: "CWebRTC",
            pkgConfig: "libsrtp2 openssl",
            providers: [.apt(["libssl-dev", "libsrtp2-dev"])]
        ),
        // WebRTC out (WHEP): ICE-lite on one UDP port, DTLS-SRTP, RTP and RTCP feedback; the
        // media is the stream's own, cut into RTP by FFmpeg.
        .target(
            name: "WebRTC",
            dependencies: [
                "CWebRTC", "Relay", "Mux", "Demux", "MediaCore", "Wire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP API's request and response bodies, Codable both ways, and the one JSON
        // encoder and decoder: the server answers with them, tests and the bench read them back.
        .target(name: "RelayAPI", dependencies: ["Relay"], swiftSettings: swiftSettings),
        // Writes text files of a target into it as string constants (RelayServer's openapi.json as
        // OpenAPIDocument.json), run again when a file changes: the binary needs nothing beside it.
        .plugin(name: "EmbedText", capability: .buildTool()),
        .target(
            name: "RelayServer",
            dependencies: [
                "Relay", "RelayAPI", "Access", "Wire", "MediaCore", "WebRTC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["openapi.json"],
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "EmbedText")]
        ),
        // The program `serve` runs: the engine, the authorizer and every server.
        .target(
            name: "Serve",
            dependencies: [
                "Relay", "Access", "MediaCore", "RelayServer", "IngestServer", "RTSPServer", "Catalog", "Fleet", "WebRTC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Bench",
            dependencies: [
                "Relay", "RelayAPI", "MediaCore", "Demux", "Decode", "StampedSource", "IngestServer", "WebRTC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "liverelay-fuzz",
            dependencies: ["Relay", "Access", "MediaCore", "Demux", "StampedSource", "IngestServer", "Wire"],
            path: "Sources/Fuzz",
            swiftSettings: swiftSettings
        ),
        // Writes the commit a build is made from into `liverelay` (BuildStamp), run again when
        // HEAD moves: `--version` names it wherever the binary is installed.
        .plugin(name: "CommitStamp", capability: .buildTool()),
        .executableTarget(
            name: "liverelay",
            dependencies: [
                "Relay", "Serve", "Access", "Catalog", "MediaCore", "Demux", "Decode", "Mux", "StampedSource", "Bench", "Wire",
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "CommitStamp")]
        ),
        .target(
            name: "TestSupport",
            dependencies: ["MediaCore", "Demux", "Mux", "StampedSource", "Bench", "RelayAPI", "Relay"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "WireTests", dependencies: ["Wire", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: swiftSettings),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "Relay", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "CatalogTests", dependencies: ["Catalog", "Relay", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "RTSPServerTests", dependencies: ["RTSPServer", "Wire", .product(name: "NIOCore", package: "swift-nio"),
                                                      .product(name: "NIOEmbedded", package: "swift-nio")], swiftSettings: swiftSettings),
        .testTarget(name: "AccessTests", dependencies: ["Access", "Wire", .product(name: "HummingbirdBcrypt", package: "hummingbird-auth")], swiftSettings: swiftSettings),
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "StampedSource", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "DemuxTests", dependencies: ["Demux", "Wire", "Mux", "StampedSource", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "DecodeTests", dependencies: ["Decode", "Demux", "Mux", "StampedSource", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "MuxTests", dependencies: ["Mux", "Wire", "Decode", "Demux", "StampedSource", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "Access", "Catalog", "Wire", "Decode", "Mux", "StampedSource", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "IngestServerTests", dependencies: ["IngestServer"], swiftSettings: swiftSettings),
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "RelayAPI", "Relay", "Access", "WebRTC", "TestSupport", .product(name: "Hummingbird", package: "hummingbird"),
                                                        .product(name: "HummingbirdTesting", package: "hummingbird"), .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "liverelayTests", dependencies: ["TestSupport", "Bench", "RelayAPI", "Relay", "Wire", "Fleet", "StampedSource", .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Logging", package: "swift-log"),
                                                      .product(name: "Crypto", package: "swift-crypto")], swiftSettings: swiftSettings),
    ]
)
