// The `Reachability` module: the whole core API (re-exported from ReachabilityCore)
// plus what needs Foundation — NotificationCenter posts, `Notification.Name`s and
// the compatibility layers of Compat/. A program that needs none of that can import
// ReachabilityCore alone and never load Foundation (DESIGN §4.1).

import CReachabilityPosting
public import Foundation
@_exported public import ReachabilityCore

extension Notification.Name {
    /// Posted on the instance's ``Reachability/notificationQueue`` with the
    /// ``Reachability`` instance as `object`: once when the notifier starts, then
    /// whenever its flags or output interface change.
    ///
    /// Posted only by programs that link this module (`import Reachability`); a
    /// program that imports only `ReachabilityCore` has no Foundation to post with.
    public static let reachabilityChanged = Notification.Name(NotificationPosting.reachabilityChanged)
}

/// Called once by CReachabilityPosting's load-time constructor: from then on the
/// core posts each delivery's notification on the instance's center.
@_cdecl("reachability_install_notification_poster")
func installNotificationPoster() {
    NotificationPosting.poster = { name, object, center in
        ((center as? NotificationCenter) ?? .default).post(name: Notification.Name(name), object: object)
    }
}
