// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Reachability",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"])
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
        .testTarget(
            name: "ReachabilityTests",
            dependencies: ["Reachability"],
            exclude: ["Support/capture_fixtures.py"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ReachabilityIntegrationTests",
            dependencies: ["Reachability"]
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
