import CNetlink
import Glibc
import NIOCore
import NIOPosix
import Reachability
@_spi(Testing) import ReachabilitySystem

/// The event loops probes run on, one entry per watched namespace, shared by every
/// ``Connectivity`` and one-off check there: made by the first user, shut down
/// after the last one leaves, so a stopped notifier holds no sockets or threads.
///
/// For the process's own namespace probes run on NIO's shared event loops. For
/// another namespace the entry has an event loop thread of its own that enters that
/// namespace before anything else runs on it: every probe socket is made on that
/// thread (``ProbeTransport``), so probes leave from inside the namespace, and no
/// other thread moves. That thread resumes no task and ends no group while it is
/// there (see `NetworkEnvironment.enterNetworkNamespaceOnCurrentThread()`): probes
/// await its futures from one of NIO's shared loops (``ProbeClient/value(_:)``), and
/// it goes back before its group shuts down.
final class ProbeClients: Sendable {
    static let shared = ProbeClients()

    private struct Entry {
        let client: ProbeClient
        let group: MultiThreadedEventLoopGroup?
        var users: Int
    }

    private let entries = LockedValue<[String: Entry]>([:])

    /// The name of the event loop thread of a client for another namespace.
    static let namespaceThreadName = "connectivity-ns"

    private static func key(_ environment: NetworkEnvironment) -> String {
        // A simulated network's entry is never made: its checks find none, and release none of another's.
        if let simulation = environment.simulation { return "simulated \(ObjectIdentifier(simulation))" }
        return environment.networkNamespacePath ?? ""
    }

    /// The client for `environment`, counting one more user; pair with ``release(_:)``.
    /// Never blocks: for another namespace, entering it is queued on the client's
    /// event loop ahead of any probe, and probes wait for ``ProbeClient/entered``.
    ///
    /// Throws ``ConnectivityError/Code/systemCall`` (`EMFILE`, `ENFILE`) when the
    /// descriptors a new client's event loops need can't be made: NIO would trap
    /// making them.
    func lease(_ environment: NetworkEnvironment) throws(ConnectivityError) -> ProbeClient {
        if let client = leaseExisting(environment) { return client }
        let key = Self.key(environment)
        var group: MultiThreadedEventLoopGroup?
        let client: ProbeClient
        // NIO's shared group is made on its first use anywhere in the process:
        // until this type has used it, count on making all its loops.
        let shared = Self.singletonUsed.withLock { $0 } ? 0 : Self.singletonLoopCount
        if environment.networkNamespacePath != nil {
            try Self.checkDescriptors(eventLoops: shared + 1)
            try Self.checkThreads(eventLoops: shared + 1)
            let home = Self.sharedGroup().next()
            let own = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let entered = own.next().submit {
                let origin = try environment.enterNetworkNamespaceOnCurrentThread()
                // Named so that it is known for what it is: a thread of the library
                // that lives in another namespace on purpose, running only probes.
                _ = cnl_set_thread_name(Self.namespaceThreadName)
                return origin
            }
            group = own
            client = ProbeClient(loops: own, entered: entered, home: home)
        } else {
            try Self.checkDescriptors(eventLoops: shared)
            try Self.checkThreads(eventLoops: shared)
            let loops = Self.sharedGroup()
            client = ProbeClient(loops: loops, entered: loops.next().makeSucceededFuture(nil), home: nil)
        }
        // Another user may have made one meanwhile: keep theirs, drop ours.
        let (chosen, spare) = entries.withLock { entries -> (ProbeClient, Entry?) in
            if var existing = entries[key] {
                existing.users += 1
                entries[key] = existing
                return (existing.client, Entry(client: client, group: group, users: 0))
            }
            entries[key] = Entry(client: client, group: group, users: 1)
            return (client, nil)
        }
        if let spare { Self.shutDown(spare) }
        return chosen
    }

    /// The client for `environment` with one more user, if one exists (nil
    /// otherwise: nothing is made). Pair with ``release(_:)``.
    func leaseExisting(_ environment: NetworkEnvironment) -> ProbeClient? {
        let key = Self.key(environment)
        return entries.withLock { entries -> ProbeClient? in
            guard var entry = entries[key] else { return nil }
            entry.users += 1
            entries[key] = entry
            return entry.client
        }
    }

    /// Whether this type has used `MultiThreadedEventLoopGroup.singleton` (which
    /// then exists for the rest of the process).
    private static let singletonUsed = LockedValue(false)

    /// NIO's shared group, noted as used.
    private static func sharedGroup() -> MultiThreadedEventLoopGroup {
        singletonUsed.withLock { $0 = true }
        return MultiThreadedEventLoopGroup.singleton
    }

