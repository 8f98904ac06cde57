import Foundation
import Glibc

/// Files that bad-input cases point at, made in one fixed temporary directory
/// (reused by later runs, so nothing piles up): a FIFO and a regular file of
/// garbage, both named `.pem` so that only what they are is wrong. Make one per
/// suite, once (a `static let`).
public struct ScratchFiles: Sendable {
    /// The directory, `NSTemporaryDirectory() + name`.
    public let directory: String
    /// A FIFO with no writer: opening it for reading without O_NONBLOCK blocks forever.
    public let fifo: String
    /// A regular file that is not PEM: 4 kB of bytes that are no text at all.
    public let garbage: String

    /// Makes the directory `name` and both files in it.
    public init(directoryName name: String) {
        directory = NSTemporaryDirectory() + name
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        fifo = directory + "/fifo.pem"
        garbage = directory + "/garbage.pem"
        _ = mkfifo(fifo, 0o600)
        _ = write("garbage.pem", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
    }

    /// Writes `bytes` to the file `name` in the directory; returns its path.
    public func write(_ name: String, _ bytes: some Sequence<UInt8>) -> String {
        let path = directory + "/" + name
        try? Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
