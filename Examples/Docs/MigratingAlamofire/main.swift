import Foundation
import ReachabilityCompat

let manager = NetworkReachabilityManager(host: "www.apple.com")

// The listener runs on the main queue when asked for it; dispatchMain() runs that queue.
// Without onQueue: it runs on the library's serial queue (Alamofire's default is .main).
manager?.startListening(onQueue: .main) { status in
    print("Network Status Changed: \(status)")
}
dispatchMain()
