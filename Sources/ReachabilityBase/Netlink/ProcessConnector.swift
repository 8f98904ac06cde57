import Glibc
@_spi(Testing) package import ReachabilitySystem

/// The kernel's process events (the proc connector, <linux/cn_proc.h>): a message
/// for every fork, exec and exit on the host. The namespace monitor looks at
/// `/proc` again when a process starts or ends, which is when a namespace held
/// only by processes can come or go, instead of on a timer.
///
/// The kernel sends them only to a listener with CAP_NET_ADMIN in the host's user,
/// PID and network namespaces (root on the host; the DaemonSet), and ignores or
/// refuses any other: ``init(systemCalls:)`` is nil then, and the monitor falls back
/// to its timer. Only the kernel's messages reach the socket; one that can't be
/// read as an event still counts as one (the scan it asks for is the resync).
package struct ProcessConnector {
    /// NETLINK_CONNECTOR, the connector bus (<linux/netlink.h>).
    package static let bus: Int32 = 11
    /// CN_IDX_PROC and CN_VAL_PROC (<linux/connector.h>): the process events'
    /// multicast group and the callback's id.
    package static let index: UInt32 = 1
    package static let value: UInt32 = 1
    /// PROC_CN_MCAST_LISTEN and PROC_CN_MCAST_IGNORE.
    package static let listen: UInt32 = 1
    package static let ignore: UInt32 = 2
    /// `enum what` of a struct proc_event: PROC_EVENT_NONE (the answer to a listen),
    /// _FORK, _EXEC and _EXIT; the others (uid, gid, sid, ptrace, comm, coredump) don't
    /// start or end a process.
    package static let eventNone: UInt32 = 0
    package static let eventFork: UInt32 = 1
    package static let eventExec: UInt32 = 2
    package static let eventExit: UInt32 = 0x8000_0000
    /// sizeof(struct nlmsghdr), sizeof(struct cn_msg), and where a struct proc_event's
    /// event_data starts.
    package static let headerSize = 16
    package static let messageSize = 20
    package static let eventDataOffset = 16

    /// What one datagram from the socket is.
    package enum Message: Equatable {
        /// The kernel's answer to a listen request: the request's `token` plus
        /// one (the kernel numbers the message itself), and 0 or an errno.
        case answer(acknowledging: UInt32, error: UInt32)
        /// A process started, changed its program, or ended; or a message that
        /// can't be read (it counts: a scan is the resync).
        case process
        /// A thread's start or end, or an event that starts or ends nothing.
        case other
    }

    /// The listen (or ignore) request `token`, as the kernel takes it: a netlink
    /// header, a connector header, the operation.
    package static func request(_ operation: UInt32, token: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        // Netlink speaks the host's byte order.
        func append(_ value: some FixedWidthInteger) { withUnsafeBytes(of: value) { bytes += $0 } }
        append(UInt32(headerSize + messageSize + 4))  // nlmsg_len
        append(UInt16(NLMsgType.done))  // nlmsg_type: the connector's
        append(UInt16(0))  // nlmsg_flags
        append(token)  // nlmsg_seq
        append(UInt32(0))  // nlmsg_pid: the kernel fills it
        append(index)
        append(value)
        append(token)  // cn_msg.seq
        append(token)  // cn_msg.ack: the answer's is this plus one
        append(UInt16(4))  // cn_msg.len: the operation's
        append(UInt16(0))  // cn_msg.flags
        append(operation)
        return bytes
    }

    /// What `datagram` says (one message: the kernel sends each event alone).
    package static func message(_ datagram: UnsafeRawBufferPointer) -> Message {
        let event = headerSize + messageSize
        guard datagram.count >= event + eventDataOffset + 8,
            datagram.loadUnaligned(fromByteOffset: headerSize, as: UInt32.self) == index,
            datagram.loadUnaligned(fromByteOffset: headerSize + 4, as: UInt32.self) == value
        else { return .process }
        let data = event + eventDataOffset
        let first = datagram.loadUnaligned(fromByteOffset: data, as: UInt32.self)
        let second = datagram.loadUnaligned(fromByteOffset: data + 4, as: UInt32.self)
        switch datagram.loadUnaligned(fromByteOffset: event, as: UInt32.self) {
        case eventNone:
            return .answer(
                acknowledging: datagram.loadUnaligned(fromByteOffset: headerSize + 12, as: UInt32.self), error: first)
        case eventExec:
            return .process
        case eventFork:
            // parent pid, parent tgid, child pid, child tgid: a new thread has a child
            // pid that isn't its tgid.
            guard datagram.count >= data + 16 else { return .process }
            let child = datagram.loadUnaligned(fromByteOffset: data + 8, as: UInt32.self)
            let group = datagram.loadUnaligned(fromByteOffset: data + 12, as: UInt32.self)
            return child == group ? .process : .other
        case eventExit:
            return first == second ? .process : .other
        default:
            return .other
        }
    }

    /// classic BPF opcodes (<linux/bpf_common.h>, <linux/filter.h>): a word loaded
    /// from an offset, a jump if equal to the constant or to X, A into X, a return.
    package static let loadWord: UInt16 = 0x20  // BPF_LD | BPF_W | BPF_ABS
    package static let jumpIfConstant: UInt16 = 0x15  // BPF_JMP | BPF_JEQ | BPF_K
    package static let jumpIfX: UInt16 = 0x1d  // BPF_JMP | BPF_JEQ | BPF_X
    package static let intoX: UInt16 = 0x07  // BPF_MISC | BPF_TAX
    package static let returnConstant: UInt16 = 0x06  // BPF_RET | BPF_K

    /// The socket's filter, run by the kernel on each message: it keeps the answer to a
    /// listen and a process's fork, exec and exit, and drops a thread's and the other
    /// events, so that a host's thread churn never wakes the monitor. (A load reads in
    /// network byte order: the constants are compared as `bigEndian`.)
    package static let filter: [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)] = {
        let what = UInt32(headerSize + messageSize)
        let data = what + UInt32(eventDataOffset)
        // Instruction 13 keeps the message, 14 drops it; a jump goes 1 + jt (or jf) on.
        return [
            (loadWord, 0, 0, what),  // 0
            (jumpIfConstant, 11, 0, eventNone.bigEndian),  // 1: the answer
            (jumpIfConstant, 10, 0, eventExec.bigEndian),  // 2
            (jumpIfConstant, 1, 0, eventFork.bigEndian),  // 3: to 5
            (jumpIfConstant, 4, 9, eventExit.bigEndian),  // 4: to 9, else drop
            (loadWord, 0, 0, data + 8),  // 5: the child's pid
            (intoX, 0, 0, 0),  // 6
            (loadWord, 0, 0, data + 12),  // 7: the child's tgid
            (jumpIfX, 4, 5, 0),  // 8: a process (pid == tgid), else a thread
            (loadWord, 0, 0, data),  // 9: the pid that ended
            (intoX, 0, 0, 0),  // 10
            (loadWord, 0, 0, data + 4),  // 11: its tgid
            (jumpIfX, 0, 1, 0),  // 12
            (returnConstant, 0, 0, 0xFFFF_FFFF),  // 13: keep
            (returnConstant, 0, 0, 0),  // 14: drop
        ]
    }()

    private let handle: OpaquePointer
    /// The descriptor, for poll(2).
    package let fd: Int32
    private let systemCalls: SystemCalls
    private let token: UInt32
    private static let subject = SystemCallSubject.netlink(.processEvents)

    /// Subscribes to the process events; nil when the kernel won't send them (no
    /// CAP_NET_ADMIN, or not in the host's namespaces) or a call failed (out of
    /// descriptors).
    package init?(systemCalls: SystemCalls) {
        let subject = Self.subject
        guard
            case .success(let handle) = systemCalls.netlinkOpen(
                bus: Self.bus, flags: SockFlag.nonBlock | SockFlag.closeOnExec, subject: subject)
        else { return nil }
        self.handle = handle
        self.fd = systemCalls.netlinkDescriptor(handle)
        self.systemCalls = systemCalls
        // Not 0 or all ones: an event's cn_msg.ack is 0, and the answer's is this plus one.
        let token =
            1 + (UInt32(truncatingIfNeeded: getpid()) &* 2_654_435_761 &+ UInt32(truncatingIfNeeded: fd)) % 0xFFFF_FFFD
        self.token = token
        // Without the filter (it can fail only for memory), thread events are read and
        // dropped here instead.
        _ = systemCalls.attachFilter(fd, Self.filter, subject: subject)
        guard case .success = systemCalls.netlinkBind(handle, groups: Self.index, subject: subject) else {
            systemCalls.netlinkClose(handle)
            return nil
        }
        // The kernel answers within the send, on the group: the answer is queued now,
        // behind the events since the bind, or never comes (a listener outside the host's
        // user or PID namespace is ignored; in another network namespace the send fails,
        // the connector being the host namespace's only). Events come from the bind on
        // whenever the kernel counts a listener, and a listener that ended without IGNORE
        // counts for ever: a busy host can overflow the queue before the answer, which is
        // then dropped. So a listen whose drain overflowed is asked again (IGNORE first,
        // so that the kernel counts it once), up to `listenAttempts` times.
        var answered = false
        for _ in 0..<Self.listenAttempts {
            guard send(Self.listen, token: token) else {
                systemCalls.netlinkClose(handle)
                return nil
            }
            let overflowed = drain { message in
                if case .answer(let acknowledged, let error) = message, acknowledged == token &+ 1 {
                    answered = error == 0
                }
            }
            guard !answered, overflowed else { break }
            _ = send(Self.ignore, token: token &+ 2)
        }
        guard answered else {
            // An answer lost (the queue overflowed) may hide a listen the kernel counted:
            // take it back (ignored, as the listen was, where the kernel ignores this one).
            close()
            return nil
        }
    }

    /// How many times a listen is asked whose answer an overflow may have dropped.
    package static let listenAttempts = 4

    private func send(_ operation: UInt32, token: UInt32) -> Bool {
        let request = Self.request(operation, token: token)
        if case .success = request.withUnsafeBytes({ systemCalls.netlinkSend(handle, $0, subject: Self.subject) }) {
            return true
        }
        return false
    }

    /// Reads every queued message: whether one was a process's start, exec or end,
    /// or messages were lost (the queue overflowed: ENOBUFS).
    package func drain() -> Bool {
        var started = false
        let lost = drain { message in if message == .process { started = true } }
        return started || lost
    }

    /// Reads the queued messages into `each`, up to ``drainLimit``; true when some
    /// were lost or left (a flood: what they say is only that a scan is due).
    func drain(_ each: (Message) -> Void) -> Bool {
        // An event is under 100 bytes; a longer datagram is read in part, and its
        // start says what it is.
        withUnsafeTemporaryAllocation(byteCount: 256, alignment: 8) { raw in
            var lost = false
            for _ in 0..<Self.drainLimit {
                switch systemCalls.read(fd, into: raw, subject: Self.subject) {
                case .success(let count) where count > 0:
                    each(Self.message(UnsafeRawBufferPointer(rebasing: raw[..<count])))
                case .failure(let failure) where failure.errno == Errno.noBufs:
                    lost = true
                default:
                    return lost
                }
            }
            return true
        }
    }

    /// The messages one drain reads at most: a fork storm is not read to its end.
    package static let drainLimit = 1024

    /// Says the listener is gone (the kernel counts listeners, and makes events
    /// while there is one), and closes the socket.
    package func close() {
        _ = send(Self.ignore, token: token)
        systemCalls.netlinkClose(handle)
    }
}
