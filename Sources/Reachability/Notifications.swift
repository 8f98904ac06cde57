// The `Reachability` module: the whole core API (re-exported from ReachabilityCore)
// plus what needs Foundation — NotificationCenter posts, `Notification.Name`s and
// the compatibility layers of Compat/. A program that needs none of that can import
// ReachabilityCore alone and never load Foundation (DESIGN §4.1).

public import Foundation
@_exported public import ReachabilityCore

extension Notification.Name {
    /// Posted on the instance's `Reachability.notificationQueue` with the
    /// ``Reachability`` instance as `object`: once when the notifier starts, then
    /// whenever its flags or output interface change.
    ///
    /// Posted only by programs that link this module (`import Reachability`); a
    /// program that imports only `ReachabilityCore` has no Foundation to post with.
    public static let reachabilityChanged = Notification.Name("reachabilityChanged")
}

/// The posts themselves: the core delivers to the closures and observers, then,
/// because `Reachability` conforms here (where Foundation is), calls this.
extension Reachability: PostsReachabilityNotifications {
    /// Posts ``Foundation/Notification/Name/reachabilityChanged`` with this instance
    /// on `center` (ashleymills' `notificationCenter`; nil: the default center).
    package func postReachabilityChanged(on center: (any AnyObject & Sendable)?) {
        ((center as? NotificationCenter) ?? .default).post(name: .reachabilityChanged, object: self)
    }
}
