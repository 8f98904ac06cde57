// swift-tools-version: 6.1
// The benchmarks, a package of their own (as swift-nio and swift-certificates keep
// theirs): the root package has no benchmark dependency. Run from this folder:
//   swift package --disable-sandbox benchmark --target ReachabilityBenchmarks
//   swift build -c release --product ReachabilityScale && python3 scale.py
import PackageDescription

let package = Package(
    name: "ReachabilityBenchmarks",
    dependencies: [
        // The package under measurement (named: a path dependency is otherwise known
        // by its folder's name, which is whatever the clone was called).
        .package(name: "Reachability", path: "../"),
        // In-process benchmarks; malloc counting through its interposer (no jemalloc needed).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        // In-process benchmarks (ordo-one/benchmark): parser, evaluation, route messages.
        .executableTarget(
            name: "ReachabilityBenchmarks",
            dependencies: [
                .product(name: "Reachability", package: "Reachability"),
                .product(name: "ReachabilityCore", package: "Reachability"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "ReachabilityBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The scale and latency probe that scale.py drives (10,000 targets, kernel
        // event → callback).
        .executableTarget(
            name: "ReachabilityScale",
            dependencies: [
                .product(name: "Reachability", package: "Reachability"),
                .product(name: "ReachabilityCore", package: "Reachability"),
            ],
            path: "ReachabilityScale"
        ),
        // A Reachability-only program: its peak RSS (BENCHMARKS.md). It links only
        // ReachabilityCore, the API without Foundation (no NotificationCenter).
        .executableTarget(
            name: "ReachabilityMinimal",
            dependencies: [.product(name: "ReachabilityCore", package: "Reachability")],
            path: "ReachabilityMinimal"
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
