// swift-tools-version: 6.2
import PackageDescription

// Package traits (docs/DESIGN.md §4.4): what a dependent resolves, fetches and builds.
// A program that uses only `Reachability`, `ReachabilityCore` or `ReachabilityCompat`
// depends on this package with `traits: []` and resolves swift-log alone (as does
// `swift run --disable-default-traits reachability` in a clone); each trait brings the
// dependencies of the products it names. By default every product is there, through
// the one trait `Everything`, which stands for the four: SwiftPM 6.3 passes the enabled
// traits to the compiler as -D flags in a different order in each process, and a
// changed order rebuilds every module of the package; one flag has one order.
let connectivity: Set<String> = ["Connectivity", "Everything"]
let metrics: Set<String> = ["Metrics", "Everything"]
let serviceLifecycle: Set<String> = ["ServiceLifecycle", "Everything"]
let cli: Set<String> = ["CLI", "Everything"]

let package = Package(
    name: "Reachability",
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        // The same API without Foundation (no NotificationCenter posts, no compatibility
        // layers): for programs that count their memory (DESIGN §4.1, BENCHMARKS.md).
        .library(name: "ReachabilityCore", targets: ["ReachabilityCore"]),
        .library(name: "Connectivity", targets: ["Connectivity"]),
        // rwbutler/Connectivity's URLSession-typed API: links FoundationNetworking,
        // which module Connectivity (and the CLI) stays without.
        .library(name: "ConnectivityURLSession", targets: ["ConnectivityURLSession"]),
        // Alamofire's NetworkReachabilityManager, DTReachability and Network's
        // NWPathMonitor, as thin layers over the core (docs/MIGRATING.md).
        .library(name: "ReachabilityCompat", targets: ["ReachabilityCompat"]),
        // swift-metrics gauges and counters of reachability, path, connectivity and
        // monitor figures (what `reachability exporter` serves to Prometheus).
        .library(name: "ReachabilityMetrics", targets: ["ReachabilityMetrics"]),
        // Reachability, PathMonitor and Connectivity as swift-service-lifecycle services.
        .library(name: "ReachabilityServiceLifecycle", targets: ["ReachabilityServiceLifecycle"]),
        // A simulated network for users' own tests (no kernel, no root), and Observation
        // models of the monitors (a module of their own: Observation is a library to load).
        .library(name: "ReachabilityTestKit", targets: ["ReachabilityTestKit"]),
        .library(name: "ReachabilityObservable", targets: ["ReachabilityObservable"]),
        // The command (docs/DESIGN.md §4.5): `reachability` runs status, watch, wait and
        // interfaces on ReachabilityCore alone and runs `reachability-full`, the whole
        // command, for anything else.
        .executable(name: "reachability", targets: ["ReachabilityCLI"]),
        .executable(name: "reachability-full", targets: ["ReachabilityFullCLI"]),
    ],
    traits: [
        .trait(
            name: "Connectivity",
            description: "The Connectivity and ConnectivityURLSession products (SwiftNIO, NIO-SSL)."),
        .trait(
            name: "Metrics",
            description: "The ReachabilityMetrics product (swift-metrics; its connectivity series with Connectivity)."),
        .trait(
            name: "ServiceLifecycle",
            description: "The ReachabilityServiceLifecycle product (swift-service-lifecycle).",
            enabledTraits: ["Connectivity"]),
        .trait(
            name: "CLI",
            description: "The reachability command (swift-argument-parser, swift-prometheus, SwiftNIO).",
            enabledTraits: ["Connectivity", "Metrics"]),
        .trait(name: "Everything", description: "Every product: the four traits above together, as one flag."),
        .default(enabledTraits: ["Everything"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libmnl",
            providers: [.apt(["libmnl-dev"])]
        ),
        // Everything but what needs Foundation: Glibc and Dispatch only. Three targets, the
        // layers of docs/DESIGN.md §4.1, so that no code uses a layer above its own: the
        // system calls and the lock; the values, threads and the netlink codec; the machines,
        // monitors and the public API, which re-exports the values. The system calls' fault
        // engine (SystemCallFaults) is compiled into debug builds, which the tests are, and
        // never into a release build: a test-only target could not reach into each call
        // without a hook every release call would pay for.
        .target(
            name: "ReachabilitySystem", dependencies: ["CNetlink"],
            swiftSettings: [.define("ENABLE_FAULT_INJECTION", .when(configuration: .debug))]),
        .target(
            name: "ReachabilityBase",
            dependencies: ["ReachabilitySystem", "CNetlink", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "ReachabilityCore",
            dependencies: [
                "ReachabilityBase", "ReachabilitySystem", "CNetlink", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // ReachabilityCore re-exported, plus NotificationCenter posts and Compat/.
        .target(name: "Reachability", dependencies: ["ReachabilityCore"]),
        .target(
            name: "Connectivity",
            dependencies: [
                "Reachability",
                "ReachabilityBase",
                "ReachabilitySystem",
                "CNetlink",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: connectivity)),
            ]
        ),
        .target(
            name: "ConnectivityURLSession",
            dependencies: ["Connectivity", "Reachability"]
        ),
        .target(
            name: "ReachabilityCompat",
            dependencies: ["Reachability"]
        ),
        .target(
            name: "ReachabilityMetrics",
            dependencies: [
                "Reachability",
                .target(name: "Connectivity", condition: .when(traits: connectivity)),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: metrics)),
            ]
        ),
        .target(
            name: "ReachabilityServiceLifecycle",
            dependencies: [
                "Reachability", "Connectivity",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: serviceLifecycle)),
            ]
        ),
        // Their Connectivity parts come with its trait (`#if Connectivity || Everything`).
        .target(
            name: "ReachabilityTestKit",
            dependencies: ["Reachability", .target(name: "Connectivity", condition: .when(traits: connectivity))]
        ),
        .target(
            name: "ReachabilityObservable",
            dependencies: ["Reachability", .target(name: "Connectivity", condition: .when(traits: connectivity))]
        ),
        .executableTarget(
            name: "ReachabilityExample",
            dependencies: ["Reachability", "Connectivity"]
        ),
        // What both executables share: status, watch, wait and interfaces, output,
        // process rules, the small command's parser. ReachabilityCore only.
        // The argument vector as the kernel gave it (CommandLine.arguments needs /proc).
        .target(name: "CProcessArguments"),
        .target(
            name: "ReachabilityCommands",
            dependencies: ["ReachabilityCore", "ReachabilityBase", "ReachabilitySystem", "CProcessArguments"]),
        // Not a dependency of the full command's target: SwiftPM would link that one's
        // libraries (SwiftNIO, Connectivity…) into this executable. Build both products.
        .executableTarget(name: "ReachabilityCLI", dependencies: ["ReachabilityCommands"]),
        .executableTarget(
            name: "ReachabilityFullCLI",
            dependencies: [
                "ReachabilityCommands",
                "Reachability",
                "Connectivity",
                "ReachabilityMetrics",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: cli)),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: cli)),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: cli)),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: cli)),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: cli)),
            ]
        ),
        // What the test targets share: the named parameterized-test input and the
        // bad-input file fixtures.
        .target(
            name: "TestSupport", dependencies: ["ReachabilityCore", "ReachabilitySystem"], path: "Tests/TestSupport"),
        // The kernel headers' values of the package's hand-typed constants, for
        // KernelConstantTests (C: the headers clash with glibc's in one module).
        .target(name: "KernelHeaders", path: "Tests/KernelHeaders"),
        .testTarget(
            name: "ReachabilityTests",
            dependencies: [
                "Reachability", "ReachabilityCore", "ReachabilityBase", "ReachabilitySystem", "ReachabilityCommands",
                "TestSupport", "KernelHeaders", "CNetlink",
            ],
            exclude: ["Support/capture_fixtures.py"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ConnectivityTests",
            dependencies: [
                "Connectivity", "Reachability", "ReachabilityCore", "ReachabilityBase", "ReachabilitySystem",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "ReachabilityTestKitTests",
            dependencies: [
                "ReachabilityTestKit", "ReachabilityObservable", "Reachability", "ReachabilitySystem", "Connectivity",
            ]
        ),
        .testTarget(
            name: "ReachabilityIntegrationTests",
            // The CLI tests run the built `reachability` binary inside test namespaces;
            // the Connectivity tests probe real SwiftNIO HTTP servers there.
            dependencies: [
                "Reachability", "ReachabilityCore", "ReachabilityBase", "ReachabilitySystem", "Connectivity",
                "ConnectivityURLSession", "ReachabilityCompat",
                "ReachabilityCLI", "ReachabilityFullCLI", "ReachabilityCommands", "ReachabilityMetrics",
                "ReachabilityServiceLifecycle",
                // Conditional like the library's, so that `--disable-default-traits`
                // resolves none of them (the tests need every trait).
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: cli)),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: serviceLifecycle)),
                .product(name: "Logging", package: "swift-log"),
                "CNetlink", "TestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: connectivity)),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: connectivity)),
            ],
            // The scriptable DNS server the hostname tests run (see Support/DNSServer.swift).
            exclude: ["Support/dns_server.py"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// One program per library this package imitates, written against that library's
// documented API with only the `import` changed (docs/MIGRATING.md); built with the
// package, so that a change that breaks one fails the build.
package.targets += [
    ("AshleyMills", ["Reachability"]),
    ("AppleSample", ["Reachability"]),
    ("Alamofire", ["ReachabilityCompat"]),
    ("DTReachability", ["ReachabilityCompat"]),
    ("NWPathMonitor", ["ReachabilityCompat"]),
    ("RwbutlerConnectivity", ["Connectivity"]),
].map { name, dependencies in
    .executableTarget(
        name: "\(name)Example", dependencies: dependencies.map { .target(name: $0) }, path: "Examples/\(name)")
}
// ashleymills code whose closures capture a non-Sendable `self`, in the Swift 5 mode
// such code is written in: it builds unchanged there.
package.targets.append(
    .executableTarget(
        name: "AshleyMillsSwift5Example", dependencies: ["Reachability"], path: "Examples/AshleyMillsSwift5",
        swiftSettings: [.swiftLanguageMode(.v5)]))

// README's and docs/MIGRATING.md's programs, each the file its ```swift block shows byte
// for byte; Scripts/check-doc-examples.py checks that they are and runs them.
package.targets += [
    ("ReadmeClosures", ["Reachability"]),
    ("ReadmeUpdates", ["Reachability"]),
    ("ReadmeConnectivity", ["Connectivity"]),
    ("MigratingAshleyMills", ["Reachability"]),
    ("MigratingAppleSample", ["Reachability"]),
    ("MigratingAlamofire", ["ReachabilityCompat"]),
    ("MigratingDTReachability", ["ReachabilityCompat"]),
    ("MigratingNWPathMonitor", ["ReachabilityCompat"]),
    ("MigratingRwbutlerConnectivity", ["Connectivity"]),
].map { name, dependencies in
    .executableTarget(
        name: "\(name)Example", dependencies: dependencies.map { .target(name: $0) }, path: "Examples/Docs/\(name)")
}

// A library of the user's (an app type) and its tests on ReachabilityTestKit.
package.targets += [
    .target(name: "TestKitExample", dependencies: ["Reachability"], path: "Examples/TestKit/Sources"),
    .testTarget(
        name: "TestKitExampleTests", dependencies: ["TestKitExample", "ReachabilityTestKit", "Reachability"],
        path: "Examples/TestKit/Tests"),
]

// Storm and churn runs measured in a process of their own (the hardening tests start it).
// The benchmarks (Benchmarks/Package.swift) and the fuzzer (Fuzz/Package.swift) are
// packages of their own.
package.targets += [
    .executableTarget(
        name: "ReachabilityStress",
        dependencies: ["Reachability", "ReachabilityCore", "Connectivity"],
        path: "Tests/ReachabilityStress"
    )
]

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // Zero warnings in the package's own code, tests included. SwiftPM applies this to
    // this package's targets only: not to its dependencies, nor to a dependent's build of it.
    settings.append(.treatAllWarnings(as: .error))
    target.swiftSettings = settings
}
