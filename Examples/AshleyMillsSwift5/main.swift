// ashleymills/Reachability.swift code as most apps have it — a non-Sendable class
// whose closures capture `self` — compiled in the Swift 5 language mode, where it
// builds unchanged (at most with warnings). In the Swift 6 mode these captures are
// errors: docs/MIGRATING.md says what to change.
// Run: swift run AshleyMillsSwift5Example
import Dispatch
import Foundation
import Reachability

final class StatusViewController {
    // swift-format-ignore: NeverUseForceTry
    // (ashleymills' README creates it with `try!`.)
    let reachability = try! Reachability(notificationQueue: .main)
    var statusText = "unknown"
    var updates = 0

    func viewDidLoad() {
        reachability.whenReachable = { reachability in
            self.statusText = reachability.connection == .wifi ? "Reachable via WiFi" : "Reachable via Cellular"
            self.updates += 1
        }
        reachability.whenUnreachable = { _ in
            self.statusText = "Not reachable"
            self.updates += 1
        }
        _ = NotificationCenter.default.addObserver(
            forName: .reachabilityChanged, object: reachability, queue: nil
        ) { note in
            self.reachabilityChanged(note: note)
        }
        do {
            try reachability.startNotifier()
        } catch {
            statusText = "Unable to start notifier"
        }
    }

    func reachabilityChanged(note: Notification) {
        let reachability = note.object as! Reachability
        print("\(statusText) (\(reachability.connection), update \(updates))")
        exit(0)
    }
}

let controller = StatusViewController()
controller.viewDidLoad()
DispatchQueue.main.asyncAfter(deadline: .now() + 10) {
    print("No notification in 10 s")
    exit(1)
}
dispatchMain()
