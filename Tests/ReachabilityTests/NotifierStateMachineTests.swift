import Reachability
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The pure notification state machine (DESIGN §5), driven by tables of steps.
@Suite struct NotifierStateMachineTests {
    static let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
    static let wlan0 = NetworkInterface(name: "wlan0", index: 3, type: .wifi)

    static let viaEth0 = ReachabilityState(flags: [.reachable], interface: eth0)
    static let directViaEth0 = ReachabilityState(flags: [.reachable, .isDirect], interface: eth0)
    static let viaWlan0 = ReachabilityState(flags: [.reachable], interface: wlan0)
    static let down = ReachabilityState.unreachable

    enum Step: Sendable, CustomStringConvertible {
        case start(ReachabilityState, generation: UInt64)
        case observe(ReachabilityState, generation: UInt64)
        case stop

        var description: String {
            switch self {
            case .start(let state, let generation): "start(\(state.flags), g\(generation))"
            case .observe(let state, let generation): "observe(\(state.flags), g\(generation))"
            case .stop: "stop"
            }
        }
    }

    /// A scenario: each step with the action it must produce (nil: nothing delivered).
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [(Step, NotifierStateMachine.Action?)]
        var testDescription: String { name }
    }

    static func deliver(_ state: ReachabilityState, session: UInt64 = 1) -> NotifierStateMachine.Action {
        .deliver(state, session: session)
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "start delivers the initial state",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0))
            ]),
        Scenario(
            name: "start delivers even an unreachable state",
            steps: [
                (.start(down, generation: 1), deliver(down))
            ]),
        Scenario(
            name: "an identical state is not delivered again",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.observe(viaEth0, generation: 2), nil),
                (.observe(viaEth0, generation: 3), nil),
            ]),
        Scenario(
            name: "a flags change is delivered",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.observe(directViaEth0, generation: 2), deliver(directViaEth0)),
                (.observe(down, generation: 3), deliver(down)),
                (.observe(down, generation: 4), nil),
            ]),
        Scenario(
            name: "an interface change alone is delivered",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.observe(viaWlan0, generation: 2), deliver(viaWlan0)),
            ]),
        Scenario(
            name: "a flap back to the first state is delivered",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.observe(down, generation: 2), deliver(down)),
                (.observe(viaEth0, generation: 3), deliver(viaEth0)),
            ]),
        Scenario(
            name: "an older generation is dropped",
            steps: [
                (.start(viaEth0, generation: 5), deliver(viaEth0)),
                (.observe(down, generation: 4), nil),
                (.observe(directViaEth0, generation: 7), deliver(directViaEth0)),
                (.observe(down, generation: 6), nil),
                (.observe(viaEth0, generation: 0), nil),
            ]),
        Scenario(
            name: "nothing is delivered before start",
            steps: [
                (.observe(viaEth0, generation: 1), nil),
                (.start(down, generation: 2), deliver(down)),
            ]),
        Scenario(
            name: "nothing is delivered after stop",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.stop, nil),
                (.observe(down, generation: 2), nil),
            ]),
        Scenario(
            name: "stop then start delivers again, in a new session",
            steps: [
                (.start(viaEth0, generation: 1), deliver(viaEth0)),
                (.stop, nil),
                (.start(viaEth0, generation: 2), deliver(viaEth0, session: 2)),
                (.observe(down, generation: 3), deliver(down, session: 2)),
            ]),
        Scenario(
            name: "a restart resets the generation",
            steps: [
                (.start(viaEth0, generation: 10), deliver(viaEth0)),
                (.stop, nil),
                (.start(down, generation: 3), deliver(down, session: 2)),
                (.observe(viaEth0, generation: 4), deliver(viaEth0, session: 2)),
            ]),
    ]

    @Test(arguments: scenarios)
    func scenario(_ scenario: Scenario) {
        var machine = NotifierStateMachine()
        for (index, (step, expected)) in scenario.steps.enumerated() {
            let action: NotifierStateMachine.Action?
            switch step {
            case .start(let state, let generation): action = machine.start(with: state, generation: generation)
            case .observe(let state, let generation): action = machine.observe(state, generation: generation)
            case .stop:
                machine.stop()
                action = nil
            }
            #expect(action == expected, "step \(index): \(step)")
        }
    }

    @Test func currentTracksTheNewestStateEvenWhenNothingIsDelivered() {
        var machine = NotifierStateMachine()
        #expect(machine.current == nil)
        #expect(!machine.isRunning)
        _ = machine.start(with: Self.viaEth0, generation: 1)
        #expect(machine.current == Self.viaEth0)
        #expect(machine.isRunning)
        #expect(machine.observe(Self.viaEth0, generation: 2) == nil)
        #expect(machine.observe(Self.down, generation: 1) == nil)
        #expect(machine.current == Self.viaEth0, "an older generation must not overwrite the cache")
        _ = machine.observe(Self.down, generation: 3)
        #expect(machine.current == Self.down)
        #expect(machine.lastDelivered == Self.down)
        machine.stop()
        #expect(machine.current == nil)
        #expect(!machine.isRunning)
    }

    @Test func acceptsOnlyTheCurrentSessionWhileRunning() {
        var machine = NotifierStateMachine()
        #expect(!machine.accepts(session: 0))
        #expect(!machine.accepts(session: 1))

        _ = machine.start(with: Self.viaEth0, generation: 1)
        #expect(machine.session == 1)
        #expect(machine.accepts(session: 1))
        #expect(!machine.accepts(session: 0))
        #expect(!machine.accepts(session: 2))

        machine.stop()
        #expect(!machine.accepts(session: 1), "a delivery queued before stop must be dropped")

        _ = machine.start(with: Self.viaEth0, generation: 2)
        #expect(machine.session == 2)
        #expect(!machine.accepts(session: 1), "a delivery from the old session must be dropped")
        #expect(machine.accepts(session: 2))
    }

    @Test func neverTwoIdenticalDeliveriesInARow() {
        // A long seeded walk over a few states and generations, some of them stale.
        let states = [Self.viaEth0, Self.directViaEth0, Self.viaWlan0, Self.down]
        var random = SeededGenerator(seed: 42)
        var machine = NotifierStateMachine()
        var delivered: [ReachabilityState] = []
        if case .deliver(let state, _) = machine.start(with: Self.down, generation: 0) { delivered.append(state) }
        var generation: UInt64 = 0
        for _ in 0..<2_000 {
            generation += UInt64.random(in: 0...2, using: &random)
            let stale = Bool.random(using: &random) && generation > 0
            let observed = stale ? generation - 1 : generation
            let state = states.randomElement(using: &random)!
            if case .deliver(let state, _) = machine.observe(state, generation: observed) { delivered.append(state) }
        }
        #expect(delivered.count > 10)
        for (previous, next) in zip(delivered, delivered.dropFirst()) {
            #expect(previous != next)
        }
        #expect(delivered.last == machine.current)
    }
}
