// The README's usage example, compiled in CI. Run: swift run ReachabilityExample
import Foundation
import Reachability

let reachability = try Reachability()  // the Internet (Apple's 0.0.0.0 target)
reachability.whenReachable = { r in print("up via", r.interfaceType ?? .other, r.flags) }
reachability.whenUnreachable = { r in print("down", r.flags) }
NotificationCenter.default.addObserver(forName: .reachabilityChanged, object: reachability, queue: nil) { note in
    guard let r = note.object as? Reachability else { return }
    print("changed:", r.currentReachabilityStatus)
}
try reachability.startNotifier()
print(
    "status:", reachability.currentReachabilityStatus, "flags:", reachability.flags,
    "connectionRequired:", reachability.connectionRequired)
if CommandLine.arguments.contains("--once") { exit(0) }
dispatchMain()
