import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The reader thread's decisions and its drain, with no kernel and no root: the
/// machine fed wake-ups, the drain fed scripted datagrams. The real-kernel
/// tests (forced ENOBUFS, storms) check the same behaviour end to end.
@Suite struct ReaderMachineTests {
    @Test("Idle: no timeout and nothing to do; a change evaluates once")
    func idleAndChange() {
        var machine = ReaderMachine()
        #expect(machine.pollTimeout == -1)
        #expect(machine.decide(ReaderWakeup()) == ReaderMachine.Decision())
        var wakeup = ReaderWakeup()
        wakeup.messages = 1
        wakeup.changed = true
        wakeup.tableChanged = true
        let decision = machine.decide(wakeup)
        #expect(decision.evaluate && decision.tableChanged && !decision.resync && !decision.pause)
        #expect(decision.cause.interfacesChanged)
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == -1)
    }

    @Test("Overrun: a resync, then a pass caused by it, with the table published")
    func overrunResyncs() {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.needsResync = true
        wakeup.overruns = 1
        let decision = machine.decide(wakeup)
        #expect(decision.resync && decision.evaluate && decision.tableChanged)
        #expect(decision.cause.resynced && decision.cause.interfacesChanged)
        machine.resyncFinished(succeeded: true)
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == -1)
        #expect(machine.decide(ReaderWakeup()) == ReaderMachine.Decision(), "nothing left to do")
    }

    @Test("A failed resync is retried every second until one works, never forgotten")
    func failedResyncRetried() {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.needsResync = true
        _ = machine.decide(wakeup)
        machine.resyncFinished(succeeded: false)
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == ReaderMachine.retryMilliseconds)
        // The poll times out with nothing new: the resync is due anyway, and a pass after it.
        for _ in 0..<3 {
            let retry = machine.decide(ReaderWakeup())
            #expect(retry.resync && retry.evaluate && retry.cause.resynced)
            machine.resyncFinished(succeeded: false)
            machine.evaluationFinished(succeeded: true)
        }
        _ = machine.decide(ReaderWakeup())
        machine.resyncFinished(succeeded: true)
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == -1)
        #expect(!machine.decide(ReaderWakeup()).resync)
    }

    @Test("A failed pass (lookups) is retried on the next wake-up or timeout")
    func failedPassRetried() {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.changed = true
        wakeup.messages = 1
        _ = machine.decide(wakeup)
        machine.evaluationFinished(succeeded: false)
        #expect(machine.pollTimeout == ReaderMachine.retryMilliseconds)
        let retry = machine.decide(ReaderWakeup())
        #expect(retry.evaluate && !retry.resync && !retry.tableChanged)
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == -1)
        #expect(!machine.decide(ReaderWakeup()).evaluate)
    }

    @Test("A pass whose answers were stale runs again within 2 ms with its cause, for at most 50 ms")
    func staleAnswersRunAgain() throws {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.changed = true
        wakeup.messages = 1
        wakeup.cause.otherInterfaceChange = true
        wakeup.cause.noteRoute(RoutePrefix(family: AddressFamily.inet6, length: 0, destination: nil))
        let first = machine.decide(wakeup)
        let start = ContinuousClock.now
        #expect(machine.mayHoldStaleAnswers(at: start))
        machine.answersStale(cause: first.cause, at: start)
        #expect(machine.pollTimeout == ReaderMachine.staleAnswerWaitMilliseconds)
        // Nothing came: the pass runs again, with the held cause.
        let again = machine.decide(ReaderWakeup())
        #expect(again.evaluate && again.cause.otherInterfaceChange && again.cause.routes.count == 1)
        machine.answersStale(cause: again.cause, at: start + .milliseconds(30))
        #expect(machine.mayHoldStaleAnswers(at: start + .milliseconds(49)), "counted from the first")
        #expect(!machine.mayHoldStaleAnswers(at: start + .milliseconds(50)), "then it delivers what it has")
        #expect(machine.decide(ReaderWakeup()).cause.otherInterfaceChange, "the cause is still held")
        machine.evaluationFinished(succeeded: true)
        #expect(machine.pollTimeout == -1 && machine.mayHoldStaleAnswers(at: start + .seconds(1)))
        #expect(!machine.decide(ReaderWakeup()).evaluate, "delivered: nothing held")

        // Causes add up; routes past the limit are many.
        var cause = PassCause()
        cause.rulesChanged = true
        cause.carrierChangedLinks = [2]
        var other = PassCause()
        other.carrierChangedLinks = [3]
        other.gatewayNeighborChanged = true
        for index in 0..<PassCause.routeLimit {
            other.noteRoute(
                RoutePrefix(family: AddressFamily.inet, length: 32, destination: try IPAddress("10.0.0.\(index)")))
        }
        cause.noteRoute(RoutePrefix(family: AddressFamily.inet, length: 0, destination: nil))
        cause.add(other)
        #expect(cause.rulesChanged && cause.gatewayNeighborChanged && cause.carrierChangedLinks == [2, 3])
        #expect(cause.manyRoutes && cause.routes.isEmpty)
    }

    @Test("A poll failure counts as lost events: a resync follows")
    func pollFailure() {
        var machine = ReaderMachine()
        machine.pollFailed()
        #expect(machine.pollTimeout == ReaderMachine.retryMilliseconds)
        let decision = machine.decide(ReaderWakeup())
        #expect(decision.resync && decision.evaluate)
    }

    @Test("A storm of unrelated events pauses from the eighth wake-up in a row; anything relevant ends the run")
    func stormPause() {
        var machine = ReaderMachine()
        var unrelated = ReaderWakeup()
        unrelated.messages = 500
        let pauses = (0..<12).map { _ in machine.decide(unrelated).pause }
        #expect(pauses == Array(repeating: false, count: 7) + Array(repeating: true, count: 5))
        #expect(!machine.decide(unrelated).evaluate, "unrelated events never cause a pass")

        var relevant = ReaderWakeup()
        relevant.messages = 1
        relevant.changed = true
        #expect(!machine.decide(relevant).pause)
        #expect(machine.unrelatedStreak == 0)
        #expect(!machine.decide(unrelated).pause, "a new run starts from zero")

        // A wake-up with nothing read (a timeout, the stop eventfd) neither counts nor pauses.
        var quiet = ReaderMachine()
        for _ in 0..<20 { #expect(!quiet.decide(ReaderWakeup()).pause) }
    }

    @Test("Leases: the watch fired → every link's; a table change → new links'; nothing, or no lease files → none")
    func leaseReads() {
        let machine = ReaderMachine(watchesLeases: true)
        var fired = ReaderWakeup()
        fired.noteFiles([.leases])
        #expect(fired.leasesChanged && !fired.changed, "a lease file alone is no change until its read says so")
        #expect(machine.leaseRead(for: fired) == .all)
        fired.tableChanged = true
        #expect(machine.leaseRead(for: fired) == .all)
        var newLink = ReaderWakeup()
        newLink.changed = true
        newLink.tableChanged = true
        #expect(machine.leaseRead(for: newLink) == .newLinks)
        var routeOnly = ReaderWakeup()
        routeOnly.changed = true
        #expect(machine.leaseRead(for: routeOnly) == .none)
        #expect(machine.leaseRead(for: ReaderWakeup()) == .none)
        #expect(ReaderMachine().leaseRead(for: fired) == .none, "no lease files: none read")
        #expect(ReaderMachine(watchesLeases: false).leaseRead(for: newLink) == .none)
    }

    @Test("A lease read that changed a metered state is a table change and a pass, not a carrier-only one")
    func leaseReadOutcome() {
        var machine = ReaderMachine(watchesLeases: true)
        var wakeup = ReaderWakeup()
        wakeup.noteFiles([.leases])
        wakeup.messages = 1
        wakeup.changed = true
        wakeup.tableChanged = true
        wakeup.cause.carrierChangedLinks = [2]
        let before = wakeup
        machine.leasesRead(changed: false, wakeup: &wakeup)
        #expect(wakeup == before, "leases that changed nothing change nothing")
        #expect(wakeup.cause.carrierOnlyLinks == [2])

        var quiet = ReaderWakeup()
        quiet.noteFiles([.leases])
        #expect(!machine.decide(quiet).evaluate, "a lease file that changed no metered state makes no pass")
        machine.leasesRead(changed: true, wakeup: &quiet)
        #expect(quiet.changed && quiet.tableChanged && quiet.cause.otherInterfaceChange)
        let decision = machine.decide(quiet)
        #expect(decision.evaluate && decision.tableChanged && decision.cause.interfacesChanged)
        machine.leasesRead(changed: true, wakeup: &wakeup)
        #expect(wakeup.cause.carrierOnlyLinks == nil, "a metered change may move an answer: no reuse")
    }

    @Test("File events: a resolver change is a pass, counted once; the namespace file is no change of its own")
    func fileEvents() {
        var machine = ReaderMachine()
        var resolver = ReaderWakeup()
        resolver.noteFiles([.resolverConfiguration, .namespaceFile])
        #expect(resolver.changed && resolver.cause.resolverConfigurationChanged && !resolver.leasesChanged)
        let decision = machine.decide(resolver)
        #expect(decision.evaluate && !decision.tableChanged && decision.cause.resolverConfigurationChanged)
        #expect(decision.statistics == ReaderMachine.StatisticsUpdate(resolverConfigurationChanges: 1))
        var namespace = ReaderWakeup()
        namespace.noteFiles([.namespaceFile])
        #expect(namespace == ReaderWakeup())
    }

    @Test(
        "Counters: a drained wake-up adds its figures and the foreign total; a resolver change one; a quiet one nothing"
    )
    func counters() throws {
        var machine = ReaderMachine()
        var drained = ReaderWakeup()
        drained.messages = 40
        drained.overruns = 2
        drained.malformedDatagrams = 1
        drained.relevantRoutes = 3
        drained.needsResync = true
        drained.noteDrained(foreignDatagrams: 7)
        let update = machine.decide(drained).statistics
        #expect(
            update
                == ReaderMachine.StatisticsUpdate(
                    eventsReceived: 40, overruns: 2, malformedMessages: 1, relevantRouteEvents: 3, foreignDatagrams: 7))
        var nothingRead = ReaderWakeup()
        nothingRead.noteDrained(foreignDatagrams: 7)
        #expect(machine.decide(nothingRead).statistics == ReaderMachine.StatisticsUpdate(foreignDatagrams: 7))
        #expect(machine.decide(ReaderWakeup()).statistics == nil, "a timeout or the stop eventfd: no lock taken")
        var leases = ReaderWakeup()
        leases.noteFiles([.leases])
        #expect(machine.decide(leases).statistics == nil)

        var statistics = MonitorStatistics()
        statistics.foreignDatagrams = 3
        statistics.add(try #require(update))
        statistics.add(ReaderMachine.StatisticsUpdate(resolverConfigurationChanges: 1))
        var expected = MonitorStatistics()
        expected.eventsReceived = 40
        expected.overruns = 2
        expected.malformedMessages = 1
        expected.relevantRouteEvents = 3
        expected.foreignDatagrams = 7
        expected.resolverConfigurationChanges = 1
        #expect(statistics == expected, "the foreign count is the source's total; the others add up")
    }

    @Test("Publishing: a changed table, a Wi-Fi change or waiting neighbor changes publish with the pass; nothing else")
    func publishing() {
        var machine = ReaderMachine()
        var route = ReaderWakeup()
        route.messages = 1
        route.changed = true
        route.relevantRoutes = 1
        let routePass = machine.decide(route)
        #expect(routePass.evaluate && !routePass.tableChanged)
        let quiet = machine.passBegins(routePass, wirelessChanged: false)
        #expect(!quiet, "a route changes no table")
        let wireless = machine.passBegins(routePass, wirelessChanged: true)
        #expect(wireless, "a Wi-Fi SSID or signal change publishes")
        let after = machine.passBegins(routePass, wirelessChanged: false)
        #expect(!after, "and is not carried over")

        var link = ReaderWakeup()
        link.messages = 1
        link.changed = true
        link.tableChanged = true
        let linkPass = machine.decide(link)
        let linkPublished = machine.passBegins(linkPass, wirelessChanged: false)
        #expect(linkPublished, "a changed table is published")

        var failed = ReaderMachine()
        _ = failed.decide(route)
        failed.evaluationFinished(succeeded: false)
        let retry = failed.decide(ReaderWakeup())
        let retryPublished = failed.passBegins(retry, wirelessChanged: false)
        #expect(retry.evaluate && !retryPublished, "a retried pass publishes nothing new")
    }
}

