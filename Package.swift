// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Reachability",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .library(name: "Connectivity", targets: ["Connectivity"]),
        .executable(name: "reachability", targets: ["ReachabilityCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        // Benchmarks only; malloc counting through its interposer (no jemalloc needed).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libmnl",
            providers: [.apt(["libmnl-dev"])]
        ),
        .target(
            name: "Reachability",
            dependencies: ["CNetlink"]
        ),
        .target(
            name: "Connectivity",
            dependencies: [
                "Reachability",
                "CNetlink",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "ReachabilityExample",
            dependencies: ["Reachability", "Connectivity"]
        ),
        .executableTarget(
            name: "ReachabilityCLI",
            dependencies: [
                "Reachability",
                "Connectivity",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "ReachabilityTests",
            dependencies: ["Reachability"],
            exclude: ["Support/capture_fixtures.py"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ConnectivityTests",
            dependencies: ["Connectivity"]
        ),
        .testTarget(
            name: "ReachabilityIntegrationTests",
            // The CLI tests run the built `reachability` binary inside test namespaces;
            // the Connectivity tests probe real SwiftNIO HTTP servers there.
            dependencies: [
                "Reachability", "Connectivity", "ReachabilityCLI", "CNetlink",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // The scriptable DNS server the hostname tests run (see Support/DNSServer.swift).
            exclude: ["Support/dns_server.py"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// In-process benchmarks (ordo-one/benchmark): `swift package --disable-sandbox benchmark`.
package.targets += [
    .executableTarget(
        name: "ReachabilityBenchmarks",
        dependencies: [
            "Reachability",
            .product(name: "Benchmark", package: "benchmark"),
        ],
        path: "Benchmarks/ReachabilityBenchmarks",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    ),
    // The scale and latency probe that Benchmarks/scale.py drives (10,000 targets,
    // kernel event → callback).
    // libFuzzer target (built with -sanitize=fuzzer,address; see Fuzz/NetlinkFuzz).
    .target(name: "CFuzzDriver", path: "Fuzz/CFuzzDriver"),
    .executableTarget(
        name: "NetlinkFuzz",
        dependencies: ["Reachability", "CFuzzDriver"],
        path: "Fuzz/NetlinkFuzz",
        swiftSettings: [.unsafeFlags(["-parse-as-library"])]
    ),
    // Storm and churn runs measured in a process of their own (the hardening tests start it).
    .executableTarget(
        name: "ReachabilityStress",
        dependencies: ["Reachability", "Connectivity"],
        path: "Tests/ReachabilityStress"
    ),
    .executableTarget(
        name: "ReachabilityScale",
        dependencies: ["Reachability"],
        path: "Benchmarks/ReachabilityScale"
    ),
]

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
