import CNetlink
package import Glibc

// Sockets, libmnl's netlink sockets, poll and eventfd: the calls of the monitor,
// its netlink sockets and the resolver check. Every `subject` names the socket (a
// netlink socket's role, a nameserver) in errors and for the fault plan.

extension SystemCalls {
    /// socket(2) (close-on-exec is added).
    package func socket(family: Int32, type: Int32, protocol: Int32 = 0, subject: SystemCallSubject) -> Result<
        Int32, SystemError
    > {
        let (fd, error) = perform(.socket, subject, retryingInterrupts: false) {
            Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        }
        return fd >= 0 ? .success(fd) : .failure(SystemError("socket", subject: subject, errno: error))
    }

    /// connect(2) to `address` (`length` bytes).
    package func connect(
        _ fd: Int32, to address: UnsafePointer<Glibc.sockaddr>, length: Glibc.socklen_t, subject: SystemCallSubject
    )
        -> Result<Void, SystemError>
    {
        let (rc, error) = perform(.connect, subject, retryingInterrupts: false) { Glibc.connect(fd, address, length) }
        return rc == 0 ? .success(()) : .failure(SystemError("connect", subject: subject, errno: error))
    }

    /// send(2) of `bytes` with `flags`, EINTR retried: how many bytes were sent.
    package func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32 = 0, subject: SystemCallSubject)
        -> Result<
            Int, SystemError
        >
    {
        let (count, error) = perform(.send, subject, retryingInterrupts: true) {
            Glibc.send(fd, bytes.baseAddress, bytes.count, flags)
        }
        return count >= 0 ? .success(count) : .failure(SystemError("send", subject: subject, errno: error))
    }

    /// recv(2) into `buffer`, EINTR retried: how many bytes came.
    package func recv(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, subject: SystemCallSubject) -> Result<
        Int, SystemError
    > {
        let (count, error) = perform(.recv, subject, retryingInterrupts: true) {
            Glibc.recv(fd, buffer.baseAddress, buffer.count, 0)
        }
        return count >= 0 ? .success(count) : .failure(SystemError("recv", subject: subject, errno: error))
    }

    /// One datagram as recvmmsg(2) gave it on a netlink socket.
    package struct NetlinkReceipt {
        /// Its length in bytes (at the start of the buffer).
        package var count: Int
        /// The sender's port: 0 for the kernel.
        package var senderPort: UInt32
        /// Its `msg_flags` (MSG_TRUNC: the datagram did not fit).
        package var flags: Int32
    }

    /// recvmmsg(2) of the datagrams queued on netlink socket `fd`, without waiting:
    /// at most `receipts.count`, datagram `i` into `slots[i * slotSize ..< (i + 1) *
    /// slotSize]` and its length, sender and flags into `receipts[i]`. Returns how
    /// many arrived (at least one); EAGAIN when none was queued. EINTR retried. One
    /// system call for a burst of events where recvmsg(2) would take one per
    /// datagram.
    package func recvmmsg(
        _ fd: Int32, into slots: UnsafeMutableRawBufferPointer, slotSize: Int,
        receipts: UnsafeMutableBufferPointer<NetlinkReceipt>, subject: SystemCallSubject
    ) -> Result<Int, SystemError> {
        let count = min(receipts.count, slots.count / slotSize)
        precondition(count > 0, "recvmmsg needs room for one datagram")
        return withUnsafeTemporaryAllocation(of: sockaddr_nl.self, capacity: count) { senders in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { vectors in
                withUnsafeTemporaryAllocation(of: cnl_mmsghdr.self, capacity: count) { messages in
                    for index in 0..<count {
                        senders.initializeElement(at: index, to: sockaddr_nl())
                        vectors.initializeElement(
                            at: index, to: iovec(iov_base: slots.baseAddress! + index * slotSize, iov_len: slotSize))
                        var header = msghdr()
                        header.msg_name = UnsafeMutableRawPointer(senders.baseAddress! + index)
                        header.msg_namelen = socklen_t(MemoryLayout<sockaddr_nl>.size)
                        header.msg_iov = vectors.baseAddress! + index
                        header.msg_iovlen = 1
                        messages.initializeElement(at: index, to: cnl_mmsghdr(msg_hdr: header, msg_len: 0))
                    }
                    let (received, error) = perform(.recvmmsg, subject, retryingInterrupts: true) {
                        cnl_recvmmsg(fd, messages.baseAddress, UInt32(count))
                    }
                    guard received > 0 else {
                        return .failure(SystemError("recvmmsg", subject: subject, errno: received < 0 ? error : EAGAIN))
                    }
                    for index in 0..<Int(received) {
                        receipts[index] = NetlinkReceipt(
                            count: Int(messages[index].msg_len), senderPort: senders[index].nl_pid,
                            flags: messages[index].msg_hdr.msg_flags)
                    }
                    return .success(Int(received))
                }
            }
        }
    }

    /// poll(2) on at most 64 descriptors (negative ones are skipped), EINTR retried,
    /// without allocating (the reader's wait on every wake-up): bit `i` of the
    /// answer is set when `fds[i]` is readable (or in error, or hung up). Bit `i` of
    /// `priority` waits for POLLPRI instead of POLLIN on `fds[i]`: a mount table
    /// (`/proc/self/mountinfo`), always readable, says POLLPRI when it changed.
    package func poll(
        _ fds: [Int32], timeoutMilliseconds: Int32, subject: SystemCallSubject, priority: UInt64 = 0
    ) -> Result<UInt64, SystemError> {
        precondition(fds.count <= 64, "poll takes at most 64 descriptors")
        return withUnsafeTemporaryAllocation(of: pollfd.self, capacity: fds.count) { entries in
            for (index, fd) in fds.enumerated() {
                let events = priority & 1 << UInt64(index) != 0 ? POLLPRI : POLLIN
                entries.initializeElement(at: index, to: pollfd(fd: fd, events: Int16(events), revents: 0))
            }
            let (count, error) = perform(.poll, subject, retryingInterrupts: true) {
                Glibc.poll(entries.baseAddress, nfds_t(fds.count), timeoutMilliseconds)
            }
            guard count >= 0 else { return .failure(SystemError("poll", subject: subject, errno: error)) }
            var ready: UInt64 = 0
            for index in 0..<fds.count where entries[index].revents & Int16(POLLIN | POLLPRI | POLLERR | POLLHUP) != 0 {
                ready |= 1 << UInt64(index)
            }
            return .success(ready)
        }
    }

    /// setsockopt(2) with an Int32 value.
    package func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32, subject: SystemCallSubject) -> Result<
        Void, SystemError
    > {
        var value = value
        let (rc, error) = perform(.setsockopt, subject, retryingInterrupts: false) {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        return rc == 0
            ? .success(())
            : .failure(SystemError(call: "setsockopt(\(subject.description), \(level), \(name))", errno: error))
    }

    /// setsockopt(2) SO_ATTACH_FILTER: `program` (classic BPF: struct sock_filter's code,
    /// jt, jf, k) decides, in the kernel, which datagrams the socket queues.
    package func attachFilter(
        _ fd: Int32, _ program: [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)], subject: SystemCallSubject
    ) -> Result<Void, SystemError> {
        let instructions = program.map { sock_filter(code: $0.code, jt: $0.jt, jf: $0.jf, k: $0.k) }
        let (rc, error) = perform(.setsockopt, subject, retryingInterrupts: false) {
            instructions.withUnsafeBufferPointer { cnl_attach_filter(fd, $0.baseAddress, UInt16(clamping: $0.count)) }
        }
        return rc == 0
            ? .success(())
            : .failure(SystemError(call: "setsockopt(\(subject.description), SO_ATTACH_FILTER)", errno: error))
    }

    /// getsockopt(2) for an Int32 value; nil when it fails.
    package func option(_ fd: Int32, level: Int32, name: Int32, subject: SystemCallSubject) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        let (rc, _) = perform(.getsockopt, subject, retryingInterrupts: false) {
            getsockopt(fd, level, name, &value, &length)
        }
        return rc == 0 ? value : nil
    }
}

