// DTFoundation's DTReachability demo (its ViewController) in Swift, as a command-line
// program: its DTReachability calls as they were, `import DTFoundation` became
// `import ReachabilityCompat`, and the label it set is a line printed (no UIKit here).
//
// Run: swift run DTReachabilityExample [HOST]   (exits after the first update, or after 10 s)
import Foundation
import ReachabilityCompat

let reachability =
    CommandLine.arguments.count > 1 ? DTReachability(hostname: CommandLine.arguments[1]) : DTReachability.default()

// register a reachability observer
let observer = reachability.addReachabilityObserver { information in
    // update the output based on connection flags
    if information.isReachable() {
        print("Reachable (\(information.reachabilityFlags))")
    } else {
        print("Not Reachable (\(information.reachabilityFlags))")
    }
    exit(0)
}

DispatchQueue.main.asyncAfter(deadline: .now() + 10) {
    reachability.removeReachabilityObserver(observer)
    print("no update within 10 s")
    exit(1)
}
dispatchMain()
