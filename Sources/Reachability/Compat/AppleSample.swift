// The factories of Apple's Reachability sample code (`Reachability.h`), in both the
// Objective-C spellings and the names Swift imports them under, plus its notification
// name and status constants. A thin layer over the core initializers; see
// docs/MIGRATING.md for what differs (`startNotifier()` throws here, and
// `currentReachabilityStatus` / `connectionRequired` are properties).

public import Foundation
import Glibc

extension Reachability {
    /// Apple's `+reachabilityForInternetConnection`: the Internet (the 0.0.0.0
    /// target), with deliveries on `defaultNotificationQueue`. Nil only when the
    /// instance can't be made (never for the process's own namespace).
    public static func reachabilityForInternetConnection() -> Reachability! {
        try? Reachability()
    }

    /// Apple's `+reachabilityWithHostName:`: watches a hostname (see
    /// `init(hostname:environment:notificationQueue:)`). Nil for an invalid name.
    public static func reachabilityWithHostName(_ hostName: String) -> Reachability! {
        try? Reachability(hostname: hostName)
    }

    /// Apple's `+reachabilityWithAddress:`: watches the IPv4 (`sockaddr_in`) or IPv6
    /// (`sockaddr_in6`, scope ID included) address `hostAddress` points to; the
    /// unspecified address means the Internet. Nil for another family. As with
    /// Apple's, the memory must hold the whole structure its `sa_family` names.
    public static func reachabilityWithAddress(_ hostAddress: UnsafePointer<sockaddr>) -> Reachability! {
        Self.address(hostAddress).flatMap { try? Reachability(address: $0) }
    }

    /// Apple's `+reachabilityForLocalWiFi` (dropped from later versions of the
    /// sample): `forLinkLocal(environment:notificationQueue:)`.
    public static func reachabilityForLocalWiFi() -> Reachability! {
        try? Reachability.forLinkLocal()
    }

    /// `+reachabilityForInternetConnection` under the name Swift imports it as.
    public static func forInternetConnection() -> Reachability! {
        reachabilityForInternetConnection()
    }

    /// `+reachabilityWithHostName:` under the name Swift imports it as:
    /// `Reachability(hostName:)`. Nil for an invalid name.
    public convenience init?(hostName: String) {
        do {
            try self.init(hostname: hostName, environment: .default, notificationQueue: nil)
        } catch {
            return nil
        }
    }

    /// `+reachabilityWithAddress:` under the name Swift imports it as:
    /// `Reachability(address:)` with a `sockaddr` pointer. Nil for a family other
    /// than `AF_INET` or `AF_INET6`.
    public convenience init?(address hostAddress: UnsafePointer<sockaddr>) {
        guard let address = Self.address(hostAddress) else { return nil }
        do {
            try self.init(address: address, environment: .default, notificationQueue: nil)
        } catch {
            return nil
        }
    }

    /// The address a `sockaddr_in` or `sockaddr_in6` holds.
    private static func address(_ pointer: UnsafePointer<sockaddr>) -> IPAddress? {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                withUnsafeBytes(of: inet.pointee.sin_addr) { IPAddress(bytes: $0) }
            }
        case AF_INET6:
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
                withUnsafeBytes(of: inet6.pointee.sin6_addr) {
                    IPAddress(bytes: $0, scopeID: inet6.pointee.sin6_scope_id)
                }
            }
        default:
            return nil
        }
    }
}

/// The sample's `kReachabilityChangedNotification`, as Swift imports it (a
/// string): `Notification.Name(rawValue: kReachabilityChangedNotification)` is
/// `Notification.Name.reachabilityChanged`, posted with the instance as
/// `object`.
public let kReachabilityChangedNotification: String = Notification.Name.reachabilityChanged.rawValue

/// The sample's `NotReachable` status constant: `NetworkStatus.notReachable`.
public let NotReachable = NetworkStatus.notReachable
/// The sample's `ReachableViaWiFi` status constant: `NetworkStatus.reachableViaWiFi`.
public let ReachableViaWiFi = NetworkStatus.reachableViaWiFi
/// The sample's `ReachableViaWWAN` status constant: `NetworkStatus.reachableViaWWAN`.
public let ReachableViaWWAN = NetworkStatus.reachableViaWWAN
