// Alamofire's reachability usage (its Usage guide, "Network Reachability"), with only
// the import changed: `import Alamofire` became `import ReachabilityCompat`.
//
// Run: swift run AlamofireExample [HOST]   (exits after the first status, or after 5 s)
import Foundation
import ReachabilityCompat

let host = CommandLine.arguments.dropFirst().first ?? "www.apple.com"
let manager = NetworkReachabilityManager(host: host)

if let manager {
    print("\(host): isReachable \(manager.isReachable), status \(manager.status)")
} else {
    print("\(host) is not a valid host")
    exit(2)
}

// The listener runs on the main queue when asked for it, on Linux as with Alamofire;
// dispatchMain() keeps the main queue running.
manager?.startListening(onQueue: .main) { status in
    print("Network Status Changed: \(status)")
    switch status {
    case .reachable(.ethernetOrWiFi): print("reachable over Ethernet or Wi-Fi")
    case .reachable(.cellular): print("reachable over cellular")
    case .notReachable: print("not reachable")
    case .unknown: print("unknown")
    }
    exit(0)
}

DispatchQueue.main.asyncAfter(deadline: .now() + 5) {
    print("no status within 5 s")
    exit(1)
}
dispatchMain()
