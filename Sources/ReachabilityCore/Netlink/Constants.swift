// Kernel constants, retyped once. The C importer gives these odd types (Int32
// for flags that are unsigned, enums for plain integers); everything else in the
// package uses the names below. Values are from <linux/netlink.h>,
// <linux/rtnetlink.h>, <linux/if.h>, <linux/if_addr.h> and <linux/if_arp.h>.

/// Netlink message types (`nlmsghdr.nlmsg_type`).
enum NLMsgType {
    static let noop: UInt16 = 1  // NLMSG_NOOP
    static let error: UInt16 = 2  // NLMSG_ERROR
    static let done: UInt16 = 3  // NLMSG_DONE
    static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    static let newLink: UInt16 = 16  // RTM_NEWLINK
    static let delLink: UInt16 = 17  // RTM_DELLINK
    static let getLink: UInt16 = 18  // RTM_GETLINK
    static let newAddr: UInt16 = 20  // RTM_NEWADDR
    static let delAddr: UInt16 = 21  // RTM_DELADDR
    static let getAddr: UInt16 = 22  // RTM_GETADDR
    static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    static let delRoute: UInt16 = 25  // RTM_DELROUTE
    static let getRoute: UInt16 = 26  // RTM_GETROUTE
    static let newNeigh: UInt16 = 28  // RTM_NEWNEIGH
    static let delNeigh: UInt16 = 29  // RTM_DELNEIGH
    static let getNeigh: UInt16 = 30  // RTM_GETNEIGH
    static let newRule: UInt16 = 32  // RTM_NEWRULE
    static let delRule: UInt16 = 33  // RTM_DELRULE
    static let newNetconf: UInt16 = 80  // RTM_NEWNETCONF
    static let delNetconf: UInt16 = 81  // RTM_DELNETCONF
    static let newNexthop: UInt16 = 104  // RTM_NEWNEXTHOP
    static let delNexthop: UInt16 = 105  // RTM_DELNEXTHOP
}

/// Netlink header flags (`nlmsghdr.nlmsg_flags`).
enum NLMsgFlag {
    static let request: UInt16 = 0x1  // NLM_F_REQUEST
    static let multi: UInt16 = 0x2  // NLM_F_MULTI
    static let ack: UInt16 = 0x4  // NLM_F_ACK
    static let dumpInterrupted: UInt16 = 0x10  // NLM_F_DUMP_INTR
    static let dump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
}

/// rtnetlink multicast groups (RTNLGRP_*), joined with NETLINK_ADD_MEMBERSHIP.
enum RTNLGroup {
    static let link: UInt32 = 1
    static let neighbor: UInt32 = 3
    static let ipv4Address: UInt32 = 5
    static let ipv4Route: UInt32 = 7
    static let ipv4Rule: UInt32 = 8
    static let ipv6Address: UInt32 = 9
    static let ipv6Route: UInt32 = 11
    static let ipv6Rule: UInt32 = 19
    static let ipv4Netconf: UInt32 = 24
    static let ipv6Netconf: UInt32 = 25
    /// Nexthop objects (`ip nexthop`, kernel 5.3 and later).
    static let nexthop: UInt32 = 32
    /// Everything the monitor listens to.
    static let monitored: [UInt32] = [
        link, ipv4Address, ipv6Address, ipv4Route, ipv6Route, ipv4Rule, ipv6Rule, ipv4Netconf, ipv6Netconf,
        neighbor,
    ]
    /// Groups the monitor joins where the kernel has them: a kernel without
    /// nexthop objects refuses the group, and has none to miss.
    static let monitoredWhereAvailable: [UInt32] = [nexthop]
}

/// Attributes of RTM_*NEIGH messages (NDA_*), and neighbor states (NUD_*).
enum NDA {
    static let destination: UInt16 = 1  // NDA_DST
    static let linkLayerAddress: UInt16 = 2  // NDA_LLADDR
    /// States whose link-layer address is a real one (NUD_REACHABLE, NUD_STALE,
    /// NUD_DELAY, NUD_PROBE, NUD_PERMANENT); not INCOMPLETE, FAILED, NOARP or NONE.
    static let validStates: UInt16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x80
    /// NUD_FAILED: resolution failed; the entry holds no address.
    static let failed: UInt16 = 0x20
}

/// Socket options and levels.
enum SockOpt {
    static let solSocket: Int32 = 1  // SOL_SOCKET
    static let rcvbuf: Int32 = 8  // SO_RCVBUF
    static let rcvbufForce: Int32 = 33  // SO_RCVBUFFORCE
    static let solNetlink: Int32 = 270  // SOL_NETLINK
    static let addMembership: Int32 = 1  // NETLINK_ADD_MEMBERSHIP
    static let capAck: Int32 = 10  // NETLINK_CAP_ACK
}

