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
/// The state machine of a `Reachability` notifier.
typealias NotifierStateMachine = DeliveryStateMachine<ReachabilityState>

struct DeliveryStateMachine<State: Sendable & Equatable>: Sendable, Equatable {
    enum Action: Sendable, Equatable {
        case deliver(State, session: UInt64)
    }

    private(set) var session: UInt64 = 0
    private(set) var isRunning = false
    /// The newest evaluated state while running: what the synchronous getters read.
    private(set) var current: State?
    private(set) var lastDelivered: State?
    private var generation: UInt64 = 0
    private(set) var isStarting = false
    /// Identifies the start in progress: a start that was stopped and superseded can't complete.
    private var startToken: UInt64 = 0
    private var pending: (state: State, generation: UInt64)?

    init() {}

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.session == rhs.session && lhs.isRunning == rhs.isRunning && lhs.current == rhs.current
            && lhs.lastDelivered == rhs.lastDelivered && lhs.generation == rhs.generation
            && lhs.isStarting == rhs.isStarting && lhs.startToken == rhs.startToken
            && lhs.pending?.state == rhs.pending?.state
            && lhs.pending?.generation == rhs.pending?.generation
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
        current = first.state
        lastDelivered = first.state
        self.generation = first.generation
        return .deliver(first.state, session: session)
    }

    /// Applies a newer evaluation; returns a delivery when it changed what the
    /// user last saw.
    mutating func observe(_ state: State, generation: UInt64) -> Action? {
        if isStarting {
            if generation >= (pending?.generation ?? 0) { pending = (state, generation) }
            return nil
        }
        guard isRunning, generation >= self.generation else { return nil }
        self.generation = generation
        current = state
        guard state != lastDelivered else { return nil }
        lastDelivered = state
        return .deliver(state, session: session)
    }

    /// Ends the session. Deliveries already queued for it are dropped.
    mutating func stop() {
        isRunning = false
        isStarting = false
        pending = nil
        current = nil
        lastDelivered = nil
    }

    /// Running, or starting.
    var isActive: Bool { isRunning || isStarting }

    /// Whether a delivery queued in `session` should still run.
    func accepts(session: UInt64) -> Bool { isRunning && session == self.session }
}
