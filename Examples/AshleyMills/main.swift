// A program written against ashleymills/Reachability.swift 5.x, as its README shows
// it, with nothing changed: `import Reachability` names this package's module.
// Run: swift run AshleyMillsExample [hostname]
import Dispatch
import Foundation
import Reachability

let hostname = CommandLine.arguments.dropFirst().first

// Declare this property where it won't go out of scope relative to your listener.
let reachability: Reachability
do {
    reachability = try hostname.map { try Reachability(hostname: $0) } ?? Reachability()
} catch ReachabilityError.failedToCreateWithHostname {
    print("Unable to create Reachability for \(hostname ?? "")")
    exit(1)
} catch {
    print("Unable to create Reachability: \(error)")
    exit(1)
}

reachability.whenReachable = { reachability in
    if reachability.connection == .wifi {
        print("Reachable via WiFi")
    } else {
        print("Reachable via Cellular")
    }
}
reachability.whenUnreachable = { _ in
    print("Not reachable")
}

// The notification, posted after the closures (block-based: Linux has no selectors).
let observer = NotificationCenter.default.addObserver(
    forName: .reachabilityChanged, object: reachability, queue: nil
) { note in
    let reachability = note.object as! Reachability
    switch reachability.connection {
    case .wifi:
        print("Notification: reachable via WiFi (\(reachability.connection))")
    case .cellular:
        print("Notification: reachable via Cellular")
    case .unavailable:
        print("Notification: network not reachable")
    case .none:
        print("Notification: network not reachable")
    }
    exit(0)
}

do {
    try reachability.startNotifier()
} catch ReachabilityError.unableToSetCallback {
    print("Unable to start notifier")
    exit(1)
} catch {
    print("Unable to start notifier: \(error)")
    exit(1)
}

// The notification above ends the program; give up after 10 s.
DispatchQueue.main.asyncAfter(deadline: .now() + 10) {
    reachability.stopNotifier()
    print("No notification in 10 s")
    exit(1)
}
dispatchMain()
