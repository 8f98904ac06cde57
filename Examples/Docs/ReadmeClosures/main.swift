import Foundation
import Reachability

let reachability = try Reachability()  // the Internet; also Reachability(hostname:), Reachability(address:)
reachability.whenReachable = { r in
    print("reachable:", r.currentReachabilityStatus, "via", r.interface?.name ?? "?")
}
reachability.whenUnreachable = { r in print("not reachable:", r.flags) }
try reachability.startNotifier()  // one of the two is called now, then on every change
print("now:", reachability.currentReachabilityStatus)
dispatchMain()  // keep running: the closures come on the library's own serial queue
