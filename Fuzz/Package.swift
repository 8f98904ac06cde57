// swift-tools-version: 6.0
// The libFuzzer target, a package of its own: the root package has no unsafeFlags.
// Build and run from this folder (lld links it; gold fails on this link):
//   swift build --product NetlinkFuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
//   mkdir -p /tmp/fuzz && .build/debug/NetlinkFuzz -max_total_time=600 /tmp/fuzz corpus
// A plain `swift build` makes a replayer: `.build/debug/NetlinkFuzz corpus` runs each input once.
import PackageDescription

let package = Package(
    name: "NetlinkFuzz",
    dependencies: [
        // Named: a path dependency is otherwise known by its folder's name.
        .package(name: "Reachability", path: "../")
    ],
    targets: [
        // Declares libFuzzer's entry points weakly, so that the replayer links without it.
        .target(name: "CFuzzDriver", path: "CFuzzDriver"),
        .executableTarget(
            name: "NetlinkFuzz",
            dependencies: [.product(name: "ReachabilityCore", package: "Reachability"), "CFuzzDriver"],
            path: "NetlinkFuzz",
            // Its entry point is `NetlinkFuzz_main`, which libFuzzer's main calls.
            swiftSettings: [
                .unsafeFlags(["-parse-as-library"]),
                .enableUpcomingFeature("InternalImportsByDefault"),
                .enableUpcomingFeature("ExistentialAny"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
