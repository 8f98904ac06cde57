import Foundation
import ReachabilityCompat

let monitor = NWPathMonitor()
monitor.pathUpdateHandler = { path in
    if path.status == .satisfied {
        print("We're connected!")
    } else {
        print("No connection.")
    }
    print(path.isExpensive)
}
monitor.start(queue: DispatchQueue(label: "Monitor"))

Task {
    for await path in NWPathMonitor() {
        print(path.debugDescription)
    }
}
dispatchMain()  // A command-line program: keep the process running.
