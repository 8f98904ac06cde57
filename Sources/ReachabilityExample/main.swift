// A usage example of Reachability and Connectivity, built and run by CI (--once). Run: swift run ReachabilityExample
// (add --connectivity for the Connectivity example: it fetches the vendors' public
// check endpoints, so CI, which sends traffic only to its own namespaces, doesn't).
import Connectivity
import Foundation
import Reachability

if CommandLine.arguments.contains("--connectivity") {
    let connectivity = Connectivity(configuration: .recommended)
    connectivity.whenConnected = { c in print("online via", c.status) }
    connectivity.whenDisconnected = { c in print("offline:", c.latestResult?.verdict ?? .notConnected) }
    try connectivity.start()

    // Typed: in top-level code, a call without arguments would otherwise pick
    // rwbutler's checkConnectivity(completion:), whose completion defaults to nil.
    let result: ConnectivityResult = try await connectivity.checkConnectivity()
    switch result.verdict {
    case .online: break
    case .captivePortal(let loginURL): print("log in at", loginURL)
    case .noInternet(let reason): print("no Internet:", reason)
    case .limited(let reason): print("limited:", reason)
    case .proxyFailed(let failure): print("the proxy:", failure)
    case .notConnected: print("no usable path")
    }
    if CommandLine.arguments.contains("--once") { exit(result.verdict == .online ? 0 : 1) }
}

let reachability = try Reachability()  // the Internet (Apple's 0.0.0.0 target)
reachability.whenReachable = { r in print("up via", r.interfaceType ?? .other, r.flags) }
reachability.whenUnreachable = { r in print("down", r.flags) }
// Kept for the life of the program (pass it to removeObserver(_:) to stop).
let observer = NotificationCenter.default.addObserver(
    forName: .reachabilityChanged, object: reachability, queue: nil
) { note in
    guard let r = note.object as? Reachability else { return }
    print("changed:", r.currentReachabilityStatus)
}
try reachability.start()
print(
    "status:", reachability.currentReachabilityStatus, "flags:", reachability.flags,
    "connectionRequired:", reachability.connectionRequired)
if CommandLine.arguments.contains("--once") {
    NotificationCenter.default.removeObserver(observer)
    exit(0)
}
dispatchMain()