    /// The loops of NIO's shared group, as NIO counts them (its environment
    /// variable, else the cores) — read without asking NIO, whose getter fixes the
    /// value for good.
    private static var singletonLoopCount: Int {
        let configured = getenv("NIO_SINGLETON_GROUP_LOOP_COUNT").flatMap { Int(String(cString: $0)) }
        return max(1, min(1024, configured ?? System.coreCount))
    }

    /// Descriptors made and closed again beyond an event loop's three: room for
    /// the probes' sockets.
    static let spareDescriptors = 4

    /// Makes, then closes, as many descriptors as `eventLoops` new NIO event loops
    /// need (each an epoll instance, an eventfd and a timerfd: three) and a few
    /// spare ones; throws ``ConnectivityError/Code/systemCall`` with the errno
    /// (`EMFILE`, `ENFILE`) when one can't be made. NIO traps (SIGILL) instead of
    /// throwing when a loop's descriptors can't be made, so this is asked first.
    /// Any descriptor counts against the limits alike: eventfds stand in for all.
    static func checkDescriptors(eventLoops: Int) throws(ConnectivityError) {
        let needed = eventLoops * 3 + spareDescriptors
        var made: [Int32] = []
        made.reserveCapacity(needed)
        let system = SystemCalls.live
        defer { for fd in made { system.close(fd) } }
        for _ in 0..<needed {
            switch system.eventfd() {
            case .success(let fd): made.append(fd)
            case .failure(let failure):
                throw ConnectivityError(
                    .systemCall,
                    "no descriptors left for the HTTP client (\(needed) needed: \(eventLoops) event loop(s) "
                        + "and \(spareDescriptors) spare; \(made.count) could be made)", errno: failure.errno)
            }
        }
    }

    /// Throws ``ConnectivityError/Code/systemCall`` (EAGAIN: the user's process and
    /// thread limit, `ulimit -u`) unless `eventLoops` threads, and one spare, can be
    /// made: NIO traps when a loop's thread can't be.
    static func checkThreads(eventLoops: Int) throws(ConnectivityError) {
        guard eventLoops > 0, let failure = ThreadHeadroom.check(eventLoops + 1) else { return }
        throw ConnectivityError(
            .systemCall,
            "no thread for the HTTP client's \(eventLoops) event loop(s): the limit on the user's processes "
                + "and threads (ulimit -u) is \(ThreadHeadroom.processLimit)", errno: failure)
    }

    /// One user fewer for `environment`; the last one shuts the client down (in
    /// the background: closing connections and stopping its thread).
    func release(_ environment: NetworkEnvironment) {
        let key = Self.key(environment)
        let finished = entries.withLock { entries -> Entry? in
            guard var entry = entries[key] else { return nil }
            entry.users -= 1
            if entry.users > 0 {
                entries[key] = entry
                return nil
            }
            entries[key] = nil
            return entry
        }
        if let finished { Self.shutDown(finished) }
    }

    /// Stops an entry's own event loop thread (NIO's shared loops stay): probes
    /// still on it have been cancelled by their checks, whose sockets close with it.
    /// The thread goes back to the namespace it came from first: the shutdown ends
    /// with Dispatch work that it enqueues. One that can't (the process gave up the
    /// right since it left) keeps running, parked: that is the lesser harm.
    private static func shutDown(_ entry: Entry) {
        guard let group = entry.group else { return }
        let back = entry.client.entered.map { origin -> Bool in
            do throws(ReachabilityError) {
                try origin?.enterOnCurrentThread()
                return true
            } catch {
                return false
            }
        }
        Task.detached {
            // A failed entry never left: nothing to go back from.
            guard (try? await entry.client.value(back)) ?? true else { return }
            try? await group.shutdownGracefully()
        }
    }

    /// Clients alive now (tests check that stop released them).
    var count: Int { entries.withLock { $0.count } }
}

/// Leased event loops for probes, and the future that completes once they are in
/// the right namespace (at once for the process's own).
struct ProbeClient: Sendable {
    let loops: any EventLoopGroup
    /// Completes once the loops are in the namespace, with the one they came from
    /// (nil for the process's own).
    let entered: EventLoopFuture<NetworkNamespace?>
    /// A loop in the process's namespace for ``value(_:)``; nil when `loops` are there.
    let home: (any EventLoop)?

    /// `future`'s value for a task, handed over on ``home`` when the loops are in
    /// another namespace: resuming a task there could start a Dispatch worker there.
    func value<T: Sendable>(_ future: EventLoopFuture<T>) async throws -> T {
        guard let home else { return try await future.get() }
        return try await future.hop(to: home).get()
    }
}
