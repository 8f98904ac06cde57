/// A system call (or libc/libmnl wrapper of one) the library makes: what a fault
/// rule names, and what each ``SystemCalls`` method says it makes.
@_spi(Testing) public enum SystemCall: Sendable, Hashable, CaseIterable {
    /// open(2): files, namespace files.
    case open
    /// read(2): files, the inotify descriptor, the monitor's eventfd.
    case read
    /// write(2): the monitor's eventfd.
    case write
    /// close(2): a fault plan counts it, never fails it.
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
    /// Reading netlink datagrams: recvmmsg(2), several per call.
    case recvmmsg
    /// poll(2) and epoll_wait(2): the monitors' reader, netlink replies, the resolver check.
    case poll
    /// epoll_create1(2) and epoll_ctl(2): the monitors' reader's set of descriptors.
    case epoll
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
    case inotifyInit1
    /// inotify_add_watch(2): one watched directory.
    case inotifyAddWatch
    /// pidfd_open(2): the process behind `/proc/PID/ns/net`.
    case pidfdOpen
    /// setns(2): entering a watched namespace.
    case setns
    /// unshare(2): a resolution's private mount namespace.
    case unshare
    /// mount(2): `/etc/netns/NAME` files over `/etc`.
    case mount
    /// prctl(2) PR_SET_NAME: naming a thread (a failure is ignored).
    case prctl
    /// pthread_create(3): the reader, namespace helpers.
    case pthreadCreate
    /// getaddrinfo(3): a hostname's resolution; fails with EAI_SYSTEM and the errno.
    case getaddrinfo
    /// if_nametoindex(3): an IPv6 zone given by name.
    case ifNameToIndex
    /// getrlimit(2) RLIMIT_NOFILE: the resolver's descriptor budget (a failure:
    /// no budget known, none applied).
    case getrlimit
}

/// What a system call is made on, typed: errors show its ``description``, and a
/// fault rule names one to match calls on it, so that rewording an error can't make
/// a rule stop matching.
@_spi(Testing) public enum SystemCallSubject: Sendable, Hashable, CustomStringConvertible {
    /// A file, directory or namespace file by path: open, stat, access, readlink,
    /// realpath, opendir, inotify_add_watch, ioctl, setns, mount; a file's read and
    /// fstat; a unix socket's calls.
    case path(String)
    /// One of the library's netlink sockets.
    case netlink(NetlinkRole)
    /// The resolver check's socket to the nameserver at this address.
    case nameserver(String)
    /// The resolver check's wait on its sockets to these nameservers.
    case nameservers([String])
    /// The poll of a monitor's reader thread.
    case monitor
    /// A read of the monitor's inotify descriptor.
    case inotify
    /// A read or write of the monitor's eventfd.
    case eventfd
    /// A thread, by its name ("reachability-nl"): pthread_create, prctl.
    case thread(String)
    /// A name getaddrinfo resolves.
    case host(String)
    /// A process, by pid: pidfd_open.
    case process(Int32)
    /// An interface, by name: if_nametoindex.
    case interface(String)

    /// As errors show it: "NETLINK_ROUTE events", "nameserver 192.0.2.53", a path.
    @_spi(Testing) public var description: String {
        switch self {
        case .path(let text), .thread(let text), .host(let text), .interface(let text): text
        case .netlink(let role): role.rawValue
        case .nameserver(let address): "nameserver \(address)"
        case .nameservers(let addresses): addresses.map { "nameserver \($0)" }.joined(separator: ", ")
        case .monitor: "monitor"
        case .inotify: "inotify"
        case .eventfd: "eventfd"
        case .process(let pid): "\(pid)"
        }
    }
}

/// What a netlink socket of the library is for, with its protocol: the subject of
/// its calls.
@_spi(Testing) public enum NetlinkRole: String, Sendable, Hashable, CaseIterable {
    /// The monitor's socket that joins the rtnetlink groups.
    case events = "NETLINK_ROUTE events"
    /// The monitor's socket for route lookups and dumps.
    case requests = "NETLINK_ROUTE requests"
    /// A socket for one lookup outside a monitor.
    case oneOff = "NETLINK_ROUTE one-off"
    /// The nl80211 reader's generic netlink socket.
    case nl80211 = "NETLINK_GENERIC nl80211"
    /// The namespace monitor's subscription to the kernel's process events.
    case processEvents = "NETLINK_CONNECTOR process events"
}
