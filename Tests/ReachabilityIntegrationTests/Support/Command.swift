import Foundation
import Reachability

@_spi(Testing) @testable import ReachabilityCore

/// Runs programs for the tests with posix_spawn and waitpid. Foundation's
/// `Process` was seen to hang in `waitUntilExit` on an exited child and to leak
/// pipe ends into children spawned at the same time; here every pipe end the
/// parent keeps is close-on-exec, and the child is reaped with a plain waitpid.
enum Command {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `argv` to completion, feeding it `input`, and collects its output.
    static func run(_ argv: [String], input: String? = nil) throws -> Output {
        let child = try Child(argv, captureOutput: true)
        if let input { child.write(input) }
        child.closeInput()
        let (out, err) = child.readAll()
        let status = child.wait()
        return Output(status: status, stdout: out, stderr: err)
    }

    /// Runs `argv` and throws with its stderr unless it exits 0.
    @discardableResult
    static func check(_ argv: [String], input: String? = nil) throws -> String {
        let output = try run(argv, input: input)
        guard output.status == 0 else {
            throw CommandFailed(command: argv.joined(separator: " "), status: output.status, stderr: output.stderr)
        }
        return output.stdout
    }
}

/// A child process with pipes to its stdin and (optionally) stdout/stderr.
///
/// Pipes are made with pipe(2) then marked close-on-exec, under one lock that
/// every spawn takes: no child can be spawned between the two steps and inherit
/// another child's pipe end (glibc's pipe2 is not visible to Swift here).
final class Child: @unchecked Sendable {
    /// Counts spawns; its lock serializes them.
    private static let spawnLock = LockedValue(0)

    // @unchecked: the descriptors are used by one test at a time; wait() is idempotent under the lock.
    let pid: pid_t
    private var input: Int32
    private let output: Int32
    private let errors: Int32
    private let reaped = LockedValue<Int32?>(nil)
    private var pending: [UInt8] = []

    /// Starts `argv` (looked up in PATH). With `captureOutput` false, its stdout and
    /// stderr go to /dev/null.
    init(_ argv: [String], captureOutput: Bool) throws {
        let spawned = try Self.spawnLock.withLock { count in
            count += 1
            return try Self.spawn(argv, captureOutput: captureOutput)
        }
        pid = spawned.pid
        input = spawned.input
        output = spawned.output
        errors = spawned.errors
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    ).map { unsafeBitCast($0, to: AddCloseFrom.self) }

