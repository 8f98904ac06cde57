import CNetlink
import Glibc
@_spi(Testing) package import ReachabilitySystem

/// One netlink socket, over libmnl: rtnetlink (the default), or generic netlink
/// for nl80211 (`GenericNetlink.swift`). Not thread-safe: each owner serializes
/// its use (the monitor keeps the request socket behind a lock, and only the
/// reader thread touches the event socket).
package final class NetlinkSocket {
    private let handle: OpaquePointer
    /// The descriptor, for poll(2).
    package let fd: Int32
    /// `[fd]`, made once: what a wait for a reply polls.
    private let pollSet: [Int32]
    /// Every call on the socket goes through these (the environment's).
    private let system: SystemCalls
    /// What it is for: the subject of its calls in errors and fault plans.
    package let subject: SystemCallSubject
    private var sequence: UInt32
    /// Receive buffer: ``datagramsPerRead`` slots of ``slotSize`` bytes, one per
    /// datagram of a read (dumps send up to 32 KiB per datagram).
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many datagrams one read (recvmmsg) takes at most.
    package let datagramsPerRead: Int
    /// Each datagram's room in `buffer`.
    package static let slotSize = 64 << 10
    /// The last read's datagrams: their lengths, senders and flags.
    private let receipts: UnsafeMutableBufferPointer<SystemCalls.NetlinkReceipt>
    /// How many datagrams the last read brought, and how many were handed out.
    private var received = 0
    private var handedOut = 0
    /// The last read brought fewer than it had room for: the queue was empty then,
    /// so the next receive after its datagrams says so without a system call (a
    /// datagram that came since makes poll(2) return at once).
    private var readTheQueueEmpty = false
    /// How many datagrams a burst's first read takes (``init(receiveBuffer:groups:optionalGroups:role:datagramsPerRead:firstRead:systemCalls:)``).
    package let firstRead: Int
    /// The next read is a burst's first: the socket was found empty (or never read).
    private var burstStarts = true
    /// Where a window of requests is written before its one write: allocated once,
    /// not per pass (each request takes at most ``requestSlot`` bytes).
    private let requestBuffer: UnsafeMutableRawBufferPointer
    /// The room one request may take: header, rtmsg, RTA_DST, RTA_SRC, RTA_OIF.
    package static let requestSlot = 96
    /// How long a request may wait for the kernel's answer.
    package static let replyTimeoutMilliseconds: Int32 = 5000
    /// Lookups sent per write; each answer is one datagram on the receive queue.
    package static let lookupWindow = 128

    /// Opens a non-blocking NETLINK_ROUTE socket, joins `groups` (and those of
    /// `optionalGroups` the kernel has), and asks for a receive buffer of `receiveBuffer` bytes (SO_RCVBUFFORCE when privileged,
    /// else SO_RCVBUF, which the kernel caps at net.core.rmem_max).
    /// `role` says what the socket is for, and so its netlink protocol (NETLINK_GENERIC
    /// for nl80211, else NETLINK_ROUTE), in errors and for fault plans. Every call is made through `systemCalls`.
    ///
    /// `datagramsPerRead` datagrams are read per system call (recvmmsg(2)); each
    /// takes ``slotSize`` bytes of address space, of which only the pages a
    /// datagram fills become memory. The first read after the socket was found
    /// empty (or after a send) takes `firstRead` (at most `datagramsPerRead`; nil:
    /// as many), the reads after it up to `datagramsPerRead`: an event socket's
    /// first datagram of a burst is usually what decides (the kernel sends a
    /// link's message before its routes', neighbours' and addresses'), and reading
    /// a burst's first two costs a fraction of reading all of it, cold; one alone
    /// would leave a burst of one unknown to be over, and cost another read.
    package init(
        receiveBuffer: Int, groups: [UInt32] = [], optionalGroups: [UInt32] = [], role: NetlinkRole,
        datagramsPerRead: Int = 1, firstRead: Int? = nil, systemCalls: SystemCalls
    ) throws(ReachabilityError) {
        let bus = role == .nl80211 ? netlinkGeneric : netlinkRoute
        let subject = SystemCallSubject.netlink(role)
        let handle: OpaquePointer
        switch systemCalls.netlinkOpen(bus: bus, flags: SockFlag.nonBlock | SockFlag.closeOnExec, subject: subject) {
        case .success(let opened): handle = opened
        case .failure(let failure): throw failure.reachabilityError
        }
        self.handle = handle
        self.system = systemCalls
        self.subject = subject
        let fd = systemCalls.netlinkDescriptor(handle)
        self.fd = fd
        self.pollSet = [fd]
        self.sequence = UInt32(truncatingIfNeeded: time(nil))
        self.datagramsPerRead = max(1, datagramsPerRead)
        self.firstRead = min(max(1, firstRead ?? datagramsPerRead), self.datagramsPerRead)
        self.buffer = .allocate(byteCount: self.datagramsPerRead * Self.slotSize, alignment: 8)
        self.receipts = .allocate(capacity: self.datagramsPerRead)
        // A window of lookups, and the barrier ahead of the first (``lookup(_:)``).
        self.requestBuffer = .allocate(byteCount: (Self.lookupWindow + 1) * Self.requestSlot, alignment: 8)
        // Groups 1–32 joined by the bind's mask, in one call: each join takes the kernel's
        // netlink table lock and walks every subscribed socket of the protocol, in every
        // namespace, so a thousand monitors joining eleven groups each one at a time took
        // most of a `watch --all-namespaces`' start. The kernel drops a group it doesn't
        // have from the mask (an optional one, as a failed join was).
        let maskable = (groups + optionalGroups).filter { (1...32).contains($0) }
        let mask = maskable.reduce(UInt32(0)) { $0 | 1 << ($1 - 1) }
        if case .failure(let failure) = systemCalls.netlinkBind(handle, groups: mask, subject: subject) {
            systemCalls.netlinkClose(handle)
            buffer.deallocate()
            receipts.deallocate()
            requestBuffer.deallocate()
            throw failure.reachabilityError
        }
        let size = Int32(clamping: receiveBuffer)
        if case .failure = systemCalls.setOption(
            fd, level: SockOpt.solSocket, name: SockOpt.rcvbufForce, value: size, subject: subject)
        {
            _ = systemCalls.setOption(fd, level: SockOpt.solSocket, name: SockOpt.rcvbuf, value: size, subject: subject)
        }
        // Errors need not echo our request back.
        _ = systemCalls.setOption(fd, level: SockOpt.solNetlink, name: SockOpt.capAck, value: 1, subject: subject)
        for group in groups where !maskable.contains(group) {
            if case .failure(let failure) = systemCalls.setOption(
                fd, level: SockOpt.solNetlink, name: SockOpt.addMembership, value: Int32(group), subject: subject)
            {
                systemCalls.netlinkClose(handle)
                buffer.deallocate()
                receipts.deallocate()
                requestBuffer.deallocate()
                throw ReachabilityError(.systemCall, "joining rtnetlink group \(group) failed", errno: failure.errno)
            }
        }
        for group in optionalGroups where !maskable.contains(group) {
            _ = systemCalls.setOption(
                fd, level: SockOpt.solNetlink, name: SockOpt.addMembership, value: Int32(group), subject: subject)
        }
    }

    deinit {
        system.netlinkClose(handle)
        buffer.deallocate()
        receipts.deallocate()
        requestBuffer.deallocate()
    }

    /// The receive buffer the kernel granted (it reports double the request).
    package var receiveBufferSize: Int {
        Int(system.option(fd, level: SockOpt.solSocket, name: SockOpt.rcvbuf, subject: subject) ?? 0)
    }

    package enum Received {
        /// One datagram; the bytes are valid until the next receive (and until the
        /// receive that reads the socket again, after the rest of its read).
        case datagram(UnsafeRawBufferPointer)
        /// Nothing queued.
        case empty
        /// The kernel dropped messages for this socket (ENOBUFS).
        case overrun
    }

    /// Whether the last read's datagrams are not all handed out yet.
    package var holdsReadDatagrams: Bool { handedOut < received }

    /// Datagrams dropped because they did not come from the kernel.
    package private(set) var foreignDatagrams = 0

    /// Receives one datagram without blocking. Only the kernel's datagrams count:
    /// a process with CAP_NET_ADMIN in the namespace (a container's root) can send
    /// to rtnetlink groups or to our port, so anything whose sender is not port 0
    /// is dropped before it is parsed. A truncated datagram reports an overrun.
    /// Datagrams are read ``datagramsPerRead`` at a time and handed out one by one.
    package func receive() throws(ReachabilityError) -> Received {
        while true {
            if handedOut < received {
                let slot = handedOut
                let receipt = receipts[slot]
                handedOut += 1
                guard receipt.senderPort == 0 else {
                    foreignDatagrams += 1
                    continue
                }
                if receipt.flags & MessageFlag.truncated != 0 { return .overrun }
                let start = slot * Self.slotSize
                return .datagram(
                    UnsafeRawBufferPointer(rebasing: buffer[start..<start + min(receipt.count, Self.slotSize)]))
            }
            if readTheQueueEmpty {
                readTheQueueEmpty = false
                burstStarts = true
                return .empty
            }
            let room = burstStarts ? firstRead : datagramsPerRead
            switch system.recvmmsg(
                fd, into: buffer, slotSize: Self.slotSize,
                receipts: UnsafeMutableBufferPointer(rebasing: receipts[..<room]),
                subject: subject)
            {
            case .success(let count):
                received = count
                handedOut = 0
                readTheQueueEmpty = count < room
                burstStarts = false
            case .failure(let failure):
                switch failure.errno {
                case Errno.again:
                    burstStarts = true
                    return .empty
                case Errno.noBufs: return .overrun
                default: throw failure.reachabilityError
                }
            }
        }
    }

    /// The next datagram of a reply (a dump's or the lookups'), waiting up to
    /// ``replyTimeoutMilliseconds`` for it in all — a wake-up that finds nothing (a
    /// datagram dropped as foreign, or none after all) doesn't start the wait anew.
    /// A reply that never comes, or one the socket dropped, is an error: the request
    /// can't be completed (the caller's caller resyncs or retries).
    ///
    /// It reads before it waits: rtnetlink answers a request inside the `sendto`
    /// that carried it, so a lookup's answers are queued by the time it returns,
    /// and a poll(2) before each would be a system call that never waits.
    private func nextReply(
        timedOut: @autoclosure () -> String, overrun: @autoclosure () -> String
    ) throws(ReachabilityError) -> UnsafeRawBufferPointer {
        var deadline: ContinuousClock.Instant?
        while true {
            switch try receive() {
            case .datagram(let bytes): return bytes
            case .overrun: throw ReachabilityError(.systemCall, overrun(), errno: Errno.noBufs)
            case .empty: break
            }
            let now = ContinuousClock.now
            let end = deadline ?? now + .milliseconds(Self.replyTimeoutMilliseconds)
            deadline = end
            let left = end - now
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            guard milliseconds > 0, try waitReadable(timeoutMilliseconds: Int32(clamping: milliseconds)) else {
                throw ReachabilityError(.timedOut, timedOut())
            }
        }
    }

    /// The most messages one dump returns, and the most datagrams it reads: a dump
    /// that never ends (datagrams that never bring its NLMSG_DONE) throws past
    /// them. A namespace with 100,000 addresses dumps in about 100,000 messages and
    /// a few thousand datagrams.
    package static let dumpMessageLimit = 1 << 20
    package static let dumpDatagramLimit = 1 << 16

    /// Waits until a datagram is queued; false at the deadline.
    package func waitReadable(timeoutMilliseconds: Int32) throws(ReachabilityError) -> Bool {
        switch system.poll(pollSet, timeoutMilliseconds: timeoutMilliseconds, subject: subject) {
        case .success(let ready): return ready != 0
        case .failure(let failure): throw failure.reachabilityError
        }
    }

    package func send(_ bytes: UnsafeRawBufferPointer) throws(ReachabilityError) {
        // A request's answers are queued by the time the send returns: a new burst.
        readTheQueueEmpty = false
        burstStarts = true
        if case .failure(let failure) = system.netlinkSend(handle, bytes, subject: subject) {
            throw failure.reachabilityError
        }
    }

    private func nextSequence() -> UInt32 {
        sequence &+= 1
        return sequence
    }

    // MARK: Dumps

    /// Dumps every link (RTM_GETLINK) or every address (RTM_GETADDR) of the
    /// namespace. A dump the kernel marks NLM_F_DUMP_INTR (the table changed
    /// under it) is retried.
    package func dump(
        _ type: UInt16, headerSize: Int = MemoryLayout<ifinfomsg>.size, datagramLimit: Int = dumpDatagramLimit,
        messageLimit: Int = dumpMessageLimit
    ) throws(ReachabilityError) -> [NetlinkMessage] {
        for _ in 0..<16 {
            let (messages, interrupted) = try dumpOnce(
                type, headerSize: headerSize, datagramLimit: datagramLimit, messageLimit: messageLimit)
            if !interrupted { return messages }
        }
        throw ReachabilityError(.netlinkProtocol, "the kernel interrupted the rtnetlink dump (type \(type)) 16 times")
    }

    private func dumpOnce(_ type: UInt16, headerSize: Int, datagramLimit: Int, messageLimit: Int)
        throws(ReachabilityError) -> ([NetlinkMessage], Bool)
    {
        let seq = nextSequence()
        var request = [UInt64](repeating: 0, count: 8)
        let length = request.withUnsafeMutableBytes { raw -> Int in
            let header = mnl_nlmsg_put_header(raw.baseAddress)!
            header.pointee.nlmsg_type = type
            header.pointee.nlmsg_flags = NLMsgFlag.request | NLMsgFlag.dump
            header.pointee.nlmsg_seq = seq
            // The family header (ifinfomsg serves links and addresses; ndmsg
            // neighbors), all zero: "every family".
            _ = mnl_nlmsg_put_extra_header(header, headerSize)
            return Int(header.pointee.nlmsg_len)
        }
        try request.withUnsafeBytes { raw in
            Result { () throws(ReachabilityError) in try self.send(UnsafeRawBufferPointer(rebasing: raw[0..<length])) }
        }.get()
        var messages: [NetlinkMessage] = []
        var interrupted = false
        for _ in 0..<datagramLimit where messages.count <= messageLimit {
            let datagram = try nextReply(
                timedOut: "the kernel did not finish the rtnetlink dump (type \(type))",
                overrun: "the rtnetlink dump overran the socket")
            let parsed = NetlinkParser.parse(datagram)
            for item in parsed.messages where item.sequence == seq {
                if item.flags & NLMsgFlag.dumpInterrupted != 0 { interrupted = true }
                switch item.message {
                case .done:
                    return (messages, interrupted)
                case .error(let errno) where errno != 0:
                    throw ReachabilityError(.systemCall, "the rtnetlink dump (type \(type)) failed", errno: errno)
                default:
                    messages.append(item.message)
                }
            }
            if let malformed = parsed.malformed {
                throw ReachabilityError(.netlinkProtocol, "rtnetlink dump: \(malformed)")
            }
        }
        throw ReachabilityError(
            .netlinkProtocol,
            "the rtnetlink dump (type \(type)) did not end within \(datagramLimit) datagrams "
                + "and \(messageLimit) messages")
    }

    // MARK: Lookups

    /// Asks the kernel which route it would use for each request (RTM_GETROUTE,
    /// as `ip route get` does: no packet is sent, policy rules and VRFs apply).
    /// Requests are pipelined: a window of them per write, answers matched by
    /// sequence number.
    ///
    /// With `behindChanges`, the answers include the whole of every change the kernel
    /// had begun when they were asked (a correctness rule, DESIGN §4.2 "Changes
    /// without a message"): the kernel sends a change's message before it has
    /// finished the change — after a link's or an address's message it still
    /// retires, deletes and revives routes and next hops, thousands of them for a
    /// big table, and says nothing of it — all under the routing lock (RTNL) it took
    /// for the change. Lookups don't take that lock; an RTM_GETLINK does. So the
    /// first write begins with one (``putRoutingLockBarrier(seq:into:)``): the kernel
    /// handles a write's requests in order, and the lookups after it wait until the
    /// change that sent the message just read is complete. The wait is the kernel's,
    /// inside the write, with no timeout of ours: as long as anything holds RTNL.
    ///
    /// An IPv6 answer carries its route's lifetime (``RouteMessage/remainingLifetime``):
    /// the kernel's answer to a lookup leaves it out, its answer to the same lookup
    /// with RTM_F_FIB_MATCH (the table entry that answered) has it, so each IPv6
    /// request is asked both ways in the same write.
    package func lookup(_ requests: [LookupRequest], behindChanges: Bool = true) throws(ReachabilityError)
        -> [LookupResult]
    {
        var results = [LookupResult](repeating: .noRoute(errno: 0), count: requests.count)
        var start = 0
        while start < requests.count {
            // The barrier leads the first window only: the kernel takes the lock for it
            // after every change begun before the write.
            let barrier = start == 0 && behindChanges ? 1 : 0
            var end = start
            var count = barrier
            while end < requests.count, count + Self.messages(for: requests[end]) <= Self.lookupWindow + barrier {
                count += Self.messages(for: requests[end])
                end += 1
            }
            try withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { asks throws(ReachabilityError) in
                // Message i asks for request asks[i] / 2: its route (even), or its
                // route's lifetime (odd); -1 is the barrier.
                var message = 0
                if barrier == 1 {
                    asks[0] = -1
                    message = 1
                }
                for index in start..<end {
                    asks[message] = index * 2
                    message += 1
                    if Self.messages(for: requests[index]) == 2 {
                        asks[message] = index * 2 + 1
                        message += 1
                    }
                }
                try exchange(count: count, what: "route lookup") { message, seq, raw in
                    let ask = asks[message]
                    guard ask >= 0 else { return Self.putRoutingLockBarrier(seq: seq, into: raw) }
                    var request = requests[ask / 2]
                    if ask % 2 == 1 { request.fibMatch = true }
                    return Self.putLookup(request, seq: seq, into: raw)
                } answer: { message, answer in
                    let ask = asks[message]
                    switch (ask, answer) {
                    // The barrier's answer (an error: no such link) counts by its coming alone.
                    case (..<0, _): return true
                    case (_, .route(let route, deleted: false)) where ask % 2 == 1:
                        // The earlier end, should the answer be a cached route of its own.
                        if case .route(var answered) = results[ask / 2], route.lifetimeTicks > 0,
                            answered.lifetimeTicks == 0 || route.lifetimeTicks < answered.lifetimeTicks
                        {
                            answered.lifetimeTicks = route.lifetimeTicks
                            results[ask / 2] = .route(answered)
                        }
                    case (_, .error) where ask % 2 == 1: break
                    case (_, .route(let route, deleted: false)): results[ask / 2] = .route(route)
                    case (_, .error(let errno)): results[ask / 2] = .noRoute(errno: errno)
                    default: return false
                    }
                    return true
                }
            }
            start = end
        }
        return results
    }

    /// How many lookups a request takes: two for an IPv6 one not matching the table
    /// entry already (its route's lifetime is asked with RTM_F_FIB_MATCH).
    private static func messages(for request: LookupRequest) -> Int {
        request.destination.family == .ipv6 && !request.fibMatch ? 2 : 1
    }

    /// Writes an RTM_GETLINK for interface index 0 with no name into `raw`: the kernel
    /// takes RTNL to answer it, then refuses it (EINVAL). Returns its length.
    package static func putRoutingLockBarrier(seq: UInt32, into raw: UnsafeMutableRawBufferPointer) -> Int {
        let header = mnl_nlmsg_put_header(raw.baseAddress)!
        header.pointee.nlmsg_type = NLMsgType.getLink
        header.pointee.nlmsg_flags = NLMsgFlag.request
        header.pointee.nlmsg_seq = seq
        _ = mnl_nlmsg_put_extra_header(header, MemoryLayout<ifinfomsg>.size)
        return Int(header.pointee.nlmsg_len)
    }

    /// Sends `count` requests in one write, then waits for an answer to each,
    /// matched by sequence number. `put` writes request `index` with sequence
    /// number `seq` into `raw` (``requestSlot`` zeroed bytes) and returns its length. `answer`
    /// takes each message that carries one of the sequence numbers, until each is
    /// answered; it returns false for a message that is not an answer. `what` names
    /// one request in errors.
    private func exchange(
        count: Int, what: String, put: (_ index: Int, _ seq: UInt32, UnsafeMutableRawBufferPointer) -> Int,
        answer: (_ index: Int, NetlinkMessage) throws(ReachabilityError) -> Bool
    ) throws(ReachabilityError) {
        guard count > 0 else { return }
        let first = sequence &+ 1
        // The socket's own buffer when the requests fit (every lookup window does);
        // a larger one for this call when they don't.
        let needed = count * Self.requestSlot
        let requests =
            needed <= requestBuffer.count ? requestBuffer : .allocate(byteCount: needed, alignment: 8)
        defer { if requests.baseAddress != requestBuffer.baseAddress { requests.deallocate() } }
        var length = 0
        for index in 0..<count {
            // Each request starts where the last ended: netlink lengths are 4-byte aligned.
            let slot = UnsafeMutableRawBufferPointer(rebasing: requests[length..<length + Self.requestSlot])
            slot.initializeMemory(as: UInt8.self, repeating: 0)
            length += put(index, nextSequence(), slot)
        }
        try self.send(UnsafeRawBufferPointer(rebasing: requests[0..<length]))
        // Which requests are answered: on the stack for any lookup window.
        let outcome = withUnsafeTemporaryAllocation(of: Bool.self, capacity: count) {
            answered -> Result<Void, ReachabilityError> in
            answered.initialize(repeating: false)
            var pending = count
            while pending > 0 {
                let datagram: UnsafeRawBufferPointer
                do throws(ReachabilityError) {
                    datagram = try nextReply(
                        timedOut: "the kernel did not answer \(pending) \(what)s",
                        overrun: "\(what) answers overran the socket")
                } catch {
                    return .failure(error)
                }
                var failure: ReachabilityError?
                let malformed = NetlinkParser.forEach(datagram) { item in
                    let offset = Int(item.sequence &- first)
                    guard offset >= 0, offset < count, !answered[offset] else { return true }
                    do throws(ReachabilityError) {
                        guard try answer(offset, item.message) else { return true }
                    } catch {
                        failure = error
                        return false
                    }
                    answered[offset] = true
                    pending -= 1
                    return true
                }
                if let failure { return .failure(failure) }
                if let malformed {
                    return .failure(ReachabilityError(.netlinkProtocol, "\(what) answer: \(malformed)"))
                }
            }
            return .success(())
        }
        try outcome.get()
    }

    /// Writes one RTM_GETROUTE request into `raw`; returns its length.
    package static func putLookup(_ request: LookupRequest, seq: UInt32, into raw: UnsafeMutableRawBufferPointer) -> Int
    {
        let header = mnl_nlmsg_put_header(raw.baseAddress)!
        header.pointee.nlmsg_type = NLMsgType.getRoute
        header.pointee.nlmsg_flags = NLMsgFlag.request
        header.pointee.nlmsg_seq = seq
        let route = mnl_nlmsg_put_extra_header(header, MemoryLayout<rtmsg>.size)!.assumingMemoryBound(to: rtmsg.self)
        let destination = request.destination
        route.pointee.rtm_family = destination.family == .ipv4 ? AddressFamily.inet : AddressFamily.inet6
        route.pointee.rtm_dst_len = destination.family == .ipv4 ? 32 : 128
        destination.withNetworkOrderBytes { mnl_attr_put(header, RTA.dst, $0.count, $0.baseAddress) }
        if let source = request.source {
            route.pointee.rtm_src_len = source.family == .ipv4 ? 32 : 128
            source.withNetworkOrderBytes { mnl_attr_put(header, RTA.src, $0.count, $0.baseAddress) }
        }
        if let index = request.outputInterface {
            mnl_attr_put_u32(header, RTA.oif, UInt32(bitPattern: index))
        } else if destination.scopeID != 0 {
            // A zoned (link-local) destination is looked up on its interface.
            mnl_attr_put_u32(header, RTA.oif, destination.scopeID)
        }
        if request.fibMatch {
            route.pointee.rtm_flags |= RTMFlag.fibMatch
        }
        return Int(header.pointee.nlmsg_len)
    }
}
