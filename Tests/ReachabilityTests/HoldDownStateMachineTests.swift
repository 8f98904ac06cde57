import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The hold-down of the delivery state machine (`HoldDown.md`), on a simulated clock:
/// the machine reads no clock, so each step says when it happens, and the armed
/// wake-ups fire at their deadlines as the simulated time passes them. Each rule of
/// the hold-down has a scenario that fails without it.
@Suite struct HoldDownStateMachineTests {
    static let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
    static let wlan0 = NetworkInterface(name: "wlan0", index: 3, type: .wifi)
    static let up = ReachabilityState(flags: [.reachable], interface: eth0)
    static let viaWlan0 = ReachabilityState(flags: [.reachable], interface: wlan0)
    static let down = ReachabilityState.unreachable

    /// The simulated clock's zero.
    static let origin = ContinuousClock.now

    enum Event: Sendable {
        case start(ReachabilityState)
        case observe(ReachabilityState)
        case setHoldDown(Duration?)
        case stop
    }

    /// A scenario: events at milliseconds from the origin (in order), the time to run
    /// the clock to at the end, and every delivery expected, with when it happens.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var holdDown: Duration? = .seconds(2)
        var events: [(Int, Event)]
        var runUntil = 20_000
        var deliveries: [(ReachabilityState, at: Int)]
        var testDescription: String { name }
    }

    /// The machine with an owner that arms each wake-up on the simulated clock.
    struct Driver {
        var machine = NotifierStateMachine()
        var now = HoldDownStateMachineTests.origin
        var timers: [(deadline: ContinuousClock.Instant, token: UInt64)] = []
        var delivered: [(state: ReachabilityState, at: ContinuousClock.Instant, session: UInt64)] = []
        var wakeUpsArmed = 0
        var generation: UInt64 = 0

        mutating func perform(_ action: NotifierStateMachine.Action?) {
            switch action {
            case .deliver(let state, let session): delivered.append((state, now, session))
            case .wake(let deadline, let token):
                wakeUpsArmed += 1
                timers.append((deadline, token))
            case nil: break
            }
        }

        /// Runs the clock to `time`, firing each wake-up due by then at its deadline.
        mutating func run(until time: ContinuousClock.Instant) {
            while let next = timers.indices.min(by: { timers[$0].deadline < timers[$1].deadline }),
                timers[next].deadline <= time
            {
                let timer = timers.remove(at: next)
                now = max(now, timer.deadline)
                perform(machine.wake(timer.token, at: now))
            }
            now = max(now, time)
        }

        mutating func apply(_ event: Event) {
            generation += 1
            switch event {
            case .start(let state): perform(machine.start(with: state, generation: generation))
            case .observe(let state): perform(machine.observe(state, generation: generation, at: now))
            case .setHoldDown(let holdDown): perform(machine.setHoldDown(holdDown, at: now))
            case .stop: machine.stop()
            }
        }
    }

    static func at(_ milliseconds: Int) -> ContinuousClock.Instant { origin + .milliseconds(milliseconds) }

    /// A link flapping every 100 ms from `from` ms for `count` changes, starting with down.
    static func flapping(from: Int, count: Int) -> [(Int, Event)] {
        (0..<count).map { (from + 100 * $0, .observe($0.isMultiple(of: 2) ? down : up)) }
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "the start delivers at once, even with a hold-down",
            events: [(0, .start(down))],
            deliveries: [(down, at: 0)]),
        Scenario(
            name: "rule: a change back within the hold-down is never delivered",
            events: [(0, .start(up)), (100, .observe(down)), (300, .observe(up))],
            deliveries: [(up, at: 0)]),
        Scenario(
            name: "rule: a change that lasts is delivered once, hold-down after it",
            events: [(0, .start(up)), (100, .observe(down)), (1_500, .observe(down)), (5_000, .observe(down))],
            deliveries: [(up, at: 0), (down, at: 2_100)]),
        Scenario(
            name: "both directions are held: the return is delivered hold-down after it too",
            events: [(0, .start(up)), (100, .observe(down)), (3_000, .observe(up))],
            deliveries: [(up, at: 0), (down, at: 2_100), (up, at: 5_000)]),
        Scenario(
            name: "rule: measured from the latest change, A→B→A→B",
            events: [(0, .start(up)), (100, .observe(down)), (500, .observe(up)), (900, .observe(down))],
            deliveries: [(up, at: 0), (down, at: 2_900)]),
        Scenario(
            name: "rule: measured from the latest change, A→B→C delivers C hold-down after it",
            events: [(0, .start(up)), (100, .observe(down)), (1_000, .observe(viaWlan0))],
            deliveries: [(up, at: 0), (viaWlan0, at: 3_000)]),
        Scenario(
            name: "rule: the same state evaluated again does not restart the hold-down",
            events: [(0, .start(up)), (100, .observe(down)), (1_000, .observe(down)), (2_000, .observe(down))],
            deliveries: [(up, at: 0), (down, at: 2_100)]),
        Scenario(
            name: "flapping at 10 Hz for 3 s, settling where it was: nothing delivered",
            events: [(0, .start(up))] + flapping(from: 100, count: 30),
            deliveries: [(up, at: 0)]),
        Scenario(
            name: "flapping at 10 Hz for 3 s, settling down: delivered once, hold-down after it settled",
            events: [(0, .start(up))] + flapping(from: 100, count: 31),
            deliveries: [(up, at: 0), (down, at: 5_100)]),
        Scenario(
            name: "rule: nothing is delivered after a stop during the hold-down",
            events: [(0, .start(up)), (100, .observe(down)), (1_000, .stop)],
            deliveries: [(up, at: 0)]),
        Scenario(
            name: "rule: a start after a stop during the hold-down starts afresh; the old wake-up does nothing",
            events: [
                (0, .start(up)), (100, .observe(down)), (500, .stop), (600, .start(down)), (700, .observe(up)),
            ],
            deliveries: [(up, at: 0), (down, at: 600), (up, at: 2_700)]),
        Scenario(
            name: "rule: lengthened while held, the change is delivered at its new deadline",
            holdDown: .seconds(1),
            events: [(0, .start(up)), (100, .observe(down)), (500, .setHoldDown(.seconds(3)))],
            deliveries: [(up, at: 0), (down, at: 3_100)]),
        Scenario(
            name: "rule: shortened while held, the change is delivered at its new deadline",
            events: [(0, .start(up)), (100, .observe(down)), (500, .setHoldDown(.seconds(1)))],
            deliveries: [(up, at: 0), (down, at: 1_100)]),
        Scenario(
            name: "rule: shortened below what the held change has lasted, it is delivered at once",
            events: [(0, .start(up)), (100, .observe(down)), (1_000, .setHoldDown(.milliseconds(500)))],
            deliveries: [(up, at: 0), (down, at: 1_000)]),
        Scenario(
            name: "rule: turned off while held, the change is delivered at once, and later ones too",
            events: [(0, .start(up)), (100, .observe(down)), (500, .setHoldDown(nil)), (600, .observe(up))],
            deliveries: [(up, at: 0), (down, at: 500), (up, at: 600)]),
        Scenario(
            name: "rule: zero is off",
            holdDown: .zero,
            events: [(0, .start(up)), (100, .observe(down)), (200, .observe(up))],
            deliveries: [(up, at: 0), (down, at: 100), (up, at: 200)]),
        Scenario(
            name: "off by default: every change at once",
            holdDown: nil,
            events: [(0, .start(up)), (100, .observe(down)), (200, .observe(up))],
            deliveries: [(up, at: 0), (down, at: 100), (up, at: 200)]),
        Scenario(
            name: "turned on while running, it holds the next change",
            holdDown: nil,
            events: [(0, .start(up)), (50, .setHoldDown(.seconds(2))), (100, .observe(down))],
            deliveries: [(up, at: 0), (down, at: 2_100)]),
        Scenario(
            name: "kept across stop and start",
            events: [(0, .start(up)), (100, .stop), (200, .start(up)), (300, .observe(down))],
            deliveries: [(up, at: 0), (up, at: 200), (down, at: 2_300)]),
    ]

    @Test(arguments: scenarios)
    func scenario(_ scenario: Scenario) {
        var driver = Driver()
        #expect(driver.machine.setHoldDown(scenario.holdDown, at: driver.now) == nil)
        for (milliseconds, event) in scenario.events {
            driver.run(until: Self.at(milliseconds))
            driver.apply(event)
        }
        driver.run(until: Self.at(scenario.runUntil))
        #expect(driver.delivered.map { $0.state } == scenario.deliveries.map { $0.0 })
        #expect(
            driver.delivered.map { $0.at } == scenario.deliveries.map { Self.at($0.at) },
            "when: \(driver.delivered.map { $0.at - Self.origin })")
    }

    @Test("rule: one wake-up armed at a time, not one per change")
    func oneWakeUpAtATime() {
        var driver = Driver()
        _ = driver.machine.setHoldDown(.seconds(2), at: driver.now)
        driver.apply(.start(Self.up))
        for (milliseconds, event) in Self.flapping(from: 100, count: 30) {
            driver.run(until: Self.at(milliseconds))
            driver.apply(event)
            #expect(driver.timers.count <= 1)
        }
        driver.run(until: Self.at(20_000))
        // Armed at the first change, then again at each deadline the flapping moved on.
        #expect(driver.wakeUpsArmed <= 3, "\(driver.wakeUpsArmed) wake-ups for 30 changes")
    }

    @Test("rule: what the getters read (current) is the delivered state while a change is held")
    func currentIsTheDeliveredState() {
        var driver = Driver()
        _ = driver.machine.setHoldDown(.seconds(2), at: driver.now)
        driver.apply(.start(Self.up))
        driver.run(until: Self.at(100))
        driver.apply(.observe(Self.down))
        #expect(driver.machine.current == Self.up)
        #expect(driver.machine.held?.state == Self.down)
        driver.run(until: Self.at(2_099))
        #expect(driver.machine.current == Self.up)
        driver.run(until: Self.at(2_100))
        #expect(driver.machine.current == Self.down)
        #expect(driver.machine.held == nil)
    }

    @Test("rule: a wake-up fired early (another clock) arms again and delivers at the deadline")
    func earlyWakeUpArmsAgain() {
        var machine = NotifierStateMachine()
        _ = machine.setHoldDown(.seconds(2), at: Self.origin)
        _ = machine.start(with: Self.up, generation: 1)
        guard case .wake(let deadline, let token) = machine.observe(Self.down, generation: 2, at: Self.at(100)) else {
            Issue.record("no wake-up armed")
            return
        }
        #expect(deadline == Self.at(2_100))
        guard case .wake(let again, let next) = machine.wake(token, at: Self.at(2_099)) else {
            Issue.record("no wake-up armed again")
            return
        }
        #expect(again == deadline)
        #expect(machine.wake(token, at: Self.at(2_100)) == nil, "the first token is spent")
        #expect(machine.wake(next, at: Self.at(2_100)) == .deliver(Self.down, session: 1))
    }

    /// Counts reads of the clock.
    final class ClockReads: @unchecked Sendable {
        var count = 0
        func now() -> ContinuousClock.Instant {
            count += 1
            return HoldDownStateMachineTests.origin
        }
    }

    @Test("rule: without a hold-down the event path reads no clock")
    func noClockWithoutHoldDown() {
        let reads = ClockReads()
        var machine = NotifierStateMachine()
        _ = machine.start(with: Self.up, generation: 1)
        #expect(machine.observe(Self.down, generation: 2, at: reads.now()) == .deliver(Self.down, session: 1))
        _ = machine.setHoldDown(.zero, at: reads.now())
        #expect(machine.observe(Self.up, generation: 3, at: reads.now()) == .deliver(Self.up, session: 1))
        #expect(reads.count == 0)
        _ = machine.setHoldDown(.seconds(1), at: reads.now())
        _ = machine.observe(Self.down, generation: 4, at: reads.now())
        #expect(reads.count == 1, "read once the hold-down is on")
    }
}
