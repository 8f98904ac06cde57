// libFuzzer target: arbitrary bytes → the netlink parser → an interface table →
// reachability flags and a NetworkPath (Pipeline.run). Package.swift says how to build
// and run it; a plain `swift build` makes a replayer: `NetlinkFuzz FILE|DIR…` runs each
// input once. SwiftPM links an executable's entry point as `<module>_main` when the
// module is built with -parse-as-library; with libFuzzer linked in, its `main` calls that.
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let bytes = FuzzDriver.bytes(data, size) { _ = Pipeline.run(bytes) }
    return 0
}

@_cdecl("NetlinkFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    FuzzDriver.main(name: "NetlinkFuzz", argc: argc, argv: argv, testOneInput: { testOneInput($0, $1) }) {
        _ = Pipeline.run($0)
    }
}
