import Glibc
@_spi(Testing) package import ReachabilityBase
import ReachabilityCore
@_spi(Testing) import ReachabilitySystem

/// Whether the namespace's resolver is configured and answers: what
/// `reachability wait --dns` waits for (systemd-networkd-wait-online and nm-online
/// have no such check; a host is not "online" for most programs until names resolve).
///
/// The servers asked are the ones the C library would ask: of the `nameserver`
/// lines of the environment's resolv.conf (see
/// ``DNSConfiguration/resolvConfPath(for:override:)``; at most its first
/// ``DNSConfiguration/sizeLimit`` bytes are read), the first ``maximumServers``
/// distinct addresses, in file order (glibc's MAXNS; an unparsable entry is skipped
/// as glibc does). They are asked together, over UDP from inside the namespace, for
/// the root zone's NS records, with recursion desired, and the whole check ends by
/// its timeout however many lines the file has. A reply that matches the query and
/// says NOERROR or NXDOMAIN is an answer; SERVFAIL and REFUSED (a resolver with no
/// upstream) and silence are not. No other traffic: one 17-byte datagram per server
/// and check. Every call is made through the environment's system calls (a fault
/// plan names them `.nameserver(ADDRESS)`).
package enum ResolverCheck {
    /// What one check found.
    package enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// `server` answered with DNS response code `rcode` (0 NOERROR or 3 NXDOMAIN).
        case answered(server: String, rcode: Int)
        /// resolv.conf names no nameserver (or can't be read).
        case noServers(resolvConf: String)
        /// No server gave a usable answer: each asked one's reason, in file order.
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

    /// What one check found, with which servers it asked and why not the others.
    package struct Report: Sendable, Equatable, CustomStringConvertible {
        package var outcome: Outcome
        /// The resolv.conf that was read.
        package var resolvConf: String
        /// The servers asked, as written in resolv.conf, in file order.
        package var asked: [String]
        /// The `nameserver` lines not asked: repeats, unparsable entries, and every
        /// line past the ``maximumServers``-th distinct server.
        package var notAsked: Int

        /// The outcome; for no answer, also which servers were asked and, when
        /// lines were left out, how many: e.g. `127.0.1.1: no reply within 1000 ms;
        /// 127.0.1.2: … (the first 3 distinct nameservers of /etc/resolv.conf, as the
        /// C library asks; 7 other nameserver lines not asked)`.
        package var description: String {
            guard case .noAnswer = outcome, notAsked > 0 else { return outcome.description }
            let lines = notAsked == 1 ? "1 other nameserver line" : "\(notAsked) other nameserver lines"
            let which =
                asked.count == 1
                ? "the first nameserver of \(resolvConf)"
                : "the first \(asked.count) distinct nameservers of \(resolvConf)"
            return "\(outcome) (\(which), as the C library asks at most \(maximumServers); \(lines) not asked)"
        }
    }

    /// How many servers are asked: glibc's MAXNS.
    package static let maximumServers = 3

    /// One server to ask: as written in resolv.conf, and its address.
    package struct Server: Sendable, Equatable {
        package var text: String
        package var address: IPAddress
    }

    /// The servers a check asks, from the `nameserver` entries of a resolv.conf
    /// text in file order (read as ``NameserverRule/nameservers(in:)`` reads them: a
    /// line whose first word is `nameserver`, its second word the entry): the first
    /// ``maximumServers`` distinct addresses (an entry that is no address is
    /// skipped, a repeat is not asked twice); and how many entries are not asked.
    /// Pure and one pass over the bytes: once the servers are found, later entries
    /// are only counted.
    package static func serversToAsk(resolvConf text: String) -> (servers: [Server], notAsked: Int) {
        var servers: [Server] = []
        var seen = Set<String>()
        var entries = 0
        let keyword = Array("nameserver".utf8)
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
            var start = 0
            while start < bytes.count {
                var end = start
                // Line ends: LF, VT, FF, CR (Character.isNewline's ASCII ones; glibc's is LF).
                while end < bytes.count, !(0x0A...0x0D).contains(bytes[end]) { end += 1 }
                defer { start = end + 1 }
                var index = start
                while index < end, isBlank(bytes[index]) { index += 1 }
                let word = index
                while index < end, !isBlank(bytes[index]) { index += 1 }
                guard index - word == keyword.count, bytes[word..<index].elementsEqual(keyword) else { continue }
                while index < end, isBlank(bytes[index]) { index += 1 }
                let value = index
                while index < end, !isBlank(bytes[index]) { index += 1 }
                guard index > value else { continue }
                entries += 1
                guard servers.count < maximumServers else { continue }
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[value..<index]), as: UTF8.self)
                // "fe80::1%eth0" names its zone; an unparsable entry is skipped as glibc does.
                guard seen.insert(text).inserted, let address = try? IPAddress(text),
                    !servers.contains(where: { $0.address == address })
                else { continue }
                servers.append(Server(text: text, address: address))
            }
        }
        return (servers, entries - servers.count)
    }

    /// ``run(environment:resolvConf:timeout:)``'s outcome.
    package static func check(
        environment: NetworkEnvironment, resolvConf: String? = nil, timeout: Duration = .seconds(1)
    ) throws(ReachabilityError) -> Outcome {
        try run(environment: environment, resolvConf: resolvConf, timeout: timeout).outcome
    }

    /// Asks the servers (``serversToAsk(resolvConf:)``) together and stops at the
    /// first answer (the earliest in file order of those that came at once). The
    /// whole check, reading resolv.conf included, takes at most `timeout` (at least
    /// a millisecond is left for the replies). Throws when the namespace can't be entered, and when no socket can
    /// be had for want of descriptors or memory (``ReachabilityError/Code/systemCall``
    /// with that errno): that is this host's failure, not the servers', and waiting
    /// for a server would never end it.
    package static func run(
        environment: NetworkEnvironment, resolvConf: String? = nil, timeout: Duration = .seconds(1)
    ) throws(ReachabilityError) -> Report {
        let started = milliseconds()
        let budget = max(
            1,
            Int32(
                clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds
                    / 1_000_000_000_000_000))
        try environment.validate()
        let system = environment.systemCalls
        let path = DNSConfiguration.resolvConfPath(for: environment, override: resolvConf)
        let text = readSmallFile(path, limit: DNSConfiguration.sizeLimit, systemCalls: system) ?? ""
        let (servers, notAsked) = serversToAsk(resolvConf: text)
        var report = Report(
            outcome: .noServers(resolvConf: path), resolvConf: path, asked: servers.map(\.text), notAsked: notAsked)
        guard !servers.isEmpty else { return report }
        let deadline = max(started + Int64(budget), milliseconds() + 1)
        report.outcome = try JoinableThread.inNamespace(environment) {
            () throws(ReachabilityError) -> Outcome in
            try ask(servers, until: deadline, budget: budget, systemCalls: system)
        }
        return report
    }

    private struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A query on its way: the server's position, its socket and the query's id.
    private struct Query {
        var position: Int
        var fd: Int32
        var id: UInt16
    }

    /// One query to each server on port 53, all at once, then their replies until
    /// the first answer or `deadline` (``milliseconds()``; the check's `budget` is
    /// what a reason says): the answer, or each server's reason. Throws when no
    /// socket can be made for want of descriptors or memory.
    private static func ask(
        _ servers: [Server], until deadline: Int64, budget: Int32, systemCalls system: SystemCalls
    ) throws(ReachabilityError) -> Outcome {
        var reasons = [String?](repeating: nil, count: servers.count)
        var waiting: [Query] = []
        var opened: [Int32] = []
        defer { for fd in opened { system.close(fd) } }
        for (position, server) in servers.enumerated() {
            switch try send(to: server, systemCalls: system, opened: &opened) {
            case .success(let (fd, id)): waiting.append(Query(position: position, fd: fd, id: id))
            case .failure(let failure): reasons[position] = "\(server.text): \(failure)"
            }
        }
        var reply = [UInt8](repeating: 0, count: 512)
        while !waiting.isEmpty {
            let left = deadline - milliseconds()
            guard left > 0 else {
                for query in waiting {
                    reasons[query.position] =
                        "\(servers[query.position].text): no reply within \(budget) ms"
                }
                break
            }
            let subject = SystemCallSubject.nameservers(waiting.map { servers[$0.position].text })
            let ready: UInt64
            // At most glibc's MAXNS servers: well within poll's 64 descriptors.
            switch system.poll(waiting.map(\.fd), timeoutMilliseconds: Int32(clamping: left), subject: subject) {
            case .success(let bits):
                ready = bits
            case .failure(let failure):
                for query in waiting {
                    reasons[query.position] =
                        "\(servers[query.position].text): poll: \(ReachabilityError.strerror(failure.errno))"
                }
                waiting = []
                continue
            }
            var still: [Query] = []
            for (position, query) in waiting.enumerated() {
                guard ready & 1 << UInt64(position) != 0 else {
                    still.append(query)
                    continue
                }
                let server = servers[query.position]
                switch reply.withUnsafeMutableBytes({
                    system.recv(query.fd, into: $0, subject: .nameserver(server.text))
                }) {
                case .success(let count):
                    // Not a reply to this query (too short, another id, not a response): keep waiting.
                    guard count >= 12, reply[0] == UInt8(query.id >> 8), reply[1] == UInt8(query.id & 0xFF),
                        reply[2] & 0x80 != 0
                    else {
                        still.append(query)
                        continue
                    }
                    let rcode = Int(reply[3] & 0x0F)
                    if rcode == 0 || rcode == 3 { return .answered(server: server.text, rcode: rcode) }
                    reasons[query.position] = "\(server.text) answered rcode \(rcode)"
                case .failure(let failure) where failure.errno == EAGAIN:
                    still.append(query)
                case .failure(let failure):
                    reasons[query.position] = "\(server.text): \(ReachabilityError.strerror(failure.errno))"
                }
            }
            waiting = still
        }
        return .noAnswer(reasons.compactMap { $0 })
    }

    /// Opens a socket connected to `server` port 53 (added to `opened`, which the
    /// caller closes) and sends the query: the socket and the query's id, or why
    /// not. Throws when no socket can be made for want of descriptors or memory.
    private static func send(
        to server: Server, systemCalls system: SystemCalls, opened: inout [Int32]
    ) throws(ReachabilityError) -> Result<(Int32, UInt16), Failure> {
        let subject = SystemCallSubject.nameserver(server.text)
        let family = server.address.family == .ipv4 ? AF_INET : AF_INET6
        let fd: Int32
        switch system.socket(family: family, type: Int32(SOCK_DGRAM.rawValue), subject: subject) {
        case .success(let made):
            fd = made
            opened.append(made)
        case .failure(let failure) where SystemError.resourceErrors.contains(failure.errno):
            throw ReachabilityError(.systemCall, "checking the resolver: \(failure.call) failed", errno: failure.errno)
        case .failure(let failure):
            return .failure(Failure(description: "socket: \(ReachabilityError.strerror(failure.errno))"))
        }
        // Connected: the kernel drops datagrams from anyone else, and an ICMP port
        // unreachable comes back as ECONNREFUSED at once instead of a timeout.
        let connected = withSocketAddress(server.address, port: 53) { address, length in
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
            return .success((fd, id))
        case .success:
            return .failure(Failure(description: "send: the query went out short"))
        case .failure(let failure):
            return .failure(Failure(description: "send: \(ReachabilityError.strerror(failure.errno))"))
        }
    }

    /// CLOCK_MONOTONIC in milliseconds.
    private static func milliseconds() -> Int64 {
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        return Int64(clock.tv_sec) * 1000 + Int64(clock.tv_nsec) / 1_000_000
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
