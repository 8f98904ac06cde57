import CNetlink
import Glibc

/// What one resolution gave.
enum Resolution: Sendable, Equatable {
    /// The addresses (IPv4 and IPv6, deduplicated, in the resolver's order).
    case addresses([IPAddress])
    /// NXDOMAIN, no data, or no answer (`EAI_NONAME`, `EAI_NODATA`, `EAI_AGAIN`, …).
    case failed(code: Int32)

    var addresses: [IPAddress] {
        if case .addresses(let list) = self { return list }
        return []
    }
}

/// Resolves hostnames with the system resolver (getaddrinfo: /etc/hosts,
/// resolv.conf, nsswitch) on a few worker threads of its own, so that no caller
/// ever waits on DNS. One pool per network namespace: for another namespace each
/// lookup runs inside it, and for a named one (`/run/netns/NAME`) with
/// `/etc/netns/NAME/*` over `/etc`, exactly as `ip netns exec NAME` arranges.
/// Workers start on demand and exit when the queue is empty: no idle threads.
final class ResolverPool: Sendable {
    typealias Completion = @Sendable (Resolution) -> Void

    private struct State {
        var queue: [(name: String, completion: Completion)] = []
        var workers = 0
    }

    /// Most resolutions in flight per namespace; a resolver that never answers
    /// blocks a worker for the resolver's timeout, not the caller.
    static let maxWorkers = 4

    let namespacePath: String?
    private let state = LockedValue(State())
    private static let pools = LockedValue<[String: ResolverPool]>([:])

    private init(namespacePath: String?) {
        self.namespacePath = namespacePath
    }

    /// The pool for a namespace (nil: the process's own).
    static func shared(for namespacePath: String?) -> ResolverPool {
        pools.withLock { pools in
            let key = namespacePath ?? ""
            if let pool = pools[key] { return pool }
            let pool = ResolverPool(namespacePath: namespacePath)
            pools[key] = pool
            return pool
        }
    }

    /// Queues a resolution; `completion` runs on a worker thread.
    func resolve(_ name: String, completion: @escaping Completion) {
        let startWorker = state.withLock { state -> Bool in
            state.queue.append((name, completion))
            guard state.workers < Self.maxWorkers, state.workers < state.queue.count else { return false }
            state.workers += 1
            return true
        }
        guard startWorker else { return }
        do {
            let worker = try JoinableThread(name: "reachability-dns") { [self] in work() }
            worker.detach()
        } catch {
            // No thread: fail everything queued rather than leave callers waiting forever.
            let failed = state.withLock { state -> [Completion] in
                state.workers -= 1
                guard state.workers == 0 else { return [] }
                defer { state.queue.removeAll() }
                return state.queue.map(\.completion)
            }
            for completion in failed { completion(.failed(code: EAI_SYSTEM)) }
        }
    }

    private func work() {
        // Workers never change namespace (completions enqueue Dispatch work, and a
        // thread started from a thread inside another namespace would inherit it).
        // A foreign namespace's lookup runs on a short-lived thread joined here.
        let path = namespacePath
        while true {
            let job = state.withLock { state -> (name: String, completion: Completion)? in
                guard !state.queue.isEmpty else {
                    state.workers -= 1
                    return nil
                }
                return state.queue.removeFirst()
            }
            guard let job else { return }
            let name = job.name
            let resolution =
                (try? JoinableThread.inNamespace(path, overlayEtc: true) { Self.getaddrinfo(name) })
                ?? .failed(code: EAI_SYSTEM)
            job.completion(resolution)
        }
    }

    /// NAME for `/run/netns/NAME` or `/var/run/netns/NAME`.
    static func namedNamespace(_ path: String) -> String? {
        for prefix in ["/run/netns/", "/var/run/netns/"] where path.hasPrefix(prefix) {
            let name = String(path.dropFirst(prefix.count))
            if !name.isEmpty, !name.contains("/"), name != ".", name != ".." { return name }
        }
        return nil
    }

    /// getaddrinfo(3) for both families; addresses deduplicated in order.
    static func getaddrinfo(_ name: String) -> Resolution {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = Glibc.getaddrinfo(name, nil, &hints, &list)
        guard rc == 0 else { return .failed(code: rc) }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var node = list
        while let entry = node?.pointee {
            if let sockaddr = entry.ai_addr,
                let address = IPAddress(sockaddr: UnsafeRawPointer(sockaddr), length: Int(entry.ai_addrlen)),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            node = entry.ai_next
        }
        return .addresses(addresses)
    }
}

extension IPAddress {
    /// Reads a `sockaddr_in` or `sockaddr_in6` of `length` bytes; nil for anything else.
    init?(sockaddr raw: UnsafeRawPointer, length: Int) {
        guard length >= MemoryLayout<sa_family_t>.size else { return nil }
        switch Int32(raw.loadUnaligned(as: sa_family_t.self)) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let address = raw.loadUnaligned(as: sockaddr_in.self)
            self.init(validBytes: withUnsafeBytes(of: address.sin_addr) { Array($0) }, scopeID: 0)
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let address = raw.loadUnaligned(as: sockaddr_in6.self)
            self.init(validBytes: withUnsafeBytes(of: address.sin6_addr) { Array($0) }, scopeID: address.sin6_scope_id)
        default:
            return nil
        }
    }
}
