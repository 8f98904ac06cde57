import Foundation
import Testing

/// The tests' process runner: what a child is given.
@Suite("The tests' process runner", .ownThreads)
struct CommandTests {
    /// Foundation's atomic write makes its temporary file with mkstemp, without
    /// close-on-exec; a child spawned meanwhile kept the file open for writing, and
    /// running that file (a dhclient script) failed with ETXTBSY.
    @Test("A child gets stdin, stdout and stderr only: a descriptor open without close-on-exec stays out")
    func childGetsOnlyTheStandardDescriptors() throws {
        let file = open("/dev/null", O_RDONLY)
        try #require(file >= 0)
        defer { close(file) }
        // F_DUPFD takes the lowest free number from 900 up: never one another test
        // holds (dup2 onto a fixed number would close that test's descriptor — a
        // namespace holder's stdin, say — under it).
        let high = fcntl(file, F_DUPFD, 900)
        try #require(high >= 900)
        defer { close(high) }
        #expect(fcntl(high, F_GETFD) & FD_CLOEXEC == 0, "open in this process, inheritable")
        let probe = "for fd in 0 1 2 \(high); do if [ -e /proc/$$/fd/$fd ]; then echo $fd; fi; done"
        let output = try Command.check(["sh", "-c", probe])
        #expect(output.split(separator: "\n") == ["0", "1", "2"])
    }
}
