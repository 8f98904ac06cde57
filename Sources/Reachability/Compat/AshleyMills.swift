// The API of ashleymills/Reachability.swift (5.x) on `Reachability`: its module and
// class have this package's names, so its users change nothing but keep
// `import Reachability`. A thin layer over the core API above; docs/MIGRATING.md has
// the table and the differences on Linux.

public import Dispatch
public import Foundation
import Glibc

extension Reachability {
    /// ashleymills' answer: how the target is reached now.
    ///
    /// Computed from the flags exactly as Apple's `networkStatusForFlags:` does
    /// (`NetworkStatus`): `.wifi` means "reachable, not cellular" — wired Ethernet,
    /// Wi-Fi, a VPN and loopback included — and `.cellular` is shown as
    /// `.unavailable` while ``allowsCellularConnection`` is false. The real medium is
    /// `interfaceType`.
    ///
    /// `Sendable`: a plain enum.
    public enum Connection: Sendable, Hashable, CustomStringConvertible {
        /// The old name of ``unavailable``; never produced.
        @available(*, deprecated, renamed: "unavailable")
        case none
        /// No packet for the target can leave this host now.
        case unavailable
        /// Reachable over a link that is not cellular.
        case wifi
        /// Reachable over a cellular (WWAN) link.
        case cellular

        /// `"No Connection"`, `"WiFi"` or `"Cellular"` (and `"unavailable"` for ``none``),
        /// as ashleymills' are.
        public var description: String {
            switch self {
            case .cellular: "Cellular"
            case .wifi: "WiFi"
            case .unavailable: "No Connection"
            default: "unavailable"
            }
        }
    }

    /// The type of `whenUnreachable` under ashleymills' name: the same closure
    /// type as `NetworkReachable`.
    public typealias NetworkUnreachable = NetworkReachable

    /// Watches the Internet, ashleymills' way. `queueQoS` and `targetQueue` make the
    /// serial queue callbacks and notifications run on when `notificationQueue` is
    /// nil, as ashleymills' do (they have no other use here: the kernel's events are
    /// read by the shared monitor's own thread).
    ///
    /// `notificationQueue` defaults to nil, not `.main` as in ashleymills': a Linux
    /// program may never drain the main queue, and callbacks that never arrive are
    /// worse than callbacks on another queue. With nil and no QoS or target queue,
    /// deliveries run on `defaultNotificationQueue`. Pass `.main` if your program
    /// runs a main loop (`dispatchMain()`, `RunLoop.main.run()`).
    ///
    /// Throws what `init(environment:notificationQueue:)` throws; it matches
    /// `failedToCreateWithAddress(_:_:)` in a `catch`.
    public convenience init(
        queueQoS: DispatchQoS = .default, targetQueue: DispatchQueue? = nil, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        try self.init(
            environment: .default,
            notificationQueue: Self.deliveryQueue(notificationQueue, qos: queueQoS, target: targetQueue))
    }

    /// Watches a hostname, ashleymills' way: `init(hostname:environment:notificationQueue:)`
    /// with the queue rules of ``init(queueQoS:targetQueue:notificationQueue:)``.
    /// Throws for an invalid name; it matches `failedToCreateWithHostname(_:_:)`
    /// in a `catch`.
    public convenience init(
        hostname: String, queueQoS: DispatchQoS = .default, targetQueue: DispatchQueue? = nil,
        notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        try self.init(
            hostname: hostname, environment: .default,
            notificationQueue: Self.deliveryQueue(notificationQueue, qos: queueQoS, target: targetQueue))
    }

    /// The queue ashleymills' initializers deliver on: the one given, else a serial
    /// queue with the QoS and target given, else the library's default (nil).
    private static func deliveryQueue(
        _ queue: DispatchQueue?, qos: DispatchQoS, target: DispatchQueue?
    ) -> DispatchQueue? {
        if let queue { return queue }
        guard qos != .default || target != nil else { return nil }
        return DispatchQueue(label: "Reachability.notifications", qos: qos, target: target)
    }

    /// How the target is reached now (see ``Connection``): from the cached state
    /// while the notifier runs, else from the kernel afresh. Never waits on DNS.
    public var connection: Connection {
        switch currentReachabilityStatus {
        case .notReachable: .unavailable
        case .reachableViaWiFi: .wifi
        case .reachableViaWWAN: allowsCellularConnection ? .cellular : .unavailable
        }
    }

    /// When false, a target reached over cellular counts as unreachable: ``connection``
    /// is `.unavailable` and `whenUnreachable` is called instead of
    /// `whenReachable`. Default true. (`flags`, `currentReachabilityStatus`,
    /// observers and `updates` still report the cellular route as it is.)
    public var allowsCellularConnection: Bool {
        get { allowsCellular }
        set { allowsCellular = newValue }
    }

