import Dispatch
import Foundation
import Reachability

let reachability = try Reachability()
reachability.whenReachable = { reachability in
    print(reachability.connection == .wifi ? "Reachable via WiFi" : "Reachable via Cellular")
}
reachability.whenUnreachable = { _ in print("Not reachable") }
// No selectors on Linux: the block-based observer.
let observer = NotificationCenter.default.addObserver(
    forName: .reachabilityChanged, object: reachability, queue: nil
) { note in
    let reachability = note.object as! Reachability
    switch reachability.connection {
    case .wifi: print("Reachable via WiFi")
    case .cellular: print("Reachable via Cellular")
    case .unavailable, .none: print("Network not reachable")
    }
}
do {
    try reachability.startNotifier()
} catch ReachabilityError.unableToSetCallback {
    print("Unable to start notifier")
} catch {
    print("Unable to start notifier:", error)  // on Linux also e.g. no netlink socket
}
dispatchMain()
