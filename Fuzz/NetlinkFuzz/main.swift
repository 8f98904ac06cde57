// libFuzzer target: arbitrary bytes → the netlink parser (and on into evaluation).
//   swift build --product NetlinkFuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
//       --scratch-path .build-fuzz
//   .build-fuzz/debug/NetlinkFuzz Fuzz/corpus -max_total_time=60
// SwiftPM links an executable's entry point as `<module>_main`; it hands over to libFuzzer's driver.
import Reachability

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// One input: parsed, and every parsed message applied to an interface table and
/// evaluated (through the benchmark hooks).
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    _ = BenchmarkHooks.parseMessages(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_cdecl("NetlinkFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in testOneInput(data, size) }
}
