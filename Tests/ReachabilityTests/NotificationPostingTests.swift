import Foundation
import Reachability
import Testing

@testable import ReachabilityCore

/// How a delivery becomes a notification: `Reachability`'s conformance to the core's
/// `PostsReachabilityNotifications`, declared in the `Reachability` module
/// (Sources/Reachability/Notifications.swift), with no load-time code.
@Suite struct NotificationPostingTests {
    @Test("With the Reachability module linked, Reachability's notifier posts; one told not to doesn't")
    func conformance() throws {
        #expect(try Reachability(address: "127.0.0.1").core.posting)
        let silent = NotifierCore(
            spec: .fixed(.internet), environment: .default, queue: .main, postsNotifications: false)
        #expect(!silent.posting)
    }

    @Test("The conformance posts reachabilityChanged with the instance on the given center, else the default one")
    func posts() throws {
        let reachability = try Reachability(address: "127.0.0.1")
        let center = NotificationCenter()
        let received = LockedValue<[String]>([])
        let token = center.addObserver(forName: .reachabilityChanged, object: nil, queue: nil) { note in
            received.withLock { $0.append("\(note.name.rawValue) \(note.object as AnyObject === reachability)") }
        }
        defer { center.removeObserver(token) }
        reachability.postReachabilityChanged(on: center)
        #expect(received.withLock { $0 } == ["reachabilityChanged true"])
        let onDefault = LockedValue(0)
        let defaultToken = NotificationCenter.default.addObserver(
            forName: .reachabilityChanged, object: reachability, queue: nil
        ) { _ in onDefault.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(defaultToken) }
        reachability.postReachabilityChanged(on: nil)
        #expect(onDefault.withLock { $0 } == 1)
        #expect(received.withLock { $0 }.count == 1)
    }
}