// MARK: libmnl

extension SystemCalls {
    /// A netlink socket of protocol `bus` (libmnl's mnl_socket_open2: socket(2)).
    package func netlinkOpen(bus: Int32, flags: Int32, subject: SystemCallSubject) -> Result<OpaquePointer, SystemError>
    {
        if let injected = injected(.socket, subject) {
            return .failure(SystemError("socket", subject: subject, errno: injected))
        }
        guard let handle = mnl_socket_open2(bus, flags) else {
            return .failure(SystemError("socket", subject: subject, errno: Glibc.errno))
        }
        return .success(handle)
    }

    /// Binds a netlink socket to a port of the kernel's choosing, joining `groups` (a
    /// mask of groups 1–32; mnl_socket_bind: bind(2) and getsockname(2)).
    package func netlinkBind(_ handle: OpaquePointer, groups: UInt32 = 0, subject: SystemCallSubject) -> Result<
        Void, SystemError
    > {
        let (rc, error) = perform(.bind, subject, retryingInterrupts: false) { mnl_socket_bind(handle, groups, 0) }
        return rc == 0 ? .success(()) : .failure(SystemError("bind", subject: subject, errno: error))
    }

    /// The descriptor of a libmnl socket (no system call: libmnl keeps it).
    package func netlinkDescriptor(_ handle: OpaquePointer) -> Int32 {
        mnl_socket_get_fd(handle)
    }

