// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Reachability",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .executable(name: "reachability", targets: ["ReachabilityCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0")
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
        .executableTarget(
            name: "ReachabilityExample",
            dependencies: ["Reachability"]
        ),
        .executableTarget(
            name: "ReachabilityCLI",
            dependencies: [
                "Reachability",
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
            name: "ReachabilityIntegrationTests",
            // The CLI tests run the built `reachability` binary inside test namespaces.
            dependencies: ["Reachability", "ReachabilityCLI"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
