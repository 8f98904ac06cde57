import AsyncHTTPClient
import CNetlink
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Reachability

/// One long-lived AsyncHTTPClient per watched namespace, shared by every
/// ``Connectivity`` and one-off check there: made by the first user, shut down
/// after the last one leaves, so a stopped notifier holds no sockets or threads.
///
/// For the process's own namespace the client runs on NIO's shared event loops.
/// For another namespace it gets an event loop thread of its own that enters that
/// namespace before anything else runs on it: every probe socket is made on that
/// thread, so probes leave from inside the namespace, and no other thread moves.
final class ProbeClients: Sendable {
    static let shared = ProbeClients()

    private struct Entry {
        let client: ProbeClient
        let group: MultiThreadedEventLoopGroup?
        var users: Int
    }

    private let entries = NIOLockedValueBox<[String: Entry]>([:])

    /// The name of the event loop thread of a client for another namespace.
    static let namespaceThreadName = "connectivity-ns"

    /// The client configuration: redirects are answers, bodies arrive as sent,
    /// every probe is a fresh HTTP/1.1 connection, a refused connection fails at once.
    static var configuration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.httpVersion = .http1Only
        var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(1))
        pool.retryConnectionEstablishment = false
        configuration.connectionPool = pool
        return configuration
    }

    private static func key(_ environment: NetworkEnvironment) -> String {
        environment.networkNamespacePath ?? ""
    }

    /// The client for `environment`, counting one more user; pair with ``release(_:)``.
    /// Never blocks: for another namespace, entering it is queued on the client's
    /// event loop ahead of any probe, and probes wait for ``ProbeClient/ready``.
    func lease(_ environment: NetworkEnvironment) -> ProbeClient {
        let key = Self.key(environment)
        if let client = entries.withLockedValue({ entries -> ProbeClient? in
            guard var entry = entries[key] else { return nil }
            entry.users += 1
            entries[key] = entry
            return entry.client
        }) {
            return client
        }
        var group: MultiThreadedEventLoopGroup?
        let client: ProbeClient
        if environment.networkNamespacePath != nil {
            let own = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let ready = own.next().submit {
                try environment.enterNetworkNamespaceOnCurrentThread()
                // Named so that it is known for what it is: a thread of the library
                // that lives in another namespace on purpose, running only probes.
                _ = cnl_set_thread_name(Self.namespaceThreadName)
            }
            group = own
            client = ProbeClient(
                http: HTTPClient(eventLoopGroup: own, configuration: Self.configuration), ready: ready)
        } else {
            let shared = MultiThreadedEventLoopGroup.singleton
            client = ProbeClient(
                http: HTTPClient(eventLoopGroup: shared, configuration: Self.configuration),
                ready: shared.next().makeSucceededVoidFuture())
        }
        // Another user may have made one meanwhile: keep theirs, drop ours.
        let (chosen, spare) = entries.withLockedValue { entries -> (ProbeClient, Entry?) in
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

    /// One user fewer for `environment`; the last one shuts the client down (in
    /// the background: closing connections and stopping its thread).
    func release(_ environment: NetworkEnvironment) {
        let key = Self.key(environment)
        let finished = entries.withLockedValue { entries -> Entry? in
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

    private static func shutDown(_ entry: Entry) {
        let client = entry.client.http
        let group = entry.group
        Task.detached {
            try? await client.shutdown()
            try? await group?.shutdownGracefully()
        }
    }

    /// Clients alive now (tests check that stop released them).
    var count: Int { entries.withLockedValue { $0.count } }
}

/// A leased HTTP client and the future that completes once its event loop is in
/// the right namespace (at once for the process's own).
struct ProbeClient: Sendable {
    let http: HTTPClient
    let ready: EventLoopFuture<Void>
}