/// Scripted datagrams in place of the event socket.
final class ScriptedEventSource: NetlinkEventSource {
    enum Item {
        case datagram([UInt8])
        case overrun
        case failure
    }

    private var items: [Item]
    private var current: UnsafeMutableRawBufferPointer?
    private(set) var receives = 0
    let foreignDatagrams = 0
    /// Items a read takes at once, as a socket's recvmmsg(2) does; how many of the
    /// last read's are still held.
    private let perRead: Int
    private var held = 0
    var holdsReadDatagrams: Bool { held > 0 }

    init(_ items: [Item], perRead: Int = 1) {
        self.items = items
        self.perRead = perRead
    }

    deinit { current?.deallocate() }

    func receive() throws(ReachabilityError) -> NetlinkSocket.Received {
        receives += 1
        current?.deallocate()
        current = nil
        guard !items.isEmpty else { return .empty }
        held = held > 0 ? held - 1 : min(perRead, items.count) - 1
        switch items.removeFirst() {
        case .overrun: return .overrun
        case .failure: throw ReachabilityError(.systemCall, "recvmsg failed", errno: 9)
        case .datagram(let bytes):
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
            buffer.copyBytes(from: bytes)
            current = buffer
            return .datagram(UnsafeRawBufferPointer(buffer))
        }
    }
}

