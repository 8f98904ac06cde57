/// Decides what a notifier delivers. Pure: it returns actions, and its owner
/// performs them after unlocking.
///
/// - `start` always delivers the current state (again after stop + start).
/// - After that only a change of flags or output interface is delivered: never
///   two identical deliveries in a row.
/// - Evaluations carry the monitor's generation; an evaluation older than one
///   already applied is dropped, so a slow lookup cannot overwrite a newer state.
/// - Each start opens a new session; a delivery queued in an old session is
///   dropped when it comes to run.
struct NotifierStateMachine: Sendable, Equatable {
    enum Action: Sendable, Equatable {
        case deliver(ReachabilityState, session: UInt64)
    }

    private(set) var session: UInt64 = 0
    private(set) var isRunning = false
    /// The newest evaluated state while running: what the synchronous getters read.
    private(set) var current: ReachabilityState?
    private(set) var lastDelivered: ReachabilityState?
    private var generation: UInt64 = 0

    init() {}

    /// Starts a session with the first evaluated state, which is always delivered.
    mutating func start(with initial: ReachabilityState, generation: UInt64) -> Action {
        session &+= 1
        isRunning = true
        current = initial
        lastDelivered = initial
        self.generation = generation
        return .deliver(initial, session: session)
    }

    /// Applies a newer evaluation; returns a delivery when it changed what the
    /// user last saw.
    mutating func observe(_ state: ReachabilityState, generation: UInt64) -> Action? {
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
        current = nil
        lastDelivered = nil
    }

    /// Whether a delivery queued in `session` should still run.
    func accepts(session: UInt64) -> Bool { isRunning && session == self.session }
}
