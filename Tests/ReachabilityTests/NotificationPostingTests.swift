import Foundation
import Reachability
import Testing

@testable import ReachabilityCore

/// The poster the `Reachability` module installs in the core at load time
/// (Sources/ReachabilityCore/Monitor/NotificationPosting.swift).
@Suite struct NotificationPostingTests {
    final class Object: Sendable {}

    @Test("Linking Reachability installs the poster; it posts the name with the object on the given center")
    func installed() throws {
        let poster = try #require(NotificationPosting.poster)
        let center = NotificationCenter()
        let object = Object()
        let received = LockedValue<[String]>([])
        let token = center.addObserver(forName: .reachabilityChanged, object: nil, queue: nil) { note in
            received.withLock { $0.append("\(note.name.rawValue) \(note.object as AnyObject === object)") }
        }
        defer { center.removeObserver(token) }
        poster(NotificationPosting.reachabilityChanged, object, center)
        #expect(received.withLock { $0 } == ["reachabilityChanged true"])
    }

    /// The core reads the poster on every delivery. Held as a bare closure behind the
    /// lock, each read wrapped the stored value in two more reabstraction thunks, and
    /// a call after some 100,000 deliveries overflowed the stack (signal 11 in CI).
    @Test("Reading the poster 200,000 times leaves it one call deep: a call still posts once")
    func readsDoNotNest() throws {
        for _ in 0..<200_000 { _ = NotificationPosting.poster }
        let center = NotificationCenter()
        let count = LockedValue(0)
        let token = center.addObserver(forName: .reachabilityChanged, object: nil, queue: nil) { _ in
            count.withLock { $0 += 1 }
        }
        defer { center.removeObserver(token) }
        // On a thread with a small (512 KiB) stack, where a deep chain fails first.
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            NotificationPosting.poster?(NotificationPosting.reachabilityChanged, Object(), center)
            done.signal()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        done.wait()
        #expect(count.withLock { $0 } == 1)
    }
}
