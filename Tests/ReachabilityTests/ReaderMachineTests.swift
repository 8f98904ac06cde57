import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// The reader thread's decisions and its drain, with no kernel and no root: the
/// machine driven through its actions, the drain fed scripted datagrams, the
/// clock given. The real-kernel tests (forced ENOBUFS, storms, the changes the
/// kernel makes without a message) check the same behaviour end to end.
@Suite struct ReaderMachineTests {
    typealias Action = ReaderMachine.Action
    static let start = ContinuousClock.now

    static func request(_ text: String) throws -> LookupRequest { LookupRequest(destination: try IPAddress(text)) }

    /// A route out of link 2, living `lifetime` more (nil: no end).
    static func route(_ gateway: String = "192.0.2.254", lifetime: Duration? = nil) throws -> LookupResult {
        var route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: 2,
            hasGateway: true, preferredSource: nil, priority: nil)
        route.gateway = try IPAddress(gateway)
        route.remainingLifetime = lifetime
        return .route(route)
    }

    /// A wake-up that changed the table (a link or an address).
    static var tableChange: ReaderWakeup {
        var wakeup = ReaderWakeup()
        wakeup.messages = 1
        wakeup.changed = true
        wakeup.tableChanged = true
        wakeup.cause.interfacesChanged = true
        return wakeup
    }

    /// A wake-up of route events alone, for these prefixes (address, length).
    static func routes(_ prefixes: [(String?, UInt8)]) throws -> ReaderWakeup {
        var wakeup = ReaderWakeup()
        wakeup.messages = prefixes.count
        wakeup.changed = true
        for (address, length) in prefixes {
            let destination = try address.map { try IPAddress($0) }
            let family = destination?.family == .ipv6 ? AddressFamily.inet6 : AddressFamily.inet
            wakeup.cause.noteRoute(RoutePrefix(family: family, length: length, destination: destination))
        }
        return wakeup
    }

    /// The kinds of change that move answers without a route event: none may keep one.
    static var otherChanges: [(String, (inout ReaderWakeup) -> Void)] {
        [
            ("a link or an address, its carrier included", { $0.cause.interfacesChanged = true }),
            ("a route storm", { $0.cause.manyRoutes = true }),
            ("a rule", { $0.cause.rulesChanged = true }),
            ("netconf", { $0.cause.netconfChanged = true }),
            ("a nexthop object", { $0.cause.nexthopsChanged = true }),
            ("lost events", { $0.needsResync = true }),
            ("an expiry", { $0.startsExpire = Self.start }),
        ]
    }

    /// Runs the pass `action` begins (a ``Action/plan(_:publishes:)``): `plans` are
    /// the clients' requests, `kernel` answers what the machine asks. Returns what
    /// was asked, what was delivered, and the poll that follows.
    static func pass(
        _ action: Action, machine: inout ReaderMachine, plans: [[LookupRequest]], at now: ContinuousClock.Instant,
        kernel: ([LookupRequest]) throws -> [LookupResult]?
    ) throws -> (asked: [LookupRequest]?, delivery: ReaderMachine.Delivery?, poll: Int32?) {
        guard case .plan = action else {
            Issue.record("not a pass: \(action)")
            return (nil, nil, nil)
        }
        var next = machine.planned(plans, at: now)
        var asked: [LookupRequest]?
        if case .lookUp(let requests, _) = next {
            asked = requests
            next = machine.lookedUp(try kernel(requests), at: now)
        }
        guard case .deliver(let delivery) = next else {
            guard case .poll(let timeout) = next else { return (asked, nil, nil) }
            return (asked, nil, timeout)
        }
        guard case .poll(let timeout) = machine.delivered(at: now) else { return (asked, delivery, nil) }
        return (asked, delivery, timeout)
    }

    @Test("Idle: nothing to do, no timeout; a change is one pass that asks every lookup and delivers its answers")
    func idleAndChange() throws {
        var machine = ReaderMachine()
        #expect(machine.woke(ReaderWakeup(), at: Self.start) == .poll(timeoutMilliseconds: -1))
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("2001:db8::1"))
        let action = machine.woke(Self.tableChange, at: Self.start)
        #expect(action == .plan(Self.tableChange.cause, publishes: true))
        let answers = [try Self.route(), LookupResult.noRoute(errno: 101)]
        let (asked, delivery, poll) = try Self.pass(action, machine: &machine, plans: [[a, b], [b]], at: Self.start) {
            _ in answers
        }
        #expect(asked == [a, b])
        #expect(delivery?.answers == answers && delivery?.keptAnswers == 0)
        #expect(delivery?.batch.answers(forPlan: 1, in: answers) == [.noRoute(errno: 101)])
        #expect(delivery?.gateways == [InterfaceTable.NeighborKey(index: 2, address: try IPAddress("192.0.2.254"))])
        #expect(poll == -1 && machine.phase == .waiting)
        #expect(machine.carriesAnswers(2) && !machine.carriesAnswers(3), "the link the answers go out of")
    }

    @Test("A pass with no lookups (no clients, or an interface list) still delivers, asking nothing")
    func passWithoutLookups() throws {
        var machine = ReaderMachine()
        let action = machine.woke(Self.tableChange, at: Self.start)
        let (asked, delivery, poll) = try Self.pass(action, machine: &machine, plans: [[]], at: Self.start) { _ in
            Issue.record("asked the kernel")
            return []
        }
        #expect(asked == nil && delivery?.answers == [] && delivery?.batch.planCount == 1 && poll == -1)
    }

    @Test("Lost events: a resync, then a pass caused by it that publishes; a poll failure is reported so too")
    func overrunResyncs() throws {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.needsResync = true
        wakeup.overruns = 1
        #expect(machine.woke(wakeup, at: Self.start) == .resync)
        let action = machine.resynced(true)
        guard case .plan(let cause, let publishes) = action else {
            Issue.record("no pass after the resync: \(action)")
            return
        }
        #expect(cause.resynced && publishes)
        let a = try Self.request("192.0.2.1")
        let (asked, _, poll) = try Self.pass(action, machine: &machine, plans: [[a]], at: Self.start) { _ in
            [.noRoute(errno: 101)]
        }
        #expect(asked == [a] && poll == -1)
        #expect(machine.woke(ReaderWakeup(), at: Self.start) == .poll(timeoutMilliseconds: -1), "nothing left")
    }

    @Test("A failed resync is retried every second until one works, never forgotten")
    func failedResyncRetried() throws {
        var machine = ReaderMachine()
        var wakeup = ReaderWakeup()
        wakeup.needsResync = true
        #expect(machine.woke(wakeup, at: Self.start) == .resync)
        var action = machine.resynced(false)
        var (_, _, poll) = try Self.pass(action, machine: &machine, plans: [[]], at: Self.start) { _ in [] }
        #expect(poll == ReaderMachine.retryMilliseconds)
        // The poll times out with nothing new: the resync is due anyway, and a pass after it.
        for _ in 0..<3 {
            #expect(machine.woke(ReaderWakeup(), at: Self.start) == .resync)
            action = machine.resynced(false)
            guard case .plan(let cause, _) = action else {
                Issue.record("no pass after the retried resync")
                return
            }
            #expect(cause.resynced)
            (_, _, poll) = try Self.pass(action, machine: &machine, plans: [[]], at: Self.start) { _ in [] }
            #expect(poll == ReaderMachine.retryMilliseconds)
        }
        #expect(machine.woke(ReaderWakeup(), at: Self.start) == .resync)
        action = machine.resynced(true)
        (_, _, poll) = try Self.pass(action, machine: &machine, plans: [[]], at: Self.start) { _ in [] }
        #expect(poll == -1)
        #expect(machine.woke(ReaderWakeup(), at: Self.start) == .poll(timeoutMilliseconds: -1))
    }

    @Test("A failed pass is retried a second later with its cause, asking everything, until one works")
    func failedPassRetried() throws {
        var machine = ReaderMachine()
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.1"))
        var action = machine.woke(Self.tableChange, at: Self.start)
        _ = try Self.pass(action, machine: &machine, plans: [[a, b]], at: Self.start) { _ in
            [.noRoute(errno: 1), .noRoute(errno: 2)]
        }
        // Routes alone, covering a: b's answer would be kept, but the lookups fail.
        action = machine.woke(try Self.routes([("192.0.2.0", 24)]), at: Self.start)
        var (asked, delivery, poll) = try Self.pass(action, machine: &machine, plans: [[a, b]], at: Self.start) {
            _ in nil
        }
        #expect(asked == [a] && delivery == nil && poll == ReaderMachine.retryMilliseconds)
        #expect(!machine.carriesAnswers(2), "no answer is known after a failure")
        action = machine.woke(ReaderWakeup(), at: Self.start + .seconds(1))
        guard case .plan(let cause, let publishes) = action else {
            Issue.record("no retry: \(action)")
            return
        }
        #expect(cause.routes.count == 1 && !publishes, "the failed pass's cause; nothing new to publish")
        (asked, delivery, poll) = try Self.pass(action, machine: &machine, plans: [[a, b]], at: Self.start) { _ in
            [.noRoute(errno: 3), .noRoute(errno: 4)]
        }
        #expect(asked == [a, b], "nothing known: everything asked")
        #expect(delivery?.cause == cause && poll == -1)
        #expect(machine.woke(ReaderWakeup(), at: Self.start + .seconds(2)) == .poll(timeoutMilliseconds: -1))
    }

    @Test("A storm of unrelated events pauses from the eighth wake-up in a row; anything relevant ends the run")
    func stormPause() throws {
        var machine = ReaderMachine()
        var unrelated = ReaderWakeup()
        unrelated.messages = 500
        let pause = Action.pause(microseconds: ReaderMachine.stormPauseMicroseconds)
        var actions: [Action] = []
        for _ in 0..<12 {
            let action = machine.woke(unrelated, at: Self.start)
            actions.append(action)
            if action == pause { #expect(machine.paused(at: Self.start) == .poll(timeoutMilliseconds: -1)) }
        }
        #expect(
            actions == Array(repeating: .poll(timeoutMilliseconds: -1), count: 7) + Array(repeating: pause, count: 5))

        let relevant = Self.tableChange
        #expect(machine.woke(relevant, at: Self.start) == .plan(relevant.cause, publishes: true))
        #expect(machine.unrelatedStreak == 0)
        _ = try Self.pass(.plan(relevant.cause, publishes: true), machine: &machine, plans: [], at: Self.start) { _ in
            []
        }
        #expect(machine.woke(unrelated, at: Self.start) == .poll(timeoutMilliseconds: -1), "a new run starts from zero")

        // A wake-up with nothing read (a timeout, the stop eventfd) neither counts nor pauses.
        var quiet = ReaderMachine()
        for _ in 0..<20 { #expect(quiet.woke(ReaderWakeup(), at: Self.start) == .poll(timeoutMilliseconds: -1)) }
    }

    @Test("Ask what moved: routes alone ask only the lookups a drained prefix covers, and those not known")
    func askWhatMoved() throws {
        var machine = ReaderMachine()
        let (a, b, c) = (
            try Self.request("192.0.2.1"), try Self.request("198.51.100.1"), try Self.request("2001:db8::1")
        )
        let first = [try Self.route("192.0.2.254"), try Self.route("192.0.2.253"), LookupResult.noRoute(errno: 101)]
        _ = try Self.pass(
            machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a, b, c]], at: Self.start
        ) {
            _ in first
        }

        // A route into a's network: a alone is asked; b and c keep their answers.
        let fresh = try Self.route("192.0.2.9")
        var (asked, delivery, _) = try Self.pass(
            machine.woke(try Self.routes([("192.0.2.0", 24)]), at: Self.start), machine: &machine, plans: [[a, b, c]],
            at: Self.start
        ) { _ in [fresh] }
        #expect(asked == [a])
        #expect(delivery?.answers == [fresh, first[1], first[2]] && delivery?.keptAnswers == 2)

        // A route covering nothing looked up: nothing asked, all kept.
        (asked, delivery, _) = try Self.pass(
            machine.woke(try Self.routes([("203.0.113.0", 24)]), at: Self.start), machine: &machine,
            plans: [[a, b, c]], at: Self.start
        ) { _ in
            Issue.record("asked the kernel")
            return []
        }
        #expect(asked == nil && delivery?.answers == [fresh, first[1], first[2]] && delivery?.keptAnswers == 3)

        // The IPv4 default route covers every IPv4 lookup; a new client's lookup is not known.
        let d = try Self.request("203.0.113.7")
        (asked, delivery, _) = try Self.pass(
            machine.woke(try Self.routes([(nil, 0)]), at: Self.start), machine: &machine, plans: [[a, b, c], [d]],
            at: Self.start
        ) { requests in requests.map { _ in .noRoute(errno: 113) } }
        #expect(asked == [a, b, d])
        #expect(delivery?.answers == [.noRoute(errno: 113), .noRoute(errno: 113), first[2], .noRoute(errno: 113)])

        // A Wi-Fi SSID or signal change: nothing routes by it, nothing asked, the table published.
        var wireless = ReaderWakeup()
        wireless.noteWireless(changed: true)
        let action = machine.woke(wireless, at: Self.start)
        #expect(action == .plan(wireless.cause, publishes: true))
        (asked, delivery, _) = try Self.pass(action, machine: &machine, plans: [[a, b, c], [d]], at: Self.start) { _ in
            Issue.record("asked the kernel for a Wi-Fi change")
            return []
        }
        #expect(asked == nil && delivery?.keptAnswers == 4 && delivery?.cause.isWirelessOnly == true)
    }

    @Test("Correctness: a change that moves answers without a route event never keeps one, with routes or alone")
    func otherChangesAskEverything() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.1"))
        for (what, change) in Self.otherChanges {
            for withRoute in [false, true] {
                var machine = ReaderMachine()
                _ = try Self.pass(
                    machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a, b]],
                    at: Self.start
                ) { _ in [.noRoute(errno: 1), .noRoute(errno: 2)] }
                var wakeup = withRoute ? try Self.routes([("192.0.2.0", 24)]) : ReaderWakeup()
                wakeup.changed = true
                change(&wakeup)
                var action = machine.woke(wakeup, at: Self.start)
                if action == .resync { action = machine.resynced(true) }
                let (asked, delivery, _) = try Self.pass(
                    action, machine: &machine, plans: [[a, b]], at: Self.start
                ) { _ in [.noRoute(errno: 3), .noRoute(errno: 4)] }
                #expect(asked == [a, b], "\(what)\(withRoute ? " with a route" : ""): everything asked")
                #expect(delivery?.keptAnswers == 0, "\(what)")
            }
        }
    }

    @Test("What moves no route's answer keeps every answer: a resolver file, a gateway's link-layer address")
    func unroutedChangesKeepAnswers() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.1"))
        let changes: [(String, (inout ReaderWakeup) -> Void)] = [
            ("the resolver's files", { $0.noteFiles([.resolverConfiguration]) }),
            ("a gateway's neighbor", { $0.cause.gatewayNeighborChanged = true }),
        ]
        for (what, change) in changes {
            var machine = ReaderMachine()
            _ = try Self.pass(
                machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a, b]], at: Self.start
            ) { _ in [.noRoute(errno: 1), .noRoute(errno: 2)] }
            var wakeup = ReaderWakeup()
            wakeup.changed = true
            change(&wakeup)
            let (asked, delivery, _) = try Self.pass(
                machine.woke(wakeup, at: Self.start), machine: &machine, plans: [[a, b]], at: Self.start
            ) { _ in [] }
            #expect(asked == nil && delivery?.keptAnswers == 2, "\(what)")
        }
    }

    @Test("Re-check at expiry: the poll ends at the earliest route lifetime's end, and that pass asks everything")
    func expiry() throws {
        var machine = ReaderMachine()
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.1"))
        let margin = ReaderMachine.expiryMargin
        var (_, _, poll) = try Self.pass(
            machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a, b]], at: Self.start
        ) { _ in [try Self.route(lifetime: .seconds(30)), try Self.route(lifetime: .seconds(2))] }
        #expect(poll == 2025 && machine.expiry == Self.start + .seconds(2) + margin)

        // Routes alone before then: b is kept, and so is its end.
        var asked: [LookupRequest]?
        (asked, _, poll) = try Self.pass(
            machine.woke(try Self.routes([("192.0.2.1", 32)]), at: Self.start + .seconds(1)), machine: &machine,
            plans: [[a, b]], at: Self.start + .seconds(1)
        ) { _ in [.noRoute(errno: 101)] }
        #expect(asked == [a] && poll == 1025)
        #expect(machine.woke(ReaderWakeup(), at: Self.start + .seconds(2)) == .poll(timeoutMilliseconds: 25))

        // The end: a pass that asks everything, whatever else came.
        let end = Self.start + .seconds(2) + margin
        let action = machine.woke(ReaderWakeup(), at: end)
        guard case .plan(let cause, let publishes) = action else {
            Issue.record("no pass at the expiry: \(action)")
            return
        }
        #expect(cause.answersExpired && !publishes && cause.routesOnly == nil)
        (asked, _, poll) = try Self.pass(action, machine: &machine, plans: [[a, b]], at: end) { _ in
            [.noRoute(errno: 101), .noRoute(errno: 101)]
        }
        #expect(asked == [a, b] && poll == -1 && machine.expiry == nil)
    }

    @Test(
        "Expiry: an end that comes while the lookups are asked, or that a kept answer holds, stands and is due at once")
    func expiryDuringAPass() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.1"))
        var machine = ReaderMachine()
        _ = try Self.pass(
            machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a, b]], at: Self.start
        ) { _ in [try Self.route(lifetime: .seconds(2)), .noRoute(errno: 101)] }
        let end = Self.start + .seconds(2) + ReaderMachine.expiryMargin
        // Routes alone, asking b only, woken just before a's end and answered after it:
        // a's answer was kept, so its end stands, and the pass after is due at once.
        let before = end - .milliseconds(1)
        var action = machine.woke(try Self.routes([("198.51.100.0", 24)]), at: before)
        #expect(machine.planned([[a, b]], at: before) == .lookUp([b], behindChanges: false))
        action = machine.lookedUp([.noRoute(errno: 101)], at: end + .milliseconds(5))
        guard case .deliver = action else {
            Issue.record("no delivery: \(action)")
            return
        }
        #expect(machine.delivered(at: end + .milliseconds(5)) == .poll(timeoutMilliseconds: 0))
        // Everything asked, from before the end to after it: the end stands too.
        action = machine.woke(ReaderWakeup(), at: end + .milliseconds(5))
        guard case .plan(let cause, _) = action else {
            Issue.record("no pass at the end: \(action)")
            return
        }
        #expect(cause.answersExpired && machine.expiry == nil, "cleared by the pass it makes")
        let (asked, _, poll) = try Self.pass(action, machine: &machine, plans: [[a, b]], at: end + .milliseconds(5)) {
            _ in [.noRoute(errno: 101), .noRoute(errno: 101)]
        }
        #expect(asked == [a, b] && poll == -1)
    }

    @Test(
        "The lookups wait behind the change in progress after a link's, an address's, a nexthop's message or lost events; not else"
    )
    func behindChanges() throws {
        let a = try Self.request("192.0.2.1")
        func lookUp(_ wakeup: ReaderWakeup, known: Bool = false) -> Action? {
            var machine = ReaderMachine()
            if known {
                _ = try? Self.pass(
                    machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a]], at: Self.start
                ) { _ in [.noRoute(errno: 101)] }
            }
            var action = machine.woke(wakeup, at: Self.start)
            if action == .resync { action = machine.resynced(true) }
            guard case .plan = action else { return nil }
            return machine.planned([[a]], at: Self.start)
        }
        #expect(lookUp(Self.tableChange) == .lookUp([a], behindChanges: true))
        var restated = ReaderWakeup()
        restated.changed = true
        restated.cause.addressesRestated = true
        #expect(lookUp(restated, known: true) == .lookUp([a], behindChanges: true))
        var nexthop = ReaderWakeup()
        nexthop.changed = true
        nexthop.cause.nexthopsChanged = true
        #expect(lookUp(nexthop, known: true) == .lookUp([a], behindChanges: true))
        var lost = ReaderWakeup()
        lost.needsResync = true
        #expect(lookUp(lost, known: true) == .lookUp([a], behindChanges: true))
        #expect(lookUp(try Self.routes([("192.0.2.0", 24)]), known: true) == .lookUp([a], behindChanges: false))
        var rule = ReaderWakeup()
        rule.changed = true
        rule.cause.rulesChanged = true
        #expect(lookUp(rule, known: true) == .lookUp([a], behindChanges: false), "a rule is in place with its message")
        var expired = ReaderWakeup()
        expired.startsExpire = Self.start
        #expect(lookUp(expired, known: true) == .lookUp([a], behindChanges: false))
    }

    @Test("Expiry: a refreshed route moves the end later; an answer in its route's last tick keeps the end ahead")
    func expiryEdges() throws {
        let a = try Self.request("192.0.2.1")
        var machine = ReaderMachine()
        var (_, _, poll) = try Self.pass(
            machine.woke(Self.tableChange, at: Self.start), machine: &machine, plans: [[a]], at: Self.start
        ) { _ in [try Self.route(lifetime: .seconds(2))] }
        #expect(poll == 2025)
        // The route was added again with a longer life before its end: that end stands
        // until it comes (one pass more), then the new one.
        let soon = Self.start + .seconds(1)
        (_, _, poll) = try Self.pass(
            machine.woke(try Self.routes([(nil, 0)]), at: soon), machine: &machine, plans: [[a]], at: soon
        ) {
            _ in [try Self.route(lifetime: .seconds(10))]
        }
        #expect(poll == 1025, "the earlier end first")
        let end = Self.start + .seconds(2) + ReaderMachine.expiryMargin
        (_, _, poll) = try Self.pass(machine.woke(ReaderWakeup(), at: end), machine: &machine, plans: [[a]], at: end) {
            _ in [try Self.route(lifetime: .seconds(9))]
        }
        #expect(poll == 9025, "then the refreshed one's")

        // In its last 10 ms the kernel shows no lifetime at all: the end already known stands.
        let last = end + .milliseconds(8990)
        (_, _, poll) = try Self.pass(
            machine.woke(try Self.routes([(nil, 0)]), at: last), machine: &machine, plans: [[a]], at: last
        ) {
            _ in [try Self.route()]
        }
        #expect(poll == 35)

        // A start's answer that ends earlier shortens the poll, with no pass of its own.
        var started = ReaderWakeup()
        started.startsExpire = last + .milliseconds(10)
        #expect(machine.woke(started, at: last) == .poll(timeoutMilliseconds: 10))
    }

    @Test("The call order is the machine's: a report it doesn't wait for stops the process")
    func callOrder() async {
        await #expect(processExitsWith: .failure) {
            var machine = ReaderMachine()
            _ = machine.planned([[LookupRequest]](), at: .now)
        }
        await #expect(processExitsWith: .failure) {
            var machine = ReaderMachine()
            _ = machine.woke(ReaderMachineTests.tableChange, at: .now)
            _ = machine.woke(ReaderWakeup(), at: .now)
        }
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

    @Test("A lease read that changed a metered state is an interface change and a pass that publishes")
    func leaseReadOutcome() {
        var machine = ReaderMachine(watchesLeases: true)
        var wakeup = ReaderWakeup()
        wakeup.noteFiles([.leases])
        let before = wakeup
        machine.leasesRead(changed: false, wakeup: &wakeup)
        #expect(wakeup == before, "leases that changed nothing change nothing")
        #expect(machine.woke(wakeup, at: Self.start) == .poll(timeoutMilliseconds: -1), "and make no pass")
        machine.leasesRead(changed: true, wakeup: &wakeup)
        #expect(wakeup.changed && wakeup.tableChanged && wakeup.cause.interfacesChanged)
        #expect(machine.woke(wakeup, at: Self.start) == .plan(wakeup.cause, publishes: true))
    }

    @Test("File events: a resolver change is a pass, counted once; the namespace file is no change of its own")
    func fileEvents() {
        var machine = ReaderMachine()
        var resolver = ReaderWakeup()
        resolver.noteFiles([.resolverConfiguration, .namespaceFile])
        #expect(resolver.changed && resolver.cause.resolverConfigurationChanged && !resolver.leasesChanged)
        #expect(machine.woke(resolver, at: Self.start) == .plan(resolver.cause, publishes: false))
        #expect(
            ReaderMachine.statistics(of: resolver) == ReaderMachine.StatisticsUpdate(resolverConfigurationChanges: 1))
        var namespace = ReaderWakeup()
        namespace.noteFiles([.namespaceFile])
        #expect(namespace == ReaderWakeup())
    }

    @Test(
        "Counters: a drained wake-up adds its figures and the foreign total; a resolver change one; a quiet one nothing"
    )
    func counters() throws {
        var drained = ReaderWakeup()
        drained.messages = 40
        drained.overruns = 2
        drained.malformedDatagrams = 1
        drained.relevantRoutes = 3
        drained.needsResync = true
        drained.noteDrained(foreignDatagrams: 7)
        let update = ReaderMachine.statistics(of: drained)
        #expect(
            update
                == ReaderMachine.StatisticsUpdate(
                    eventsReceived: 40, overruns: 2, malformedMessages: 1, relevantRouteEvents: 3, foreignDatagrams: 7))
        var nothingRead = ReaderWakeup()
        nothingRead.noteDrained(foreignDatagrams: 7)
        #expect(ReaderMachine.statistics(of: nothingRead) == ReaderMachine.StatisticsUpdate(foreignDatagrams: 7))
        #expect(ReaderMachine.statistics(of: ReaderWakeup()) == nil, "a timeout or the stop eventfd: no lock taken")
        var leases = ReaderWakeup()
        leases.noteFiles([.leases])
        #expect(ReaderMachine.statistics(of: leases) == nil)

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

    @Test("Publishing: a changed table, a resync or waiting neighbor changes publish with the pass; nothing else")
    func publishing() throws {
        var machine = ReaderMachine()
        let route = try Self.routes([("192.0.2.0", 24)])
        #expect(machine.woke(route, at: Self.start) == .plan(route.cause, publishes: false), "a route changes no table")
        _ = try Self.pass(.plan(route.cause, publishes: false), machine: &machine, plans: [], at: Self.start) { _ in []
        }

        var neighbor = ReaderWakeup()
        neighbor.messages = 1
        neighbor.neighborsChanged = true
        #expect(machine.woke(neighbor, at: Self.start) == .poll(timeoutMilliseconds: -1), "no pass of its own")
        #expect(machine.neighborsUnpublished)
        #expect(machine.woke(route, at: Self.start) == .plan(route.cause, publishes: true), "published with the next")
        _ = try Self.pass(.plan(route.cause, publishes: true), machine: &machine, plans: [], at: Self.start) { _ in [] }
        #expect(!machine.neighborsUnpublished)
        #expect(machine.woke(route, at: Self.start) == .plan(route.cause, publishes: false), "once")
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

    @Test("Every address message of a known link makes a pass, one the table already holds too; an unknown link's none")
    func addressMessagesAlwaysPass() throws {
        let address = B.newAddress(
            family: AddressFamily.inet6, address: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [5])
        let (_, held, _) = Self.drain([.datagram(B.newLink(index: 2, name: "eth0") + address)])
        // The kernel may have changed the address meanwhile without a message (an IPv6
        // address kept at an admin down turns tentative): the same message again is a pass.
        let (again, table, _) = Self.drain([.datagram(address)], table: held)
        #expect(again.changed && again.cause.addressesRestated && !again.tableChanged)
        #expect(again.cause.routesOnly == nil && again.cause.waitsForChanges)
        #expect(
            !again.cause.interfacesChanged && !again.cause.isRelevant(toHostAt: []), "no network change to hostnames")
        #expect(table == held)
        let elsewhere = B.newAddress(family: AddressFamily.inet, address: [192, 0, 2, 1], index: 9)
        #expect(!Self.drain([.datagram(elsewhere)], table: held).0.changed, "an address of a link not in the table")
    }

    @Test("An overrun among datagrams: resync, counted; what was queued behind it is older than the resync: dropped")
    func overrun() {
        let source = ScriptedEventSource(
            [
                .datagram(B.newLink(index: 2, name: "eth0")), .overrun, .datagram(B.newLink(index: 3, name: "wlan0")),
                .overrun, .datagram(B.newLink(index: 4, name: "wwan0")),
            ], perRead: 2)
        var table = InterfaceTable()
        var wakeup = ReaderWakeup()
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) })
        #expect(wakeup.needsResync && wakeup.overruns == 2)
        #expect(table[2]?.name == "eth0", "before the overrun: applied")
        #expect(table[3] == nil && table[4] == nil, "queued behind it: dropped, the dump tells")
        guard case .empty? = try? source.receive() else {
            Issue.record("datagrams left in the source")
            return
        }
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

    /// RTM_NEWNETCONF: eth0's IPv4 settings (the attributes are not read).
    static let netconf = B.message(type: NLMsgType.newNetconf, payload: B.padded([AddressFamily.inet]))

    @Test("A carrier change is an interface change, like any other link change; the same state again is none")
    func carrierChange() throws {
        let (_, up, _) = Self.drain([
            .datagram(Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up))
        ])
        // The kernel revives IPv6 next hops and flushes nexthop objects at a carrier
        // change without a route event: such a pass asks the kernel (ReaderMachineTests).
        let lost = Self.eth0(flags: IFF.up, operState: IFOper.lowerLayerDown)
        let (carrier, _, _) = Self.drain([.datagram(lost)], table: up)
        #expect(carrier.changed && carrier.tableChanged && carrier.cause.interfacesChanged)
        #expect(carrier.cause.routesOnly == nil)
        let again = Self.eth0(flags: IFF.up | IFF.lowerUp | IFF.running, operState: IFOper.up)
        #expect(!Self.drain([.datagram(again)], table: up).0.changed)
    }

    @Test("Nexthop objects: a new, replaced or deleted one makes a pass that asks everything")
    func nexthops() throws {
        let nexthop = B.message(type: NLMsgType.newNexthop, payload: B.padded([AddressFamily.inet]))
        let deleted = B.message(type: NLMsgType.delNexthop, payload: B.padded([AddressFamily.inet]))
        for datagram in [nexthop, deleted] {
            let (wakeup, _, asked) = Self.drain([.datagram(datagram)], destinations: [try IPAddress("192.0.2.1")])
            #expect(wakeup.changed && wakeup.cause.nexthopsChanged && !wakeup.tableChanged && asked == 0)
            #expect(wakeup.cause.routesOnly == nil)
            #expect(wakeup.cause.isRelevant(toHostAt: []), "hostnames reach their addresses through them too")
        }
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
            #expect(ReaderMachine.statistics(of: wakeup)?.earlyPasses == 1, "counted as an early pass")
            #expect(table[2]?.isUsable != true && asked == [2])
            var next = ReaderWakeup()
            drain(&next)
            #expect(next.messages == 2 && !next.answerLinkLost && !source.holdsReadDatagrams, "the rest, next")
            next.noteDrained(foreignDatagrams: 0)
            #expect(!next.leftReadDatagrams && ReaderMachine.statistics(of: next)?.earlyPasses == 0)
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
        #expect(machine.woke(wakeup, at: .now) == .poll(timeoutMilliseconds: -1), "no pass for a host on the LAN")
        #expect(machine.neighborsUnpublished)
        #expect(machine.woke(ReaderWakeup(), at: .now) == .poll(timeoutMilliseconds: -1), "none on the next wake-up")

        let (rule, _, _) = Self.drain(
            [
                .datagram(
                    B.message(
                        type: NLMsgType.newRule, payload: B.rtmsg(family: AddressFamily.inet, destinationLength: 0)))
            ])
        #expect(!rule.tableChanged && !rule.cause.interfacesChanged)
        #expect(machine.woke(rule, at: .now) == .plan(rule.cause, publishes: true), "the waiting change is published")
        #expect(!machine.neighborsUnpublished)
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
        #expect(!wakeup.tableChanged && !wakeup.cause.interfacesChanged)
        #expect(!wakeup.cause.isRelevant(toHostAt: [try IPAddress("203.0.113.1")]), "hostnames need not re-resolve")
        var machine = ReaderMachine()
        #expect(machine.woke(wakeup, at: .now) == .plan(wakeup.cause, publishes: true))

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
        let unrelated = ScriptedEventSource.Item.datagram(Self.route([10, 0, 0, 0], length: 24))
        let source = ScriptedEventSource(Array(repeating: unrelated, count: ReaderDrain.drainLimit + 5))
        var table = InterfaceTable()
        var wakeup = ReaderWakeup()
        ReaderDrain.drain(
            source, into: &table, wakeup: &wakeup, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) })
        #expect(source.receives == ReaderDrain.drainLimit)
        #expect(wakeup.messages == ReaderDrain.drainLimit)

        // Discarding after an overrun is bounded alike.
        let overrun = ScriptedEventSource([.overrun] + Array(repeating: unrelated, count: ReaderDrain.drainLimit + 5))
        var after = ReaderWakeup()
        ReaderDrain.drain(
            overrun, into: &table, wakeup: &after, destinations: { _ in [] },
            classify: { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: "/nonexistent")) })
        #expect(overrun.receives == 1 + ReaderDrain.drainLimit && after.messages == 0 && after.needsResync)
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

    @Test("A pass's answers by request, and the links they go out of")
    func answers() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("2001:db8::1"))
        var route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: nil,
            hasGateway: false, preferredSource: nil, priority: nil)
        route.nexthops = [.init(outputInterface: 3, gateway: nil), .init(outputInterface: 4, gateway: nil)]
        let known = KnownAnswers(requests: DistinctRequests([a, b]), results: [.noRoute(errno: 101), .route(route)])
        #expect(known.answer(to: b) == .route(route) && known.answer(to: a) == .noRoute(errno: 101))
        #expect(known.answer(to: c) == nil)
        #expect(known.goOut(of: 3) && known.goOut(of: 4) && !known.goOut(of: 2), "a multipath route's every hop")
    }
}
