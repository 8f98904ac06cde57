import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Reads the nl80211 status (SSID, signal) of a monitor's Wi-Fi links off its
/// reader thread (DESIGN §6.3): a pass's lines never wait for a driver. Its
/// generic netlink socket is made once, inside the monitor's namespace, when a
/// Wi-Fi link first needs reading; nl80211's family id is resolved once; reads
/// run one at a time on a serial queue, each link's within ``timeout``. A read
/// asked for while one runs is made once after it, for the links asked last.
/// The reader takes what came in (``take()``) when ``read(_:then:)``'s `then`
/// wakes it.
final class WirelessReader: @unchecked Sendable {
    // @unchecked: `socket`, `family` and `sequence` are used on `queue` only (or
    // before any read is asked for); the rest is behind `state`.
    private let namespace: NetworkNamespace?
    private let systemCalls: SystemCalls
    private let queue = DispatchQueue(label: "reachability.wireless")
    /// How long one link's read may take, all its exchanges together.
    let timeout: Duration
    private var socket: NetlinkSocket?
    /// nl80211's family id, once resolved.
    private var family: UInt16?
    private var sequence = UInt32(truncatingIfNeeded: time(nil))

    private struct State {
        var reading = false
        /// The links to read once the running read is over.
        var next: [Int32]?
        /// Each link's newest outcome, not taken yet.
        var outcomes: [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] = [:]
    }
    private let state = LockedValue(State())

    /// A reader for the namespace `namespace` (nil: the process's own), whose calls
    /// go through `systemCalls`.
    init(namespace: NetworkNamespace?, systemCalls: SystemCalls, timeout: Duration = defaultTimeout) {
        self.namespace = namespace
        self.systemCalls = systemCalls
        self.timeout = timeout
    }

    /// How long a link's read may take: the kernel answers in microseconds; a driver
    /// stuck in a firmware reset must not hold the status of the others for long.
    static let defaultTimeout: Duration = .milliseconds(250)

    /// Whether a read is running or asked for.
    var isReading: Bool { state.withLock { $0.reading } }

    /// Reads `links` on the reader's queue, then calls `then` there; while a read
    /// runs, the links of the last such call are read once it is over.
    func read(_ links: [Int32], then: @escaping @Sendable () -> Void) {
        let starts = state.withLock { state -> Bool in
            guard !state.reading else {
                state.next = links
                return false
            }
            state.reading = true
            return true
        }
        guard starts else { return }
        queue.async { [self] in
            var links = links
            while true {
                let outcomes = readNow(links)
                let next = state.withLock { state -> [Int32]? in
                    state.outcomes.merge(outcomes) { $1 }
                    defer { state.next = nil }
                    state.reading = state.next != nil
                    return state.next
                }
                then()
                guard let next else { return }
                links = next
            }
        }
    }

    /// Reads `links` and waits for the outcomes (a monitor's start, before any
    /// read is asked for).
    func readSynchronously(_ links: [Int32]) -> [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] {
        queue.sync { readNow(links) }
    }

    /// Takes the outcomes that came in since the last call.
    func take() -> [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] {
        state.withLock { state in
            defer { state.outcomes = [:] }
            return state.outcomes
        }
    }

    /// On `queue`: each link's read over the kept socket, made first when there is
    /// none (a socket whose read failed is dropped, so a broken one is not kept).
    private func readNow(_ links: [Int32]) -> [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] {
        var outcomes: [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] = [:]
        for index in links {
            if socket == nil {
                let systemCalls = systemCalls
                do throws(ReachabilityError) {
                    socket = try JoinableThread.inNamespace(namespace) { () throws(ReachabilityError) in
                        KeptSocket(
                            socket: try NetlinkSocket(
                                receiveBuffer: 256 << 10, role: .nl80211,
                                systemCalls: systemCalls))
                    }.socket
                } catch {
                    outcomes[index] = .failure(.failed(error))
                    continue
                }
            }
            guard let socket else { continue }
            let session = GenericNetlinkSession(
                transport: socket, timeout: timeout, firstSequence: sequence, nl80211Family: family)
            let outcome = WirelessInfo.read(interfaceIndex: index, session: session)
            family = session.nl80211Family
            sequence = session.sequence
            if case .failure(.failed) = outcome { self.socket = nil }
            outcomes[index] = outcome
        }
        return outcomes
    }

    /// A socket handed from the thread that made it inside the namespace.
    private struct KeptSocket: @unchecked Sendable {
        // @unchecked: made on that thread, used only on the queue after it.
        let socket: NetlinkSocket
    }
}
