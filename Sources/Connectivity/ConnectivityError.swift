import Glibc
import Reachability

/// The one error type of the `Connectivity` module: a configuration that can't
/// work, or the system refusing what a check needs (descriptors, the netlink
/// monitor, the network namespace).
///
/// ```swift
/// do {
///     let result = try await connectivity.checkConnectivity()
///     print(result.verdict)
/// } catch where error.code == .systemCall {
///     print(error)   // cannot check connectivity: …: Too many open files (errno 24)
/// }
/// ```
///
/// `Sendable`: a plain value.
public struct ConnectivityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added; switch with a default.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidConfiguration, systemCall, namespace
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A setting that can't work (no endpoints, a bad URL, header, pattern,
        /// threshold or trust-roots file); the message names it.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A system call failed, or the kernel refused what a check needs: no
        /// descriptor left for the HTTP client or the netlink monitor (`EMFILE`),
        /// sockets that can't be opened. ``ConnectivityError/errno`` says why, when known.
        public static let systemCall = Code(.systemCall)
        /// The configured network namespace can't be used (gone, or not one).
        public static let namespace = Code(.namespace)

        /// The code's name, e.g. `"systemCall"`.
        public var description: String { value.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong: the setting, or what could not be done.
    public var message: String
    /// The `errno` behind a ``Code/systemCall`` or ``Code/namespace`` failure, when known.
    public let errno: Int32?

    /// A configuration error (``Code/invalidConfiguration``).
    init(_ message: String) {
        self.init(.invalidConfiguration, message)
    }

    init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// A failure of the `Reachability` layer (the path monitor) while doing `what`.
    /// Out of descriptors is ``Code/systemCall`` even when it struck while
    /// entering the namespace.
    init(_ error: ReachabilityError, while what: String) {
        let code: Code
        switch error.code {
        case _ where error.errno == EMFILE || error.errno == ENFILE: code = .systemCall
        case .namespace: code = .namespace
        case .invalidAddress, .invalidHostname, .invalidArgument: code = .invalidConfiguration
        default: code = .systemCall
        }
        self.init(code, "\(what): \(error.message)", errno: error.errno)
    }

    /// `invalid connectivity configuration: MESSAGE` for a configuration error,
    /// else `cannot check connectivity: MESSAGE`, with the errno's text and number
    /// when there is one (`…: Too many open files (errno 24)`).
    public var description: String {
        guard code != .invalidConfiguration else { return "invalid connectivity configuration: \(message)" }
        guard let errno else { return "cannot check connectivity: \(message)" }
        let text = Glibc.strerror(errno).map { String(cString: $0) } ?? "error \(errno)"
        return "cannot check connectivity: \(message): \(text) (errno \(errno))"
    }
}
