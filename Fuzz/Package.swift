// swift-tools-version: 6.1
// The libFuzzer targets, a package of its own: the root package has no unsafeFlags.
//   NetlinkFuzz    netlink datagrams → parser → interface table → flags, NetworkPath  (corpus/)
//   HostnameFuzz   `Reachability(hostname:)`'s validation and address parsing         (corpus-hostname/)
//   FilesFuzz      dhclient and networkd lease files, resolv.conf                     (corpus-files/)
// Build all three and run one from this folder (lld links them; gold fails on this link):
//   swift build -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
//   mkdir -p /tmp/fuzz && .build/debug/NetlinkFuzz -max_total_time=600 /tmp/fuzz corpus
// New inputs go to the first directory named: keep the committed corpus second.
// A plain `swift build` makes replayers: `.build/debug/NetlinkFuzz corpus` runs each input once.
// FilesFuzz reaches internals with @testable imports, which a debug build (this one) allows.
import PackageDescription

/// A fuzzer: `path` holds its `main.swift`, whose entry point is `<name>_main`, which
/// libFuzzer's main calls.
func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: dependencies + ["FuzzSupport"],
        path: name,
        swiftSettings: [
            .unsafeFlags(["-parse-as-library"]),
            .enableUpcomingFeature("InternalImportsByDefault"),
            .enableUpcomingFeature("ExistentialAny"),
        ]
    )
}

let core: Target.Dependency = .product(name: "ReachabilityCore", package: "Reachability")

let package = Package(
    name: "NetlinkFuzz",
    dependencies: [
        // Named: a path dependency is otherwise known by its folder's name. No trait: the
        // core needs none, and the package resolves swift-log alone (not SwiftNIO and the rest).
        .package(name: "Reachability", path: "../", traits: [])
    ],
    targets: [
        // Declares libFuzzer's entry points weakly, so that the replayer links without it.
        .target(name: "CFuzzDriver", path: "CFuzzDriver"),
        // Each fuzzer's `main`: libFuzzer's driver, or the replayer.
        .target(
            name: "FuzzSupport",
            dependencies: ["CFuzzDriver"],
            path: "FuzzSupport",
            swiftSettings: [
                .enableUpcomingFeature("InternalImportsByDefault"),
                .enableUpcomingFeature("ExistentialAny"),
            ]
        ),
        fuzzer("NetlinkFuzz", [core]),
        fuzzer("HostnameFuzz", [core]),
        fuzzer("FilesFuzz", [core]),
    ],
    swiftLanguageModes: [.v6]
)
