import CProcessArguments
import Dispatch
import Glibc
import ReachabilityCore

/// Runs a parsed ``Invocation`` as a process: ``CLIProcess/start()`` first, then the
/// command, then its exit status through ``CLIProcess/finish(_:)``. The small
/// `reachability`'s whole `main`, after its parse.
package enum CommandLineTool {
    /// Runs `invocation` and ends the process.
    package static func run(_ invocation: Invocation) -> Never {
        CLIProcess.start()
        CLIProcess.requireProc()
        do {
            switch invocation {
            case .status(let options): try runToCompletion { try await options.run() }
            case .watch(let options): try options.run()
            case .wait(let options): try runToCompletion { try await options.run() }
            case .interfaces(let options): try options.run()
            }
            CLIProcess.finish(0)
        } catch {
            finish(with: error)
        }
    }

    /// Ends the process as `error` says: its exit status, or a message and 2 for
    /// bad input (the documented statuses).
    package static func finish(with error: any Error) -> Never {
        switch error {
        case let status as ExitStatus:
            CLIProcess.finish(status.code)
        default:
            CLIProcess.writeError("reachability: \(error)\n")
            CLIProcess.finish(2)
        }
    }

    /// Runs `body` as a task on the cooperative pool while this thread waits
    /// (`main` is synchronous: `watch` never starts Swift concurrency, whose
    /// libdispatch monitor would wake the process once a second).
    package static func runToCompletion(_ body: @escaping @Sendable () async throws -> Void) throws {
        CLIProcess.ensureThreads()
        nonisolated(unsafe) var failure: (any Error)?
        let done = DispatchSemaphore(value: 0)
        Task {
            do { try await body() } catch { failure = error }
            done.signal()
        }
        done.wait()
        if let failure { throw failure }
    }
}

/// The full command, `reachability-full`: swift-argument-parser's tree of every
/// subcommand, with Connectivity, SwiftNIO, TLS and Prometheus. The small
/// `reachability` runs it in its own place (execv, same process, same arguments)
/// for any command line it doesn't run itself (``Invocation/parse(_:)``), as git runs
/// `git-*` helpers: from the folder of the running executable (the build folder), or
/// from `../libexec/reachability/` beside it (`make install`).
package enum Companion {
    /// The full command's file name.
    package static let executableName = "reachability-full"

    /// Where it is looked for, in order, for the executable at `executable`.
    package static func candidates(beside executable: String) -> [String] {
        let folder = executable.lastIndex(of: "/").map { String(executable[..<$0]) } ?? "."
        let base = folder.isEmpty ? "" : folder
        return [base + "/" + executableName, base + "/../libexec/reachability/" + executableName]
    }

    /// The running executable's path (/proc/self/exe), nil when unreadable.
    static func ownExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Replaces this process with the full command, its argument vector unchanged
    /// (the program's name too, and bytes that are not UTF-8: ``ProcessArguments``).
    /// Exits 2 with a message naming the places looked at when it can't.
    package static func exec() -> Never {
        let arguments = ProcessArguments.strings
        let own = ownExecutable() ?? arguments.first ?? "reachability"
        var tried: [String] = []
        for path in candidates(beside: own) {
            guard access(path, X_OK) == 0 else {
                tried.append("\(path) (\(String(cString: strerror(errno))))")
                continue
            }
            ProcessArguments.withVector { execv(path, $0) }
            tried.append("\(path) (\(String(cString: strerror(errno))))")
        }
        // What to run first, then what was looked at: from a clone, `swift run
        // reachability --help` lands here until the full command is built.
        let message =
            "reachability: this needs the full command: run `swift build --product \(executableName)` (or `make`),"
            + " then this again; `make install` installs both. Not found: " + tried.joined(separator: "; ") + "\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        _exit(2)
    }
}

/// The command line as execve(2) gave it. Swift's `CommandLine.arguments` reads
/// /proc/self/cmdline on Linux, so in a chroot or mount namespace without /proc it
/// is empty, and every command line would run as `status`; this reads the vector
/// glibc hands to initialization functions (``cpa_argv()``).
package enum ProcessArguments {
    /// The arguments, the program's name first, each decoded as UTF-8 (invalid bytes
    /// repaired, for parsing and messages). Empty only for an empty vector.
    package static var strings: [String] {
        let count = Int(cpa_argc())
        guard let vector = cpa_argv() else { return CommandLine.arguments }
        return (0..<count).map { vector[$0].map { String(cString: $0) } ?? "" }
    }

    /// Calls `body` with the vector as given (NULL-terminated), for execv.
    static func withVector(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Void) {
        if let vector = cpa_argv() { return body(vector) }
        var argv: [UnsafeMutablePointer<CChar>?] = CommandLine.arguments.map { strdup($0) } + [nil]
        body(&argv)
        for pointer in argv { free(pointer) }
    }

    /// The arguments after the program's name; exits 2 with a message when there
    /// is not even that: none to read (another C library, and no /proc), or an empty
    /// vector, which Linux 5.18 and later turn into one empty string.
    package static func afterName() -> [String] {
        let all = strings
        guard !all.isEmpty else {
            CLIProcess.writeError(
                "reachability: cannot read the command line (the argument vector is empty, or /proc is not mounted)\n")
            CLIProcess.finish(2)
        }
        return Array(all.dropFirst())
    }
}
