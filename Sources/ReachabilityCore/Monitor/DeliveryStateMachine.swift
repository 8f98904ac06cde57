@_spi(Testing) import ReachabilityBase

/// Decides what a notifier (Reachability or PathMonitor) delivers. Pure: it returns actions, and its owner
/// performs them after unlocking.
///
/// - `start` always delivers the current state (again after stop + start).
/// - After that only a change of flags or output interface is delivered: never
///   two identical deliveries in a row.
/// - Evaluations carry the monitor's generation; an evaluation older than one
///   already applied is dropped, so a slow lookup cannot overwrite a newer state.
/// - Each start opens a new session; a delivery queued in an old session is
///   dropped when it comes to run.
/// - Between `begin()` and `start`, the owner is registered with the monitor
///   but has not finished its first evaluation. An evaluation that arrives then
///   is kept, and `start` uses it if it is newer than the first one, so a change
///   that races with startup is never lost.
/// - With a hold-down (``holdDown``, off by default), a change is delivered only
///   once the state has stayed away from the delivered one for the hold-down,
///   measured from the latest change; a change back within it is never delivered.
///   The machine reads no clock: its owner passes the time, and arms a timer for
///   each ``Action/wake(at:token:)`` it returns (see `HoldDown.md`).
/// The state machine of a `Reachability` notifier.
typealias NotifierStateMachine = DeliveryStateMachine<ReachabilityState>

struct DeliveryStateMachine<State: Sendable & Equatable>: Sendable, Equatable {
    enum Action: Sendable, Equatable {
        case deliver(State, session: UInt64)
        /// Call ``wake(_:at:)`` with `token` at `deadline` (a change is being held down).
        case wake(at: ContinuousClock.Instant, token: UInt64)
    }

    private(set) var session: UInt64 = 0
    private(set) var isRunning = false
    /// The state delivered last while running: what the synchronous getters read.
    /// Without a hold-down, the newest evaluated state.
    var current: State? { lastDelivered }
    private(set) var lastDelivered: State?
    private var generation: UInt64 = 0
    private(set) var isStarting = false
    /// Identifies the start in progress: a start that was stopped and superseded can't complete.
    private var startToken: UInt64 = 0
    private var pending: (state: State, generation: UInt64)?
    /// How long a change must last before it is delivered; nil or ≤ 0: off. A
    /// setting, kept across stop and start.
    private(set) var holdDown: Duration?
    /// The change being held down: the newest state (which differs from
    /// ``lastDelivered``) and when the state last changed to it.
    private(set) var held: (state: State, since: ContinuousClock.Instant)?
    /// The wake-up the owner has armed and not yet reported, if any.
    private var armed: (token: UInt64, deadline: ContinuousClock.Instant)?
    private var wakeToken: UInt64 = 0

