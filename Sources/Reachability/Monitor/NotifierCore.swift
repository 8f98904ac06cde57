import Dispatch
public import Foundation
import Synchronization

/// The part of a `Reachability` the monitor holds: its target, its state
/// machine, its callbacks. It holds the public instance weakly, so dropping the
/// instance stops it even while the monitor is running.
final class NotifierCore: MonitorClient {
    struct Storage {
        weak var owner: Reachability?
        var machine = NotifierStateMachine()
        var whenReachable: Reachability.NetworkReachable?
        var whenUnreachable: Reachability.NetworkReachable?
        var queue: DispatchQueue
        var monitor: NetlinkMonitor?
    }

    let target: Target
    let environment: NetworkEnvironment
    let storage: Mutex<Storage>

    init(target: Target, environment: NetworkEnvironment, queue: DispatchQueue) {
        self.target = target
        self.environment = environment
        self.storage = Mutex(Storage(queue: queue))
    }

    /// The state the getters report: cached while running, else evaluated afresh.
    var state: ReachabilityState {
        if let cached = storage.withLock({ $0.machine.current }) { return cached }
        return (try? OneShotEvaluator.evaluate(target, environment: environment)) ?? .unreachable
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    func start() throws(ReachabilityError) {
        let token = storage.withLock { storage -> UInt64? in
            guard !storage.machine.isRunning, !storage.machine.isStarting else { return nil }
            return storage.machine.begin()
        }
        guard let token else { return }
        let monitor: NetlinkMonitor
        let initial: (ReachabilityState, UInt64)
        do throws(ReachabilityError) {
            monitor = try MonitorRegistry.register(self, environment: environment)
            do throws(ReachabilityError) {
                initial = try monitor.evaluate(target)
            } catch {
                MonitorRegistry.unregister(self, from: monitor)
                throw error
            }
        } catch {
            storage.withLock { if $0.machine.isStarting(token) { $0.machine.stop() } }
            throw error
        }
        let stoppedMeanwhile = storage.withLock { storage -> Bool in
            // stopNotifier() ran while we evaluated: don't start a session it already ended.
            guard let action = storage.machine.start(with: initial.0, generation: initial.1, token: token) else {
                return true
            }
            storage.monitor = monitor
            schedule(action, on: storage.queue)
            return false
        }
        if stoppedMeanwhile { MonitorRegistry.unregister(self, from: monitor) }
    }

    func stop() {
        let monitor = storage.withLock { storage -> NetlinkMonitor? in
            storage.machine.stop()
            defer { storage.monitor = nil }
            return storage.monitor
        }
        if let monitor { MonitorRegistry.unregister(self, from: monitor) }
    }

    func monitor(didEvaluate state: ReachabilityState, generation: UInt64) {
        storage.withLock { storage in
            guard let action = storage.machine.observe(state, generation: generation) else { return }
            // Enqueued under the lock so deliveries keep their order; no user code runs here.
            schedule(action, on: storage.queue)
        }
    }

    private func schedule(_ action: NotifierStateMachine.Action, on queue: DispatchQueue) {
        guard case .deliver(let state, let session) = action else { return }
        queue.async { [self] in deliver(state, session: session) }
    }

    /// Runs on the notification queue, with no lock held while user code runs.
    private func deliver(_ state: ReachabilityState, session: UInt64) {
        let pending = storage.withLock { storage -> (Reachability, Reachability.NetworkReachable?)? in
            guard storage.machine.accepts(session: session), let owner = storage.owner else { return nil }
            let reachable = NetworkStatus(flags: state.flags) != .notReachable
            return (owner, reachable ? storage.whenReachable : storage.whenUnreachable)
        }
        guard let (owner, callback) = pending else { return }
        callback?(owner)
        NotificationCenter.default.post(name: .reachabilityChanged, object: owner)
    }
}

extension Notification.Name {
    /// Posted on the instance's ``Reachability/notificationQueue`` with the
    /// ``Reachability`` instance as `object`: once when the notifier starts, then
    /// whenever its flags or output interface change.
    public static let reachabilityChanged = Notification.Name("reachabilityChanged")
}