@Suite struct ReaderDrainTests {
    typealias B = NetlinkBuilder

    /// RTM_NEWROUTE for `a.b.c.d/length` out of interface 2.
    static func route(_ destination: [UInt8], length: UInt8) -> [UInt8] {
        B.message(
            type: NLMsgType.newRoute,
            payload: B.rtmsg(family: AddressFamily.inet, destinationLength: length)
                + B.attribute(RTA.dst, destination) + B.attribute(RTA.oif, B.raw(UInt32(2))))
    }

    static func drain(
        _ items: [ScriptedEventSource.Item], destinations: [IPAddress] = [],
        table start: InterfaceTable = InterfaceTable(), wakeup before: ReaderWakeup = ReaderWakeup(),
        isGateway: (InterfaceTable.NeighborKey) -> Bool = { _ in false }
    )
        -> (ReaderWakeup, InterfaceTable, asked: Int)
    {
        let source = ScriptedEventSource(items)
        var table = start
        var wakeup = before
        var asked = 0
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup,
            destinations: { _ in
                asked += 1
                return destinations
            },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) },
            isGateway: isGateway)
        return (wakeup, table, asked)
    }

    @Test("Links and addresses change the table: a pass, cause interfacesChanged")
    func linksAndAddresses() throws {
        let bytes =
            B.newLink(index: 2, name: "eth0") + B.newAddress(family: AddressFamily.inet, address: [192, 0, 2, 1])
        let (wakeup, table, asked) = Self.drain([.datagram(bytes)])
        #expect(wakeup.messages == 2 && wakeup.changed && wakeup.tableChanged && !wakeup.needsResync)
        #expect(table[2]?.name == "eth0")
        #expect(asked == 0, "no route event: the destinations are not asked for")
    }

    @Test("An overrun among datagrams: resync, counted, and the rest still drained")
    func overrun() {
        let (wakeup, table, _) = Self.drain([.overrun, .datagram(B.newLink(index: 3, name: "wlan0"))])
        #expect(wakeup.needsResync && wakeup.overruns == 1)
        #expect(table[3]?.name == "wlan0")
    }

    @Test("A malformed datagram asks for a resync; a failing socket too")
    func malformedAndFailure() {
        let truncated = Array(B.newLink(index: 2, name: "eth0").prefix(20))
        let (malformed, _, _) = Self.drain([.datagram(truncated)])
        #expect(malformed.needsResync && malformed.malformedDatagrams == 1)
        let (failed, _, _) = Self.drain([.failure, .datagram(B.newLink(index: 2, name: "eth0"))])
        #expect(failed.needsResync && failed.messages == 0, "nothing read after the failure")
    }

    @Test("Routes: one covering a looked-up destination is a pass; others only noted; destinations asked once")
    func routes() throws {
        let target = try IPAddress("198.51.100.7")
        let unrelated = (0..<10).map { Self.route([10, 0, UInt8($0), 0], length: 24) }.reduce([], +)
        let (quiet, _, asked) = Self.drain([.datagram(unrelated), .datagram(unrelated)], destinations: [target])
        #expect(quiet.messages == 20 && !quiet.changed && quiet.relevantRoutes == 0)
        #expect(quiet.cause.routes.count == 10, "distinct prefixes noted for the hostnames")
        #expect(asked == 1)

        let covering = Self.route([198, 51, 100, 0], length: 24)
        let (moved, _, _) = Self.drain([.datagram(unrelated + covering)], destinations: [target])
        #expect(moved.changed && moved.relevantRoutes == 1 && !moved.tableChanged)
    }

    /// RTM_NEWLINK for eth0 (index 2) with `flags` and `operState`.
    static func eth0(flags: UInt32, operState: UInt8, name: String = "eth0") -> [UInt8] {
        B.message(
            type: NLMsgType.newLink,
            payload: B.ifinfomsg(index: 2, flags: flags) + B.attribute(IFLA.ifname, B.cString(name))
                + B.attribute(IFLA.operstate, [operState]))
    }

    /// RTM_NEWNETCONF: eth0's IPv4 ignore_routes_with_linkdown.
    static let netconf = B.message(
        type: NLMsgType.newNetconf,
        payload: B.padded([AddressFamily.inet]) + B.attribute(NETCONFA.ifindex, B.raw(Int32(2)))
            + B.attribute(NETCONFA.ignoreRoutesWithLinkdown, B.raw(Int32(1))))

    @Test(
        "Carrier alone: an up link losing LOWER_UP may reuse answers; admin down, renames, addresses, routes, netconf may not"
    )
    func carrierOnly() throws {
        let (_, up, _) = Self.drain([
            .datagram(Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up))
        ])
        let lost = Self.eth0(flags: IFF.up, operState: IFOper.lowerLayerDown)
        let (carrier, _, _) = Self.drain([.datagram(lost)], table: up)
        #expect(carrier.changed && carrier.cause.carrierOnlyLinks == [2])

        // A link first seen is a change of another kind; its state again is no change.
        let (first, _, _) = Self.drain([.datagram(lost)])
        #expect(first.changed && first.cause.carrierOnlyLinks == nil)
        let again = Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up)
        #expect(!Self.drain([.datagram(again)], table: up).0.changed)

        let (adminDown, _, _) = Self.drain([.datagram(Self.eth0(flags: 0, operState: IFOper.down))], table: up)
        #expect(adminDown.changed && adminDown.cause.carrierOnlyLinks == nil)
        let renamed = Self.eth0(flags: IFF.up, operState: IFOper.lowerLayerDown, name: "wan0")
        #expect(Self.drain([.datagram(renamed)], table: up).0.cause.carrierOnlyLinks == nil)
        let address = B.newAddress(family: AddressFamily.inet, address: [192, 0, 2, 1])
        #expect(Self.drain([.datagram(lost + address)], table: up).0.cause.carrierOnlyLinks == nil)
        let (withNetconf, _, _) = Self.drain([.datagram(lost + Self.netconf)], table: up)
        #expect(withNetconf.cause.netconfChanged && withNetconf.cause.carrierOnlyLinks == nil)

        // A route covering a destination still counts after the carrier change made a pass due.
        let target = try IPAddress("198.51.100.7")
        let covering = Self.route([198, 51, 100, 0], length: 24)
        let (routed, _, _) = Self.drain([.datagram(lost + covering)], destinations: [target], table: up)
        #expect(routed.cause.relevantRoute && routed.cause.carrierOnlyLinks == nil)
        let unrelated = Self.route([10, 0, 0, 0], length: 24)
        let (quiet, _, _) = Self.drain([.datagram(lost + unrelated)], destinations: [target], table: up)
        #expect(quiet.cause.carrierOnlyLinks == [2], "a route covering no destination changes no answer")
    }

    @Test(
        "A link the answers go out of going down or away ends the drain after its datagram; the rest is the next drain's"
    )
    func answerLinkLost() throws {
        let usable = Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up)
        let (_, up, _) = Self.drain([.datagram(usable)])
        let down = Self.eth0(flags: 0, operState: IFOper.down)
        let noCarrier = Self.eth0(flags: IFF.up, operState: IFOper.lowerLayerDown)
        let gone = B.message(
            type: NLMsgType.delLink,
            payload: B.ifinfomsg(index: 2, flags: 0) + B.attribute(IFLA.ifname, B.cString("eth0")))
        let address = ScriptedEventSource.Item.datagram(
            B.newAddress(family: AddressFamily.inet, address: [192, 0, 2, 1]))
        let route = Self.route([198, 51, 100, 0], length: 24)

        for lost in [down, noCarrier, gone] {
            // One read brought the link's datagram and two more.
            let source = ScriptedEventSource([.datagram(lost), .datagram(route), address], perRead: 3)
            var table = up
            var wakeup = ReaderWakeup()
            var asked: [Int32] = []
            let drain = { (wakeup: inout ReaderWakeup) in
                ReaderDrain.drain(
                    source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
                    classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) },
                    carriesAnswers: {
                        asked.append($0)
                        return $0 == 2
                    })
            }
            drain(&wakeup)
            #expect(wakeup.answerLinkLost && wakeup.changed && wakeup.tableChanged)
            #expect(wakeup.messages == 1 && source.receives == 1 && source.holdsReadDatagrams, "stopped after it")
            #expect(wakeup.leftReadDatagrams)
            wakeup.noteDrained(foreignDatagrams: 0)
            var machine = ReaderMachine()
            #expect(machine.decide(wakeup).statistics?.earlyPasses == 1, "counted as an early pass")
            #expect(table[2]?.isUsable != true && asked == [2])
            var next = ReaderWakeup()
            drain(&next)
            #expect(next.messages == 2 && !next.answerLinkLost && !source.holdsReadDatagrams, "the rest, next")
            next.noteDrained(foreignDatagrams: 0)
            #expect(!next.leftReadDatagrams && machine.decide(next).statistics?.earlyPasses == 0)
            #expect(next.cause.routes.count == 1, "the route was read")
        }

        // The link's datagram the last read: stopped, but nothing waits.
        var alone = ReaderWakeup()
        var aloneTable = up
        ReaderDrain.drain(
            ScriptedEventSource([.datagram(down)], perRead: 3), into: &aloneTable, wakeup: &alone,
            destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) },
            carriesAnswers: { _ in true })
        #expect(alone.answerLinkLost && !alone.leftReadDatagrams)

        // A link no answer goes out of: one drain takes it all.
        let source = ScriptedEventSource([.datagram(down), .datagram(route), address], perRead: 3)
        var table = up
        var wakeup = ReaderWakeup()
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) },
            carriesAnswers: { $0 == 3 })
        #expect(!wakeup.answerLinkLost && wakeup.messages == 3)

        // A link coming up, or a change that keeps it usable, doesn't ask and doesn't stop.
        for change in [
            usable, Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up, name: "wan0"),
        ] {
            let (_, downTable, _) = Self.drain([.datagram(down)], table: up)
            var asked = 0
            for start in [downTable, up] {
                var table = start
                var wakeup = ReaderWakeup()
                ReaderDrain.drain(
                    ScriptedEventSource([.datagram(change), .datagram(route)]), into: &table, wakeup: &wakeup,
                    destinations: { _ in [] },
                    classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) },
                    carriesAnswers: { _ in
                        asked += 1
                        return true
                    })
                #expect(!wakeup.answerLinkLost && wakeup.messages == 2)
            }
            #expect(asked == 0)
        }
    }

    @Test("A resolver change before the drain makes the pass due: routes are noted, no longer weighed")
    func resolverBeforeDrain() throws {
        var files = ReaderWakeup()
        files.noteFiles([.resolverConfiguration])
        let target = try IPAddress("198.51.100.7")
        let covering = Self.route([198, 51, 100, 0], length: 24)
        let (wakeup, _, asked) = Self.drain([.datagram(covering)], destinations: [target], wakeup: files)
        #expect(wakeup.changed && wakeup.relevantRoutes == 0 && asked == 0)
        #expect(wakeup.cause.routes.count == 1, "still noted for the hostnames")
    }

    @Test("A neighbor change that is not a gateway's makes no pass, and is published with the next pass only")
    func neighborUnpublished() throws {
        let eth1 = TableBuilder().link(3, "eth1").table
        let (wakeup, table, _) = Self.drain([.datagram(NeighborTests.datagram())], table: eth1)
        #expect(wakeup.neighborsChanged && !wakeup.changed && !wakeup.tableChanged)
        #expect(table.linkLayerAddress(of: try IPAddress("192.0.2.2"), on: 3) == [2, 0, 0, 0, 0, 0xaa])
        var machine = ReaderMachine()
        #expect(!machine.decide(wakeup).evaluate, "no pass for a host on the LAN")
        #expect(machine.neighborsUnpublished)
        #expect(!machine.decide(ReaderWakeup()).evaluate, "still none on the next wake-up")

        let (rule, _, _) = Self.drain(
            [
                .datagram(
                    B.message(
                        type: NLMsgType.newRule, payload: B.rtmsg(family: AddressFamily.inet, destinationLength: 0)))
            ])
        let pass = machine.decide(rule)
        #expect(pass.evaluate && !pass.tableChanged && !pass.cause.interfacesChanged)
        let published = machine.passBegins(pass, wirelessChanged: false)
        #expect(published, "the waiting neighbor change is published")
        #expect(!machine.neighborsUnpublished)
        let again = machine.passBegins(pass, wirelessChanged: false)
        #expect(!again, "once")
    }

    @Test("A gateway's neighbor change makes a pass, not an interface change, and publishes the table")
    func gatewayNeighbor() throws {
        let eth1 = TableBuilder().link(3, "eth1").table
        let gateway = InterfaceTable.NeighborKey(index: 3, address: try IPAddress("192.0.2.2"))
        var seen: [InterfaceTable.NeighborKey] = []
        let (wakeup, _, _) = Self.drain(
            [.datagram(NeighborTests.datagram())], table: eth1,
            isGateway: {
                seen.append($0)
                return $0 == gateway
            })
        #expect(seen == [gateway])
        #expect(wakeup.changed && wakeup.neighborsChanged && wakeup.cause.gatewayNeighborChanged)
        var machine = ReaderMachine()
        let decision = machine.decide(wakeup)
        #expect(decision.evaluate && !decision.tableChanged && !decision.cause.interfacesChanged)
        #expect(!decision.cause.isRelevant(toHostAt: [try IPAddress("203.0.113.1")]), "hostnames need not re-resolve")
        let published = machine.passBegins(decision, wirelessChanged: false)
        #expect(published)

        let other = Self.drain(
            [.datagram(NeighborTests.datagram(destination: [192, 0, 2, 3]))], table: eth1, isGateway: { $0 == gateway })
        #expect(other.0.neighborsChanged && !other.0.changed, "another host on the same link")
    }

    @Test("A netconf event alone makes a pass")
    func netconfAlone() {
        let (wakeup, _, _) = Self.drain([.datagram(Self.netconf)])
        #expect(wakeup.changed && wakeup.cause.netconfChanged && !wakeup.tableChanged)
    }

    @Test("At most drainLimit datagrams per wake-up: the rest waits in the socket")
    func drainLimit() {
        let items = Array(repeating: ScriptedEventSource.Item.overrun, count: ReaderDrain.drainLimit + 5)
        let source = ScriptedEventSource(items)
        var table = InterfaceTable()
        var wakeup = ReaderWakeup()
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) })
        #expect(source.receives == ReaderDrain.drainLimit)
        #expect(wakeup.overruns == ReaderDrain.drainLimit)
    }

    /// Datagrams read several at a time: those of the read the limit falls in are
    /// handled too (poll(2) would not wake the reader for them), the rest is left.
    @Test("The drain limit doesn't strand datagrams already read: the last read's are handled")
    func drainLimitFinishesTheLastRead() {
        let items = Array(repeating: ScriptedEventSource.Item.overrun, count: ReaderDrain.drainLimit + 20)
        let source = ScriptedEventSource(items, perRead: 5)
        var table = InterfaceTable()
        var wakeup = ReaderWakeup()
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) })
        // 8192 = 5 × 1638 + 2: the 1639th read's other 3 are handled as well.
        #expect(ReaderDrain.drainLimit % 5 == 2)
        #expect(source.receives == ReaderDrain.drainLimit + 3)
        #expect(!source.holdsReadDatagrams)
        #expect(wakeup.overruns == ReaderDrain.drainLimit + 3)
    }
}