/// Address families.
enum AddressFamily {
    static let unspec: UInt8 = 0  // AF_UNSPEC
    static let inet: UInt8 = 2  // AF_INET
    static let inet6: UInt8 = 10  // AF_INET6
}

/// Link attributes (IFLA_*), and IFLA_LINKINFO's nested IFLA_INFO_KIND.
enum IFLA {
    static let ifname: UInt16 = 3
    static let operstate: UInt16 = 16
    static let linkinfo: UInt16 = 18
    static let infoKind: UInt16 = 1  // IFLA_INFO_KIND, inside IFLA_LINKINFO
}

/// Interface flags (IFF_*), from <linux/if.h>.
enum IFF {
    static let up: UInt32 = 0x1
    static let loopback: UInt32 = 0x8
    static let pointToPoint: UInt32 = 0x10
    static let running: UInt32 = 0x40
    static let lowerUp: UInt32 = 0x10000
    static let dormant: UInt32 = 0x20000
}

/// RFC 2863 operational states (IF_OPER_*).
enum IFOper {
    static let unknown: UInt8 = 0
    static let notPresent: UInt8 = 1
    static let down: UInt8 = 2
    static let lowerLayerDown: UInt8 = 3
    static let testing: UInt8 = 4
    static let dormant: UInt8 = 5
    static let up: UInt8 = 6
}

/// Address attributes (IFA_*) and address flags (IFA_F_*).
enum IFA {
    static let address: UInt16 = 1
    static let local: UInt16 = 2
    static let flags: UInt16 = 8
    static let fNoDAD: UInt32 = 0x02
    static let fOptimistic: UInt32 = 0x04
    static let fDADFailed: UInt32 = 0x08
    static let fDeprecated: UInt32 = 0x20
    static let fTentative: UInt32 = 0x40
}

/// Route attributes (RTA_*), route types (RTN_*), and rtm_flags (RTM_F_*).
enum RTA {
    static let dst: UInt16 = 1
    static let src: UInt16 = 2
    static let oif: UInt16 = 4
    static let gateway: UInt16 = 5
    static let priority: UInt16 = 6
    static let prefsrc: UInt16 = 7
    static let multipath: UInt16 = 9
    static let table: UInt16 = 15
    static let cacheInfo: UInt16 = 12
    static let via: UInt16 = 18
}

enum RTN {
    static let unicast: UInt8 = 1
    static let local: UInt8 = 2
    static let broadcast: UInt8 = 3
    static let anycast: UInt8 = 4
    static let multicast: UInt8 = 5
    static let blackhole: UInt8 = 6
    static let unreachable: UInt8 = 7
    static let prohibit: UInt8 = 8
    static let `throw`: UInt8 = 9
}

enum RTMFlag {
    static let fibMatch: UInt32 = 0x2000  // RTM_F_FIB_MATCH
}

/// Route scopes (RT_SCOPE_*), as carried in `ifaddrmsg.ifa_scope`.
enum RTScope {
    static let universe: UInt8 = 0
    static let site: UInt8 = 200
    static let link: UInt8 = 253
    static let host: UInt8 = 254
}

/// Hardware types (ARPHRD_*), from <linux/if_arp.h>.
enum ARPHRD {
    static let ether: UInt16 = 1
    static let ppp: UInt16 = 512
    static let rawIP: UInt16 = 519
    static let tunnel: UInt16 = 768
    static let tunnel6: UInt16 = 769
    static let loopback: UInt16 = 772
    static let sit: UInt16 = 776
    static let ipGRE: UInt16 = 778
    static let ieee80211: UInt16 = 801
    static let ip6GRE: UInt16 = 823
    static let none: UInt16 = 0xFFFE
}

/// errno values the netlink layer interprets.
enum Errno {
    static let intr: Int32 = 4  // EINTR
    static let again: Int32 = 11  // EAGAIN / EWOULDBLOCK
    static let noMem: Int32 = 12  // ENOMEM
    static let noBufs: Int32 = 105  // ENOBUFS
    static let noSpc: Int32 = 28  // ENOSPC (libmnl: message truncated)
    static let timedOut: Int32 = 110  // ETIMEDOUT
}

/// socket(2) type flags.
enum SockFlag {
    static let nonBlock: Int32 = 0o4000  // SOCK_NONBLOCK
    static let closeOnExec: Int32 = 0o2000000  // SOCK_CLOEXEC
}

/// recvmsg(2) result flags.
enum MessageFlag {
    static let truncated: Int32 = 0x20  // MSG_TRUNC
}

/// NETLINK_ROUTE, the rtnetlink bus.
let netlinkRoute: Int32 = 0
