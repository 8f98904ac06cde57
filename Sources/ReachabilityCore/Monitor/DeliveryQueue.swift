import Dispatch
@_spi(Testing) import ReachabilityBase

/// The serial queue the library delivers on when it is given none
/// (`Reachability.defaultNotificationQueue`, a `PathMonitor` never started on a queue).
enum DeliveryQueue {
    static let `default` = DispatchQueue(label: "reachability.notifications")
}
