/// A bad argument: the message names it. The full command reports it as
/// swift-argument-parser's validation error (usage, exit 2); the small one never
/// meets one, because it hands any command line that doesn't validate to the full
/// command (``Companion``).
package struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the argument.
    package var message: String

    /// A usage error saying `message`.
    package init(_ message: String) { self.message = message }

    /// The message.
    package var description: String { message }
}

/// Ends the command with an exit status (0 reachable or done, 1 not reachable or
/// timed out, 2 usage or input error), after whatever it printed.
package struct ExitStatus: Error, Sendable, Equatable {
    /// The process's exit status.
    package var code: Int32

    /// Exit with `code`.
    package init(_ code: Int32) { self.code = code }
}