    /// Sends `bytes` to the kernel (mnl_socket_sendto: sendto(2)), EINTR retried.
    package func netlinkSend(_ handle: OpaquePointer, _ bytes: UnsafeRawBufferPointer, subject: SystemCallSubject)
        -> Result<Void, SystemError>
    {
        let (rc, error) = perform(.sendto, subject, retryingInterrupts: true) {
            mnl_socket_sendto(handle, bytes.baseAddress, bytes.count)
        }
        return rc >= 0 ? .success(()) : .failure(SystemError("sendto", subject: subject, errno: error))
    }

    /// Closes a libmnl socket (close(2); as with ``close(_:)``, always closed).
    package func netlinkClose(_ handle: OpaquePointer) {
        _ = injected(.close, nil)
        _ = mnl_socket_close(handle)
    }
}

// MARK: epoll

extension SystemCalls {
    /// A new epoll instance (epoll_create1(2)), close-on-exec.
    package func epollCreate() -> Result<Int32, SystemError> {
        let (fd, error) = perform(.epoll, .monitor, retryingInterrupts: false) { cnl_epoll_create() }
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "epoll_create1", errno: error))
    }

    /// Adds `fd` to `epoll` with `token` (epoll_ctl(2) EPOLL_CTL_ADD), for input, or
    /// with `priority` for POLLPRI (a mount table's change).
    package func epollAdd(_ epoll: Int32, _ fd: Int32, token: UInt64, priority: Bool = false) -> Result<
        Void, SystemError
    > {
        let (rc, error) = perform(.epoll, .monitor, retryingInterrupts: false) {
            cnl_epoll_add(epoll, fd, token, priority ? 1 : 0)
        }
        return rc == 0 ? .success(()) : .failure(SystemError(call: "epoll_ctl(EPOLL_CTL_ADD)", errno: error))
    }

    /// Removes `fd` from `epoll` (epoll_ctl(2) EPOLL_CTL_DEL). Not in the plan: it
    /// can't fail for a descriptor that was added, and closing it removes it anyway.
    package func epollRemove(_ epoll: Int32, _ fd: Int32) {
        _ = cnl_epoll_remove(epoll, fd)
    }

    /// Waits up to `timeoutMilliseconds` (-1: no limit) on `epoll` (epoll_wait(2),
    /// EINTR retried, as the reader's wait: the `.poll` call on `subject`); writes
    /// the ready tokens into `tokens`, returns how many.
    package func epollWait(
        _ epoll: Int32, into tokens: UnsafeMutableBufferPointer<UInt64>, timeoutMilliseconds: Int32,
        subject: SystemCallSubject
    ) -> Result<Int, SystemError> {
        let (count, error) = perform(.poll, subject, retryingInterrupts: true) {
            cnl_epoll_wait(epoll, tokens.baseAddress, Int32(tokens.count), timeoutMilliseconds)
        }
        return count >= 0 ? .success(Int(count)) : .failure(SystemError("epoll_wait", subject: subject, errno: error))
    }
}

// MARK: eventfd

extension SystemCalls {
    /// An eventfd(2), close-on-exec and non-blocking.
    package func eventfd() -> Result<Int32, SystemError> {
        let (fd, error) = perform(.eventfd, nil, retryingInterrupts: false) { cnl_eventfd() }
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "eventfd", errno: error))
    }

    /// Adds one to an eventfd counter (wakes a poller). It can't fail but for a
    /// counter at its maximum, which one wake-up per stop never reaches.
    package func signal(_ fd: Int32) {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(fd, $0, subject: .eventfd) }
    }

    /// Resets an eventfd counter (nothing to read is no error: EAGAIN).
    package func drain(_ fd: Int32) {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { read(fd, into: $0, subject: .eventfd) }
    }
}
