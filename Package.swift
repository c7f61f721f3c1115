// swift-tools-version:6.1
import PackageDescription

// `scripts/sanitize` sets AUTHGATE_SANITIZER to `address` or `thread`. AuthGate's own targets,
// its C shims included, are then compiled and linked with that sanitizer in the ordinary
// `.build` directory, where the dependencies are already built: they stay uninstrumented and
// are not compiled again (SwiftPM's `--sanitize` would rebuild all of them, BoringSSL included,
// in a scratch directory of their own; that build took 15 minutes of `make test` per
// sanitizer). Memory from the dependencies' allocations is still tracked, and LeakSanitizer
// still sees every block; what is lost is the detection of errors and races inside the
// dependencies' own code.
let sanitizer = Context.environment["AUTHGATE_SANITIZER"].flatMap { ["address", "thread"].contains($0) ? $0 : nil }
let sanitized: [SwiftSetting] = sanitizer.map { [.unsafeFlags(["-sanitize=\($0)"])] } ?? []
let sanitizedC: [CSetting] = sanitizer.map { [.unsafeFlags(["-fsanitize=\($0)"])] } ?? []
let sanitizedLink: [LinkerSetting] = sanitizer.map { [.unsafeFlags(["-sanitize=\($0)"])] } ?? []

let strict: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
        // Release builds leave out the run-time exclusivity checks (about a tenth of a proxied
        // request's instructions, docs/BENCHMARKS.md); debug builds, and so every test and the
        // sanitizer builds, keep them.
        .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
    ] + sanitized

let package = Package(
    name: "AuthGate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "authgate", targets: ["authgate"]),
        .library(name: "AuthCore", targets: ["AuthCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        // Configuration layering (file, AUTHGATE_* environment, flags); the flags' provider
        // is behind a package trait.
        .package(
            url: "https://github.com/apple/swift-configuration.git", from: "1.4.0",
            traits: [.defaults, "CommandLineArguments"]),
        // Spans (W3C trace context in and out); exported over OTLP/HTTP only, when the OTEL_*
        // variables ask: the gRPC exporter's trait stays off (it would add minutes to every build).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .systemLibrary(
            name: "CHTTPParser",
            providers: [.apt(["libhttp-parser-dev"])]
        ),
        .target(
            name: "CCurl",
            cSettings: sanitizedC,
            linkerSettings: [.linkedLibrary("curl")] + sanitizedLink
        ),
        .target(name: "CProcess", cSettings: sanitizedC, linkerSettings: sanitizedLink),
        .target(name: "Locking", swiftSettings: strict, linkerSettings: sanitizedLink),
        .target(
            name: "HTTPWire",
            dependencies: ["CHTTPParser"],
            swiftSettings: strict,
            linkerSettings: sanitizedLink
        ),
        .target(
            name: "Runtime",
            dependencies: [
                "Locking",
                "CLibUV",
                "CCurl",
                "CProcess",
                "HTTPWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "AuthCore",
            dependencies: [
                "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Gateway",
            dependencies: [
                "Locking",
                "Runtime",
                "HTTPWire",
                "AuthCore",
                "PostgresStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PostgresStore",
            dependencies: [
                "AuthCore",
                "Locking",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "AuthGateTesting",
            dependencies: [
                "Locking", "AuthCore", "Runtime", "HTTPWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "authgate",
            // The executable reaches everything through Gateway (and the fakes of `dev`):
            // it wires no loop, server or client of its own.
            dependencies: [
                "Gateway",
                "AuthGateTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-server",
            dependencies: [
                "Gateway", "Runtime", "HTTPWire", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/BenchServer",
            swiftSettings: strict
        ),
        .target(name: "TestSupport", dependencies: ["Locking", "CProcess"], path: "Tests/TestSupport", swiftSettings: strict),
        .executableTarget(
            name: "authcore-bench",
            dependencies: [
                "AuthCore",
                "AuthGateTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/AuthCoreBench",
            swiftSettings: strict
        ),
        .testTarget(name: "HTTPWireTests", dependencies: ["HTTPWire"], swiftSettings: strict),
        .testTarget(
            name: "RuntimeTests",
            dependencies: [
                "Locking", "Runtime", "HTTPWire", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                "Locking",
                "Gateway", "Runtime", "HTTPWire", "TestSupport", "AuthCore", "AuthGateTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: [
                "TestSupport",
                "AuthCore",
                "AuthGateTesting",
                "PostgresStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AuthCoreTests",
            dependencies: [
                "TestSupport",
                "Locking",
                "AuthCore",
                "AuthGateTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
    ]
)
