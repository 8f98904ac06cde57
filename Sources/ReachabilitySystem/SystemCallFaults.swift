import Glibc

/// A fault plan: which system calls of the library fail, with which errno, and
/// when, or are held back for a while (``delay(_:by:count:matching:)``). Tests set one on a ``NetworkEnvironment`` (its `systemCalls`) to make any
/// call of that environment's monitor, sockets, file readers, watches, resolver
/// check or name resolutions fail without root (DESIGN §10): for example
/// `faults.inject(.recvmsg, errno: ENOBUFS, matching: "NETLINK_ROUTE events")`, with
/// `environment.systemCalls = SystemCalls(faults: faults)`.
///
/// Each rule names a call, an errno, how many times it fails the call (once, a
/// number of times, always), after how many matching calls that succeed, and
/// optionally a substring of the call's subject: the path of open, stat, access,
/// readlink, realpath, opendir, inotify_add_watch and ioctl; the socket's name for
/// socket calls (a netlink socket's protocol and role: "NETLINK_ROUTE events",
/// "NETLINK_ROUTE requests", "NETLINK_ROUTE one-off", "NETLINK_GENERIC nl80211"; a
/// nameserver's address for the resolver check, "nameserver 192.0.2.53"); "monitor"
/// for the poll of the monitor's reader thread; the name for getaddrinfo; the
/// thread's name for pthread_create ("reachability-nl", "reachability-ns"); a file's
/// path for its read and fstat, "inotify" or "eventfd" for reads of those; the
/// namespace path for setns; the target for mount. A rule with a subject never
/// matches a call without one. The rules are asked in the order they were added,
/// and the first that fails a call decides its errno. Rules can be added and
/// removed while the library runs.
///
/// A failed call is not made. An injected EINTR is retried like a real one where
/// the library retries it (so a rule that fails a retried call with EINTR
/// `always` would spin). close always closes (as Linux does); its failure is
/// counted and ignored, as a real one is.
///
/// Not API: SPI `Testing`. `Sendable`: its state is behind a lock.
@_spi(Testing) public final class SystemCallFaults: Sendable {
    /// A system call (or libc/libmnl wrapper of one) the library makes.
    @_spi(Testing) public enum Call: String, Sendable, Hashable, CaseIterable {
        /// open(2): files, namespace files.
        case open
        /// read(2): files, the inotify descriptor, the monitor's eventfd.
        case read
        /// write(2): the monitor's eventfd.
        case write
        /// close(2): counted, never failed (see the type's notes).
        case close
        /// socket(2): netlink sockets (libmnl's mnl_socket_open2), the resolver check's.
        case socket
        /// bind(2) of a netlink socket (mnl_socket_bind).
        case bind
        /// connect(2) of the resolver check's UDP socket.
        case connect
        /// send(2) of the resolver check's query.
        case send
        /// recv(2) of the resolver check's answer.
        case recv
        /// sendto(2) of netlink requests (mnl_socket_sendto).
        case sendto
        /// Reading netlink datagrams: recvmmsg(2) (it replaced recvmsg(2), whose name
        /// the plans kept).
        case recvmsg
        /// poll(2): the monitor's reader, netlink replies, the resolver check.
        case poll
        /// setsockopt(2) of netlink sockets (buffer size, groups, extended ACK).
        case setsockopt
        /// getsockopt(2): the receive buffer the kernel granted.
        case getsockopt
        /// stat(2): lease files, a resolv.conf path.
        case stat
        /// fstat(2): files being read, namespace files.
        case fstat
        /// access(2): sysfs wireless markers, `/etc/netns/NAME/resolv.conf`.
        case access
        /// readlink(2): sysfs device drivers.
        case readlink
        /// realpath(3): where `/etc/resolv.conf` points.
        case realpath
        /// opendir(3) (with readdir and closedir): lease directories, `/etc/netns/NAME`.
        case opendir
        /// ioctl(2) NS_GET_NSTYPE on namespace files.
        case ioctl
        /// eventfd(2): the monitor's stop signal.
        case eventfd
        /// inotify_init1(2): the monitor's file watches.
        case inotifyInit1 = "inotify_init1"
        /// inotify_add_watch(2): one watched directory.
        case inotifyAddWatch = "inotify_add_watch"
        /// pidfd_open(2): the process behind `/proc/PID/ns/net`.
        case pidfdOpen = "pidfd_open"
        /// setns(2): entering a watched namespace.
        case setns
        /// unshare(2): a resolution's private mount namespace.
        case unshare
        /// mount(2): `/etc/netns/NAME` files over `/etc`.
        case mount
        /// prctl(2) PR_SET_NAME: naming a thread (a failure is ignored).
        case prctl
        /// pthread_create(3): the reader, namespace helpers.
        case pthreadCreate = "pthread_create"
        /// getaddrinfo(3): a hostname's resolution; fails with EAI_SYSTEM and the errno.
        case getaddrinfo
        /// if_nametoindex(3): an IPv6 zone given by name.
        case ifNameToIndex = "if_nametoindex"
        /// getrlimit(2) RLIMIT_NOFILE: the resolver's descriptor budget (a failure:
        /// no budget known, none applied).
        case getrlimit
    }

