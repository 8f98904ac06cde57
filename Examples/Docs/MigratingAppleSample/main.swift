import Foundation
import Reachability

let reachability = Reachability.forInternetConnection()!
let observer = NotificationCenter.default.addObserver(
    forName: NSNotification.Name(rawValue: kReachabilityChangedNotification), object: nil, queue: .main
) { note in
    let status = (note.object as! Reachability).currentReachabilityStatus
    print(status == NotReachable ? "offline" : "online")
}
try reachability.startNotifier()
dispatchMain()  // A command-line program: the main queue runs the observer.
