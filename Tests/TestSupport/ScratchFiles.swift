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

extension ScratchFiles {
    /// Makes a FIFO at `path` in place of whatever is there (nothing ever writes to
    /// it); returns `path`.
    @discardableResult
    public static func fifo(at path: String) -> String {
        _ = unlink(path)
        _ = mkfifo(path, 0o600)
        return path
    }

    /// Makes a sparse file of `size` bytes at `path`: `start`, then zeros that take no
    /// disk space (as `truncate -s` makes them); returns `path`.
    @discardableResult
    public static func sparse(at path: String, size: Int, startingWith start: [UInt8] = []) -> String {
        _ = unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = start.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            _ = ftruncate(fd, off_t(size))
            _ = close(fd)
        }
        return path
    }

    /// What `body` returns, run on a thread of its own, if it returns within
    /// `deadline`; nil otherwise. One still running then (as an open(2) of a FIFO
    /// without `O_NONBLOCK` waits for a writer) is let go, so that a failing test ends
    /// rather than hangs: each of `fifos` is opened for writing and closed again (the
    /// waiting open returns; a read then sees the end of the file), and it is waited
    /// for once more.
    public static func result<T: Sendable>(
        within deadline: Duration = .seconds(10), releasing fifos: [String] = [], of body: @escaping @Sendable () -> T
    ) -> T? {
        let outcome = Outcome<T>()
        let thread = Thread { outcome.set(body()) }
        thread.start()
        let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) / 1e18
        if outcome.done.wait(timeout: .now() + seconds) == .success { return outcome.value }
        for fifo in fifos {
            let fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { _ = close(fd) }
        }
        _ = outcome.done.wait(timeout: .now() + seconds)
        return nil
    }
}

/// The value a thread returned, handed over through a semaphore.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stored: T?

    var value: T? { lock.withLock { stored } }

    func set(_ value: T) {
        lock.withLock { stored = value }
        done.signal()
    }
}