@Suite struct KnownAnswersTests {
    static func request(_ text: String) throws -> LookupRequest { LookupRequest(destination: try IPAddress(text)) }

    @Test("A pass's answers, plus starts' at the same generation; nil while one is unknown")
    func answers() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("2001:db8::1"))
        var known = KnownAnswers(
            slots: [a: 0, b: 1], results: [.noRoute(errno: 101), .noRoute(errno: 113)], generation: 7)
        #expect(known.answers(for: [b, a]) == [.noRoute(errno: 113), .noRoute(errno: 101)])
        #expect(known.answers(for: [a, c]) == nil)
        known.add([c], [.noRoute(errno: 22)], askedAt: 6, settled: true)
        #expect(known.answers(for: [c]) == nil, "asked before the pass: may predate a change")
        known.add([c], [.noRoute(errno: 22)], askedAt: 7, settled: true)
        #expect(known.answers(for: [a, c]) == [.noRoute(errno: 101), .noRoute(errno: 22)])
        known.stillHold(at: 9)
        #expect(known.generation == 9 && known.answers(for: [c]) == [.noRoute(errno: 22)])
        known.add([a], [.noRoute(errno: 1)], askedAt: 9, settled: true)
        #expect(known.answers(for: [a]) == [.noRoute(errno: 101)], "a pass's answer is not replaced")
    }
}
