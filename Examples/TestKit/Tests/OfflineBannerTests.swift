import Reachability
import ReachabilityTestKit
import TestKitExample
import Testing

/// The app's banner, driven by a simulated network: no kernel, no root, no sleeps.
@Suite(.timeLimit(.minutes(1))) struct OfflineBannerTests {
    @Test func theBannerFollowsTheNetwork() async throws {
        let network = SimulatedNetwork(.connected(via: .wifi))
        let (texts, shown) = AsyncStream.makeStream(of: String?.self)
        let banner = try OfflineBanner(environment: network.environment) { shown.yield($0) }
        try banner.start()
        defer { banner.stop() }
        var changes = texts.makeAsyncIterator()

        #expect(await changes.next() == .some(nil))  // Online at the start: no banner.
        network.set(.disconnected)
        #expect(await changes.next() == OfflineBanner.offline)
        network.set(.connected(via: .cellular))
        #expect(await changes.next() == .some(nil))
        network.end()
        #expect(await changes.next() == OfflineBanner.unwatched)
    }
}