    /// The notification center the `.reachabilityChanged` notification is posted to.
    /// Default: `NotificationCenter.default`.
    public var notificationCenter: NotificationCenter {
        get { (postingCenter as? NotificationCenter) ?? .default }
        set { postingCenter = newValue }
    }

    /// `connection != .unavailable`.
    @available(*, deprecated, message: "Please use `connection != .unavailable`")
    public var isReachable: Bool { connection != .unavailable }

    /// `connection == .cellular`.
    @available(*, deprecated, message: "Please use `connection == .cellular`")
    public var isReachableViaWWAN: Bool { connection == .cellular }

    /// `connection == .wifi`.
    @available(*, deprecated, message: "Please use `connection == .wifi`")
    public var isReachableViaWiFi: Bool { connection == .wifi }

    /// `connection.description`.
    @available(*, deprecated, renamed: "connection.description")
    public var currentReachabilityString: String { connection.description }

    /// The old name of ``allowsCellularConnection``.
    @available(*, deprecated, renamed: "allowsCellularConnection")
    public var reachableOnWWAN: Bool {
        get { allowsCellularConnection }
        set { allowsCellularConnection = newValue }
    }
}

// MARK: - ashleymills' error cases

/// ashleymills' `ReachabilityError` is an enum; this package's is a struct with a
/// `ReachabilityError.code`. Its five case names are static functions here, so
/// that `throw ReachabilityError.unableToSetCallback(0)` compiles and
/// `catch ReachabilityError.unableToSetCallback { … }` matches: an error thrown by an
/// address or Internet initializer matches ``ReachabilityError/failedToCreateWithAddress(_:_:)``,
/// one thrown by a hostname initializer ``ReachabilityError/failedToCreateWithHostname(_:_:)``,
/// one thrown by `Reachability.start()` ``ReachabilityError/unableToSetCallback(_:)``.
/// Patterns that bind the associated values (`catch ReachabilityError.unableToGetFlags(let code)`)
/// can't match a struct: read `ReachabilityError.errno` and `ReachabilityError.message` instead.
extension ReachabilityError {
    /// An error of the address initializers (ashleymills' case); `code` becomes `errno`.
    public static func failedToCreateWithAddress(_ address: sockaddr, _ code: Int32) -> ReachabilityError {
        ReachabilityError(
            .invalidAddress, "failed to create a reachability for an address of family \(address.sa_family)",
            errno: code
        ).during(.creatingWithAddress)
    }

    /// An error of the hostname initializers (ashleymills' case); `code` becomes `errno`.
    public static func failedToCreateWithHostname(_ hostname: String, _ code: Int32) -> ReachabilityError {
        ReachabilityError(
            .invalidHostname, "failed to create a reachability for \(quotedForMessage(hostname))", errno: code
        ).during(.creatingWithHostname)
    }

    /// An error of `Reachability.start()` (ashleymills' case); `code` becomes `errno`.
    public static func unableToSetCallback(_ code: Int32) -> ReachabilityError {
        ReachabilityError(.systemCall, "unable to start the notifier", errno: code).during(.startingNotifier)
    }

    /// ashleymills' case for a dispatch queue SystemConfiguration refused; never
    /// thrown on Linux.
    public static func unableToSetDispatchQueue(_ code: Int32) -> ReachabilityError {
        ReachabilityError(.systemCall, "unable to set the dispatch queue", errno: code).during(.settingQueue)
    }

    /// ashleymills' case for flags that could not be read; never thrown on Linux
    /// (the getters answer from the kernel, or unreachable).
    public static func unableToGetFlags(_ code: Int32) -> ReachabilityError {
        ReachabilityError(.systemCall, "unable to get the flags", errno: code).during(.gettingFlags)
    }

    /// The step an error belongs to, for matching: the one noted where it was
    /// thrown, else the one its code implies.
    var matchedOperation: Operation {
        if let operation { return operation }
        switch code {
        case .invalidAddress: return .creatingWithAddress
        case .invalidHostname: return .creatingWithHostname
        default: return .startingNotifier
        }
    }
}

/// Matches `catch ReachabilityError.unableToSetCallback` (and the other one-value
/// cases) against a thrown error: see `ReachabilityError`'s ashleymills cases.
public func ~= (pattern: (Int32) -> ReachabilityError, value: any Error) -> Bool {
    (value as? ReachabilityError)?.matchedOperation == pattern(0).matchedOperation
}

/// Matches `catch ReachabilityError.failedToCreateWithHostname` against a thrown error.
public func ~= (pattern: (String, Int32) -> ReachabilityError, value: any Error) -> Bool {
    (value as? ReachabilityError)?.matchedOperation == pattern("", 0).matchedOperation
}

/// Matches `catch ReachabilityError.failedToCreateWithAddress` against a thrown error.
public func ~= (pattern: (sockaddr, Int32) -> ReachabilityError, value: any Error) -> Bool {
    (value as? ReachabilityError)?.matchedOperation == pattern(sockaddr(), 0).matchedOperation
}
