@_spi(Testing) import ReachabilityBase

/// An owner whose deliveries are also posted as a notification.
///
/// `ReachabilityCore` has no Foundation import, so that a program that uses only it
/// doesn't load Foundation (BENCHMARKS.md). The `Reachability` module, which
/// re-exports the core and imports Foundation, declares `Reachability`'s conformance
/// and posts `Notification.Name.reachabilityChanged` in it
/// (Sources/Reachability/Notifications.swift). A ``NotifierCore`` asks once, when it
/// is made, whether its owner's type conforms: the conformance is in the process
/// exactly when that module is linked. A program of the core alone has none, and
/// posts nothing (nothing could observe it).
package protocol PostsReachabilityNotifications: AnyObject {
    /// Posts the delivery's notification with `self` as `object` on `center`, a
    /// `NotificationCenter` (nil: the default center). Called on the notification
    /// queue after the closure, with no lock held.
    func postReachabilityChanged(on center: (any AnyObject & Sendable)?)
}
