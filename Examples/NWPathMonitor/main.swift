// Typical NWPathMonitor code, with only the import changed: `import Network` became
// `import ReachabilityCompat`. First the handler form, then `for await`.
//
// Run: swift run NWPathMonitorExample   (exits after the first path of each form, or after 5 s)
import Foundation
import ReachabilityCompat

let monitor = NWPathMonitor()
let firstPath = DispatchSemaphore(value: 0)
monitor.pathUpdateHandler = { path in
    if path.status == .satisfied {
        print("We're connected!")
    } else {
        print("No connection.")
    }
    print("  interfaces:", path.availableInterfaces.map { "\($0.name) (\($0.type))" })
    for gateway in path.gateways {
        if case .hostPort(let host, _) = gateway { print("  gateway:", host) }
    }
    print("  expensive:", path.isExpensive, "constrained:", path.isConstrained)
    firstPath.signal()
}
monitor.start(queue: DispatchQueue(label: "Monitor"))
if firstPath.wait(timeout: .now() + 5) == .timedOut {
    print("no path within 5 s")
    exit(1)
}
monitor.cancel()

Task {
    // Iterating starts a monitor of its own; it is cancelled when the loop ends.
    for await path in NWPathMonitor() {
        print("for await:", path.debugDescription)
        break
    }
    exit(0)
}
DispatchQueue.main.asyncAfter(deadline: .now() + 5) {
    print("no path from for await within 5 s")
    exit(1)
}
dispatchMain()
