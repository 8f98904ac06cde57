// A program written against Apple's Reachability sample (Reachability.h/.m, used
// from Swift through a bridging header), with only `import Reachability` added:
// the factories, the notification and the status constants keep their names.
// Two spellings differ (docs/MIGRATING.md): `currentReachabilityStatus` is a
// property, and `startNotifier()` throws instead of returning a BOOL.
// Run: swift run AppleSampleExample [hostname]
import Dispatch
import Foundation
import Reachability

let remoteHostName = CommandLine.arguments.dropFirst().first ?? "localhost"

guard let internetReachability = Reachability.reachabilityForInternetConnection(),
    let hostReachability = Reachability.reachabilityWithHostName(remoteHostName)
else {
    print("Unable to create the reachability objects")
    exit(1)
}

var zeroAddress = sockaddr_in()
zeroAddress.sin_family = sa_family_t(AF_INET)
let addressReachability = withUnsafePointer(to: &zeroAddress) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Reachability.reachabilityWithAddress($0) }
}

@Sendable func describe(_ reachability: Reachability) -> String {
    let status = reachability.currentReachabilityStatus
    let connectionRequired = reachability.connectionRequired
    switch status {
    case NotReachable: return "Access Not Available"
    case ReachableViaWWAN: return "Reachable WWAN" + (connectionRequired ? ", connection required" : "")
    case ReachableViaWiFi: return "Reachable WiFi" + (connectionRequired ? ", connection required" : "")
    default: return "Unknown"
    }
}

print("internet:", describe(internetReachability))
print("0.0.0.0:", addressReachability.map(describe) ?? "not made")

let observer = NotificationCenter.default.addObserver(
    forName: Notification.Name(rawValue: kReachabilityChangedNotification), object: hostReachability, queue: nil
) { note in
    guard let reachability = note.object as? Reachability else { return }
    print("\(remoteHostName):", describe(reachability))
    exit(0)
}

do {
    try hostReachability.startNotifier()
} catch {
    print("startNotifier failed: \(error)")
    exit(1)
}
DispatchQueue.main.asyncAfter(deadline: .now() + 10) {
    print("No notification in 10 s")
    exit(1)
}
dispatchMain()
