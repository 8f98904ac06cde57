// What every fuzzer's entry point shares: libFuzzer's driver when the program was
// linked with it, a replayer of the files it is given when it was not.
public import CFuzzDriver
import Foundation

/// A fuzzer's `main`: libFuzzer or the replayer.
public enum FuzzDriver {
    /// The bytes libFuzzer hands over, nil for an empty input.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8]? {
        guard let data, size > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Hands over to libFuzzer's driver, which calls `testOneInput` with each input,
    /// when the program was linked with it (-sanitize=fuzzer); otherwise runs `run`
    /// once on every file named (on every file in a directory named) and returns 0,
    /// or 2 when a path does not exist.
    public static func main(
        name: String, argc: CInt, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        testOneInput: cfuzz_test_one_input, run: ([UInt8]) -> Void
    ) -> CInt {
        var count = argc
        var arguments = argv
        let status = cfuzz_run_driver(&count, &arguments, testOneInput)
        if status != -1 { return status }
        return replay(name: name, CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") }, run: run)
    }

    private static func replay(name: String, _ paths: [String], run: ([UInt8]) -> Void) -> CInt {
        var count = 0
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("\(name): no such file: \(path)\n".utf8))
                return 2
            }
            let files =
                isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
                : [path]
            for file in files {
                guard let bytes = FileManager.default.contents(atPath: file) else { continue }
                run([UInt8](bytes))
                count += 1
            }
        }
        print("\(name): replayed \(count) inputs (built without libFuzzer)")
        return 0
    }
}