    init() {}

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.session == rhs.session && lhs.isRunning == rhs.isRunning && lhs.current == rhs.current
            && lhs.lastDelivered == rhs.lastDelivered && lhs.generation == rhs.generation
            && lhs.isStarting == rhs.isStarting && lhs.startToken == rhs.startToken
            && lhs.pending?.state == rhs.pending?.state
            && lhs.pending?.generation == rhs.pending?.generation && lhs.holdDown == rhs.holdDown
            && lhs.held?.state == rhs.held?.state && lhs.held?.since == rhs.held?.since
            && lhs.armed?.token == rhs.armed?.token && lhs.armed?.deadline == rhs.armed?.deadline
            && lhs.wakeToken == rhs.wakeToken
    }

    /// The hold-down in force: nil when off.
    private var activeHoldDown: Duration? {
        guard let holdDown, holdDown > .zero else { return nil }
        return holdDown
    }

    /// The owner has registered with the monitor and is evaluating its first state.
    /// Returns the token that `start` must present.
    mutating func begin() -> UInt64 {
        isStarting = true
        pending = nil
        startToken &+= 1
        return startToken
    }

    /// The token of the start in progress, if any.
    var pendingStartToken: UInt64? { isStarting ? startToken : nil }

    /// Whether the start identified by `token` is still the one in progress.
    func isStarting(_ token: UInt64) -> Bool { isStarting && token == startToken }

    /// Starts a session with the first evaluated state (or a newer one that
    /// arrived since `begin()`), which is always delivered. Without a `begin()`
    /// (or with the token of the start in progress) it always starts.
    mutating func start(with initial: State, generation: UInt64, token: UInt64? = nil) -> Action? {
        if let token, !isStarting(token) { return nil }
        var first = (state: initial, generation: generation)
        if let pending, pending.generation > generation { first = pending }
        isStarting = false
        pending = nil
        session &+= 1
        isRunning = true
        lastDelivered = first.state
        held = nil
        self.generation = first.generation
        return .deliver(first.state, session: session)
    }

    /// Applies a newer evaluation; returns a delivery when it changed what the
    /// user last saw. With a hold-down, a change is held instead (a wake-up to arm,
    /// or nothing while one is armed), and a change back to the delivered state
    /// drops the held one. `now` is read only with a hold-down.
    mutating func observe(_ state: State, generation: UInt64) -> Action? {
        // Its own function, under the name Scripts/link-order.txt knows (the event path's).
        observe(state, generation: generation, at: .now)
    }

    /// ``observe(_:generation:)`` at `now` (tests pass a simulated clock).
    mutating func observe(
        _ state: State, generation: UInt64, at now: @autoclosure () -> ContinuousClock.Instant
    ) -> Action? {
        if isStarting {
            if generation >= (pending?.generation ?? 0) { pending = (state, generation) }
            return nil
        }
        guard isRunning, generation >= self.generation else { return nil }
        self.generation = generation
        if let holdDown = activeHoldDown { return hold(state, for: holdDown, at: now()) }
        guard state != lastDelivered else { return nil }
        lastDelivered = state
        return .deliver(state, session: session)
    }

    private mutating func hold(_ state: State, for holdDown: Duration, at now: ContinuousClock.Instant) -> Action? {
        guard state != lastDelivered else {
            held = nil  // Back within the hold-down: never delivered. An armed wake-up finds nothing.
            return nil
        }
        // Measured from the latest change: a new state starts the hold-down again.
        if held?.state != state { held = (state, now) }
        return wakeUp(holdDown: holdDown, at: now)
    }

    /// Delivers the held change if it has lasted `holdDown` by `now`; else a wake-up
    /// at its deadline, unless one armed already comes no later.
    private mutating func wakeUp(holdDown: Duration, at now: ContinuousClock.Instant) -> Action? {
        guard let held else { return nil }
        let deadline = held.since + holdDown
        guard deadline > now else {
            self.held = nil
            lastDelivered = held.state
            return .deliver(held.state, session: session)
        }
        // An earlier wake-up arms the next one itself (no timer per flap).
        if let armed, armed.deadline <= deadline { return nil }
        wakeToken &+= 1
        armed = (wakeToken, deadline)
        return .wake(at: deadline, token: wakeToken)
    }

    /// The wake-up `token` is due: delivers the held change if it has lasted the
    /// hold-down, or arms the next wake-up. A wake-up superseded or of a stopped
    /// session does nothing.
    mutating func wake(_ token: UInt64, at now: ContinuousClock.Instant) -> Action? {
        guard isRunning, let armed, armed.token == token else { return nil }
        self.armed = nil
        return settle(at: now)
    }

    /// Changes the hold-down. A change held now is measured against the new one
    /// from when it happened: delivered at once if it has lasted that long (or the
    /// hold-down is turned off), else at its new deadline.
    mutating func setHoldDown(_ holdDown: Duration?, at now: @autoclosure () -> ContinuousClock.Instant = .now)
        -> Action?
    {
        self.holdDown = holdDown
        guard isRunning, held != nil else { return nil }
        return settle(at: now())
    }

    private mutating func settle(at now: ContinuousClock.Instant) -> Action? {
        guard let held else { return nil }
        guard let holdDown = activeHoldDown else {
            self.held = nil
            lastDelivered = held.state
            return .deliver(held.state, session: session)
        }
        return wakeUp(holdDown: holdDown, at: now)
    }

    /// Ends the session. Deliveries already queued for it are dropped.
    mutating func stop() {
        isRunning = false
        isStarting = false
        pending = nil
        lastDelivered = nil
        held = nil
        armed = nil
    }

    /// Running, or starting.
    var isActive: Bool { isRunning || isStarting }

    /// Whether a delivery queued in `session` should still run.
    func accepts(session: UInt64) -> Bool { isRunning && session == self.session }
}