    private static func spawn(_ argv: [String], captureOutput: Bool) throws
        -> (pid: pid_t, input: Int32, output: Int32, errors: Int32)
    {
        func pipePair() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else {
                throw CommandFailed(command: "pipe", status: errno, stderr: String(cString: strerror(errno)))
            }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            return (fds[0], fds[1])
        }
        let stdinPipe = try pipePair()
        let none: (read: Int32, write: Int32) = (-1, -1)
        let stdoutPipe = try captureOutput ? pipePair() : none
        let stderrPipe = try captureOutput ? pipePair() : none
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe.read, 0)
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, stdoutPipe.write, 1)
            posix_spawn_file_actions_adddup2(&actions, stderrPipe.write, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Nothing else reaches the child. A descriptor opened without close-on-exec
        // by another thread (Foundation's atomic write makes its temporary file with
        // mkstemp) would otherwise live as long as the child: a long-lived child
        // (a namespace holder, dnsmasq) holding a script open for writing makes every
        // later execve of that script fail with ETXTBSY — dhclient then ran no
        // script, took its lease and exited 0, and the test waited for a route that
        // never came.
        // (glibc 2.34's posix_spawn_file_actions_addclosefrom_np; Swift's Glibc module
        // doesn't show it, so it is looked up.)
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw CommandFailed(
                command: argv.joined(separator: " "), status: -1, stderr: "posix_spawn_file_actions_addclosefrom_np")
        }
        // Children of dispatch worker threads would inherit a mask that blocks every
        // signal (SIGTERM, SIGHUP would never arrive): start them with an empty mask
        // and default dispositions.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGHUP, SIGINT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for arg in cArgs { free(arg) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, &attributes, &cArgs, environ)
        // The child has its ends (dup2 clears close-on-exec on 0, 1, 2); close ours.
        close(stdinPipe.read)
        if captureOutput {
            close(stdoutPipe.write)
            close(stderrPipe.write)
        }
        guard rc == 0 else {
            close(stdinPipe.write)
            if captureOutput {
                close(stdoutPipe.read)
                close(stderrPipe.read)
            }
            throw CommandFailed(command: argv.joined(separator: " "), status: rc, stderr: "posix_spawn failed")
        }
        return (pid, stdinPipe.write, stdoutPipe.read, stderrPipe.read)
    }

    deinit {
        if reaped.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
        closeInput()
        if output >= 0 { close(output) }
        if errors >= 0 { close(errors) }
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(input, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// Closes the child's stdin: a child that reads it to EOF exits.
    func closeInput() {
        if input >= 0 {
            close(input)
            input = -1
        }
    }

    /// Reads one chunk of stdout (blocking), e.g. a "ready" line.
    func readLine() -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    /// The next line of stdout (without the newline), or nil if none arrives
    /// within `timeout` seconds or stdout closes.
    func nextLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var entry = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(left * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            pending += buffer[0..<n]
        }
    }

    /// Reads stdout and stderr to EOF, both at once so neither pipe can fill up.
    func readAll() -> (String, String) {
        var out: [UInt8] = []
        var err: [UInt8] = []
        var fds = [
            pollfd(fd: output, events: Int16(POLLIN), revents: 0),
            pollfd(fd: errors, events: Int16(POLLIN), revents: 0),
        ]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open > 0 {
            guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { break }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if i == 0 { out += buffer[0..<n] } else { err += buffer[0..<n] }
                } else if n == 0 || errno != EINTR {
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        return (String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Sends a signal.
    func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits for the child to exit but leaves it a zombie (`waitid` with `WNOWAIT`): its
    /// pid stays taken, so `/proc/PID/…` can't name another process's files until
    /// ``wait()`` reaps it (pid_max is 32,768 here, and a busy test run goes round it).
    func waitForExitUnreaped() {
        guard reaped.withLock({ $0 }) == nil else { return }
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
    }

    /// Waits for the child to exit and returns its exit status (128 + signal if killed).
    @discardableResult
    func wait() -> Int32 {
        reaped.withLock { reaped in
            if let status = reaped { return status }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            reaped = code
            return code
        }
    }

    /// Waits up to `timeout` seconds for the child to exit: its exit status as
    /// ``wait()`` gives it, or nil while it still runs then (it is left running).
    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let done = reaped.withLock { reaped -> Int32? in
                if let status = reaped { return status }
                var status: Int32 = 0
                guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
                let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                reaped = code
                return code
            }
            if let done { return done }
            guard Date() < deadline else { return nil }
            usleep(10_000)
        }
    }

    /// Whether the child is still running.
    var isRunning: Bool {
        guard reaped.withLock({ $0 }) == nil else { return false }
        return kill(pid, 0) == 0
    }

    /// Stops the child: SIGTERM, then waits.
    func terminate() {
        guard reaped.withLock({ $0 }) == nil else { return }
        kill(pid, SIGTERM)
        wait()
    }
}

/// Runs blocking work (process spawns, waits) on a thread of its own. It predates
/// ``Trait/ownThreads``, which every integration suite has and which already runs
/// each test off the cooperative pool: new tests need not wrap their blocking calls.
@discardableResult
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// How a process ended. `Child.wait()` folds a death by signal N into 128 + N,
/// which can't be told from `exit(128 + N)`; these tests need the difference.
enum Termination: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    var description: String {
        switch self {
        case .exited(let status): "exited \(status)"
        case .signaled(let signal): "killed by signal \(signal)\(signal == SIGKILL ? " (the watchdog)" : "")"
        }
    }
}

extension Child {
    /// Waits for the child to end and says how; a child still running after
    /// `limit` seconds is killed (SIGKILL), so a hang is a failed test, not a stuck
    /// suite. Reaps it (call instead of `wait()`, not after it).
    func termination(limit: Double = 60) -> Termination {
        let watchdog = DispatchWorkItem { [self] in if isRunning { signal(SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        defer { watchdog.cancel() }
        var info = siginfo_t()
        // WNOWAIT: look without reaping; wait() reaps below.
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        let status = info._sifields._sigchld.si_status
        let result: Termination = info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signaled(status)
        wait()
        return result
    }

    /// Whether one of the child's threads has this name (`/proc/PID/task/*/comm`).
    func hasThread(named name: String) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }
}
