import Glibc
@_spi(Testing) import ReachabilitySystem

/// The one error type of the `Reachability` module.
///
/// Bad input (a malformed address, a namespace path that is not a network
/// namespace) and system failures (a netlink socket that cannot be opened) are
/// reported with a ``code`` and a readable ``description`` that names the bad
/// value or the failing call.
///
/// `Sendable`: a plain value.
public struct ReachabilityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added; switch with a default.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidAddress, invalidHostname, invalidArgument, systemCall, netlinkProtocol, namespace, timedOut
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A string that is not a valid IPv4 or IPv6 address literal, or an
        /// address that does not fit where it was given.
        public static let invalidAddress = Code(.invalidAddress)
        /// A string that is not a valid hostname (empty, too long, a label over
        /// 63 bytes, spaces or control characters).
        public static let invalidHostname = Code(.invalidHostname)
        /// Some other argument is out of range or malformed.
        public static let invalidArgument = Code(.invalidArgument)
        /// A system call failed (``ReachabilityError/errno`` says why).
        public static let systemCall = Code(.systemCall)
        /// The kernel sent something the netlink layer could not use.
        public static let netlinkProtocol = Code(.netlinkProtocol)
        /// The network namespace given could not be entered.
        public static let namespace = Code(.namespace)
        /// The kernel did not answer in time.
        public static let timedOut = Code(.timedOut)

        /// The code's name, e.g. `"systemCall"`.
        public var description: String { value.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// A readable explanation that names the bad input or the failing call.
    public let message: String
    /// The `errno` behind a ``Code/systemCall`` failure, if any.
    public let errno: Int32?
    /// What was being done when it failed, as far as the public API knows: the case of
    /// ashleymills' `ReachabilityError` it matches (`Compat/AshleyMills.swift`).
    package var operation: Operation?

    /// The step of the public API that failed.
    package enum Operation: Sendable, Hashable {
        case creatingWithAddress, creatingWithHostname, startingNotifier, settingQueue, gettingFlags
    }

    package init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// This error, noted as failing `operation` unless a narrower step already was.
    package func during(_ operation: Operation) -> ReachabilityError {
        var error = self
        error.operation = error.operation ?? operation
        return error
    }

    /// The ``message``, followed by the errno's text and number when there is one
    /// (`…: Permission denied (errno 13)`).
    public var description: String {
        guard let errno else { return message }
        return "\(message): \(ReachabilityError.strerror(errno)) (errno \(errno))"
    }

    package static func strerror(_ code: Int32) -> String {
        guard let text = Glibc.strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}

extension SystemError {
    /// This failure as the library reports it: ``ReachabilityError/Code/systemCall``,
    /// naming the call, with its errno.
    package var reachabilityError: ReachabilityError {
        ReachabilityError(.systemCall, "\(call) failed", errno: errno)
    }
}
