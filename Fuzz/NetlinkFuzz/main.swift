// libFuzzer target: arbitrary bytes → the netlink parser → an interface table →
// reachability flags and a NetworkPath (Pipeline.run). Build and run:
//   swift build --product NetlinkFuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
//       -Xswiftc -use-ld=lld --scratch-path .build-fuzz
//   .build-fuzz/debug/NetlinkFuzz -max_total_time=60 Fuzz/corpus
// A plain `swift build` makes a replayer instead: `NetlinkFuzz FILE|DIR…` runs each input once.
// SwiftPM links an executable's entry point as `<module>_main` when the module is built
// with -parse-as-library; with libFuzzer linked in, its `main` calls that.
import CFuzzDriver
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    _ = Pipeline.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// Without libFuzzer: every file named (directories: every file in them) run once.
func replay(_ paths: [String]) -> CInt {
    var count = 0
    for path in paths {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            FileHandle.standardError.write(Data("NetlinkFuzz: no such file: \(path)\n".utf8))
            return 2
        }
        let files =
            isDirectory.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
            : [path]
        for file in files {
            guard let bytes = FileManager.default.contents(atPath: file) else { continue }
            _ = Pipeline.run([UInt8](bytes))
            count += 1
        }
    }
    print("NetlinkFuzz: replayed \(count) inputs (built without libFuzzer)")
    return 0
}

@_cdecl("NetlinkFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    let status = cfuzz_run_driver(&count, &arguments) { data, size in testOneInput(data, size) }
    if status != -1 { return status }
    return replay(CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") })
}
