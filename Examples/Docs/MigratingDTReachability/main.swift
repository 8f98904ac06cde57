import Foundation
import ReachabilityCompat

let observer = DTReachability.default().addReachabilityObserver { information in
    print(information.isReachable() ? "Reachable" : "Not Reachable")
}
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    DTReachability.default().removeReachabilityObserver(observer)  // The last observer: watching stops.
    exit(0)
}
dispatchMain()
