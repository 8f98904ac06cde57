import Glibc

/// Whether the namespace's resolver is configured and answers: what
/// `reachability wait --dns` waits for (systemd-networkd-wait-online and nm-online
/// have no such check; a host is not "online" for most programs until names resolve).
///
/// Each `nameserver` of the environment's resolv.conf (see
/// ``DNSConfiguration/resolvConfPath(for:override:)``) is asked, over UDP from inside
/// the namespace, for the root zone's NS records, with recursion desired. A reply
/// that matches the query and says NOERROR or NXDOMAIN is an answer; SERVFAIL and
/// REFUSED (a resolver with no upstream) and silence are not. No other traffic:
/// one 17-byte datagram per server and attempt. Every call is made through the
/// environment's system calls (a fault plan's subject for them is
/// `nameserver ADDRESS`).
package enum ResolverCheck {
    /// What one check found.
    package enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// `server` answered with DNS response code `rcode` (0 NOERROR or 3 NXDOMAIN).
        case answered(server: String, rcode: Int)
        /// resolv.conf names no nameserver (or can't be read).
        case noServers(resolvConf: String)
        /// No server gave a usable answer: each one's reason, in order.
        case noAnswer([String])

        package var answered: Bool { if case .answered = self { true } else { false } }

        package var description: String {
            switch self {
            case .answered(let server, let rcode): "\(server) answered (rcode \(rcode))"
            case .noServers(let path): "no nameserver in \(path)"
            case .noAnswer(let reasons): reasons.joined(separator: "; ")
            }
        }
    }

    /// Asks the servers in turn, each for at most `timeout`, and stops at the first
    /// answer. Throws when the namespace can't be entered, and when no socket can
    /// be had for want of descriptors or memory (``ReachabilityError/Code/systemCall``
    /// with that errno): that is this host's failure, not the servers', and
    /// waiting for a server would never end it.
    package static func check(
        environment: NetworkEnvironment, resolvConf: String? = nil, timeout: Duration = .seconds(1)
    ) throws(ReachabilityError) -> Outcome {
        try environment.validate()
        let system = environment.systemCalls
        let path = DNSConfiguration.resolvConfPath(for: environment, override: resolvConf)
        let servers = DNSConfiguration.nameservers(in: path, systemCalls: system).compactMap {
            text -> (String, IPAddress)? in
            // "fe80::1%eth0" names its zone; an unparsable entry is skipped as glibc does.
            guard let address = try? IPAddress(text) else { return nil }
            return (text, address)
        }
        guard !servers.isEmpty else { return .noServers(resolvConf: path) }
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try JoinableThread.inNamespace(environment.networkNamespacePath, systemCalls: system) {
            () throws(ReachabilityError) -> Outcome in
            var reasons: [String] = []
            for (text, address) in servers {
                switch try ask(
                    address, subject: "nameserver \(text)", timeoutMilliseconds: max(milliseconds, 1),
                    systemCalls: system)
                {
                case .success(let rcode) where rcode == 0 || rcode == 3:
                    return .answered(server: text, rcode: rcode)
                case .success(let rcode):
                    reasons.append("\(text) answered rcode \(rcode)")
                case .failure(let reason):
                    reasons.append("\(text): \(reason)")
                }
            }
            return .noAnswer(reasons)
        }
    }

    private struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One query to `server` on port 53: the reply's rcode, or why there was none.
    /// Throws when no socket can be made for want of descriptors or memory.
    private static func ask(
        _ server: IPAddress, subject: String, timeoutMilliseconds: Int32, systemCalls system: SystemCalls
    ) throws(ReachabilityError) -> Result<Int, Failure> {
        let family = server.family == .ipv4 ? AF_INET : AF_INET6
        let fd: Int32
        switch system.socket(family: family, type: Int32(SOCK_DGRAM.rawValue), subject: subject) {
        case .success(let opened):
            fd = opened
        case .failure(let failure) where ResolverPool.resourceErrors.contains(failure.errno):
            throw ReachabilityError(.systemCall, "checking the resolver: \(failure.call) failed", errno: failure.errno)
        case .failure(let failure):
            return .failure(Failure(description: "socket: \(ReachabilityError.strerror(failure.errno))"))
        }
        defer { system.close(fd) }
        // Connected: the kernel drops datagrams from anyone else, and an ICMP port
        // unreachable comes back as ECONNREFUSED at once instead of a timeout.
        let connected = withSocketAddress(server, port: 53) { address, length in
            system.connect(fd, to: address, length: length, subject: subject)
        }
        if case .failure(let failure) = connected {
            return .failure(Failure(description: "connect: \(ReachabilityError.strerror(failure.errno))"))
        }
        let id = UInt16.random(in: 0...UInt16.max)
        // Header: id, RD, one question; the question: the root name, NS, IN.
        let query: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1]
        switch query.withUnsafeBytes({ system.send(fd, $0, subject: subject) }) {
        case .success(let sent) where sent == query.count:
            break
        case .success:
            return .failure(Failure(description: "send: the query went out short"))
        case .failure(let failure):
            return .failure(Failure(description: "send: \(ReachabilityError.strerror(failure.errno))"))
        }
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline = Int64(clock.tv_sec) * 1000 + Int64(clock.tv_nsec) / 1_000_000 + Int64(timeoutMilliseconds)
        var reply = [UInt8](repeating: 0, count: 512)
        while true {
            clock_gettime(CLOCK_MONOTONIC, &clock)
            let left = deadline - (Int64(clock.tv_sec) * 1000 + Int64(clock.tv_nsec) / 1_000_000)
            guard left > 0 else { return .failure(Failure(description: "no reply within \(timeoutMilliseconds) ms")) }
            switch system.poll([fd], timeoutMilliseconds: Int32(clamping: left), subject: subject) {
            case .success(let ready) where ready[0]: break
            case .success: continue
            case .failure(let failure):
                return .failure(Failure(description: "poll: \(ReachabilityError.strerror(failure.errno))"))
            }
            let count: Int
            switch reply.withUnsafeMutableBytes({ system.recv(fd, into: $0, subject: subject) }) {
            case .success(let received): count = received
            case .failure(let failure) where failure.errno == EAGAIN: continue
            case .failure(let failure): return .failure(Failure(description: ReachabilityError.strerror(failure.errno)))
            }
            // Not a reply to this query (too short, another id, not a response): keep waiting.
            guard count >= 12, reply[0] == UInt8(id >> 8), reply[1] == UInt8(id & 0xFF), reply[2] & 0x80 != 0 else {
                continue
            }
            return .success(Int(reply[3] & 0x0F))
        }
    }

    private static func withSocketAddress<R>(
        _ address: IPAddress, port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) -> R {
        let bytes = address.bytes
        if address.family == .ipv4 {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var socketAddress = sockaddr_in6()
        socketAddress.sin6_family = sa_family_t(AF_INET6)
        socketAddress.sin6_port = port.bigEndian
        socketAddress.sin6_scope_id = address.scopeID
        withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }
}