    /// How many times a rule fails its call.
    @_spi(Testing) public enum Count: Sendable, Hashable {
        /// The next matching call only.
        case once
        /// The next `n` matching calls.
        case times(Int)
        /// Every matching call, until the rule is removed.
        case always

        /// How many calls it takes; nil: all.
        package var calls: Int? {
            switch self {
            case .once: 1
            case .times(let times): max(times, 0)
            case .always: nil
            }
        }
    }

    /// A rule of the plan, as ``inject(_:errno:count:after:matching:)`` returned it.
    @_spi(Testing) public struct Rule: Hashable, Sendable {
        package let id: Int
    }

    private struct Entry {
        package var call: Call
        package var errno: Int32
        /// Failures left; nil: always.
        package var remaining: Int?
        /// Matching calls to let through first.
        package var skip: Int
        package var subject: String?
        /// A rule that delays the call rather than failing it.
        package var delay: Duration? = nil
        package var fired = 0
        package var active = true

        package func matches(_ call: Call, _ subject: String?) -> Bool {
            guard active, call == self.call else { return false }
            guard let wanted = self.subject else { return true }
            guard let subject else { return false }
            // A byte search, not `StringProtocol.contains(_:)`: that one links the
            // standard library's regex engine into every program of the core.
            let haystack = Array(subject.utf8)
            let needle = Array(wanted.utf8)
            guard needle.count <= haystack.count else { return false }
            guard !needle.isEmpty else { return true }
            return (0...(haystack.count - needle.count)).contains { start in
                haystack[start..<(start + needle.count)].elementsEqual(needle)
            }
        }
    }

    private struct State {
        package var entries: [Entry] = []
        package var attempts: [Call: Int] = [:]
    }

    private let state = LockedValue(State())

    /// An empty plan: every call is made.
    @_spi(Testing) public init() {}

    private func withLock<T>(_ body: (inout State) -> T) -> T {
        state.withLock(body)
    }

    /// Makes `call` fail with `errno`: `count` times, once `successes` matching
    /// calls have gone through; only calls whose subject contains `subject`, when
    /// one is given. Returns the rule, for ``fired(_:)`` and ``remove(_:)``.
    @_spi(Testing) @discardableResult
    public func inject(
        _ call: Call, errno: Int32, count: Count = .once, after successes: Int = 0, matching subject: String? = nil
    ) -> Rule {
        return withLock { state in
            state.entries.append(
                Entry(call: call, errno: errno, remaining: count.calls, skip: max(successes, 0), subject: subject))
            return Rule(id: state.entries.count - 1)
        }
    }

    /// Makes `call` (on a subject containing `subject`, when given) wait `delay`, or
    /// until the rule is removed, before it is made, then makes it: a slow kernel or
    /// a stuck driver. `count` as for ``inject(_:errno:count:after:matching:)``.
    @_spi(Testing) @discardableResult
    public func delay(_ call: Call, by delay: Duration, count: Count = .always, matching subject: String? = nil)
        -> Rule
    {
        return withLock { state in
            state.entries.append(
                Entry(call: call, errno: 0, remaining: count.calls, skip: 0, subject: subject, delay: delay))
            return Rule(id: state.entries.count - 1)
        }
    }

    /// Stops `rule` from failing or delaying any more calls, and ends the delays it
    /// holds calls in (its ``fired(_:)`` count stays).
    @_spi(Testing) public func remove(_ rule: Rule) {
        withLock { $0.entries[rule.id].active = false }
    }

    /// Stops every rule: from now on every call is made.
    @_spi(Testing) public func removeAll() {
        withLock { state in
            for index in state.entries.indices { state.entries[index].active = false }
        }
    }

    /// How many calls `rule` has failed so far.
    @_spi(Testing) public func fired(_ rule: Rule) -> Int {
        withLock { $0.entries[rule.id].fired }
    }

    /// How many calls of kind `call` asked the plan so far, failed or not (each
    /// retry of an interrupted call counts).
    @_spi(Testing) public func attempts(_ call: Call) -> Int {
        withLock { $0.attempts[call, default: 0] }
    }

    /// The errno `call` on `subject` fails with now, if a rule says so; counts the
    /// attempt and the rules' skips and failures.
    package func failure(of call: Call, subject: String?) -> Int32? {
        let (failure, delay, delaying) = withLock { state -> (Int32?, Duration, [Int]) in
            state.attempts[call, default: 0] += 1
            var failure: Int32?
            var delay = Duration.zero
            var delaying: [Int] = []
            for index in state.entries.indices where state.entries[index].matches(call, subject) {
                if state.entries[index].skip > 0 {
                    state.entries[index].skip -= 1
                    continue
                }
                let wait = state.entries[index].delay
                guard wait != nil || failure == nil, state.entries[index].remaining.map({ $0 > 0 }) ?? true
                else { continue }
                state.entries[index].fired += 1
                if let left = state.entries[index].remaining { state.entries[index].remaining = left - 1 }
                if let wait {
                    delay = max(delay, wait)
                    delaying.append(index)
                } else {
                    failure = state.entries[index].errno
                }
            }
            return (failure, delay, delaying)
        }
        // Outside the lock, so the plan's other calls go on and a test can end the wait.
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end, withLock({ state in delaying.contains { state.entries[$0].active } }) {
            usleep(2000)
        }
        return failure
    }
}
