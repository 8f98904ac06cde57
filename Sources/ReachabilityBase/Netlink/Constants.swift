// Kernel constants, retyped once. The C importer gives these odd types (Int32
// for flags that are unsigned, enums for plain integers); everything else in the
// package uses the names below. Values are from <linux/netlink.h>,
// <linux/rtnetlink.h>, <linux/if.h>, <linux/if_addr.h> and <linux/if_arp.h>.

/// Netlink message types (`nlmsghdr.nlmsg_type`).
package enum NLMsgType {
    package static let noop: UInt16 = 1  // NLMSG_NOOP
    package static let error: UInt16 = 2  // NLMSG_ERROR
    package static let done: UInt16 = 3  // NLMSG_DONE
    package static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    package static let newLink: UInt16 = 16  // RTM_NEWLINK
    package static let delLink: UInt16 = 17  // RTM_DELLINK
    package static let getLink: UInt16 = 18  // RTM_GETLINK
    package static let newAddr: UInt16 = 20  // RTM_NEWADDR
    package static let delAddr: UInt16 = 21  // RTM_DELADDR
    package static let getAddr: UInt16 = 22  // RTM_GETADDR
    package static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    package static let delRoute: UInt16 = 25  // RTM_DELROUTE
    package static let getRoute: UInt16 = 26  // RTM_GETROUTE
    package static let newNeigh: UInt16 = 28  // RTM_NEWNEIGH
    package static let delNeigh: UInt16 = 29  // RTM_DELNEIGH
    package static let getNeigh: UInt16 = 30  // RTM_GETNEIGH
    package static let newRule: UInt16 = 32  // RTM_NEWRULE
    package static let delRule: UInt16 = 33  // RTM_DELRULE
    package static let newNetconf: UInt16 = 80  // RTM_NEWNETCONF
    package static let delNetconf: UInt16 = 81  // RTM_DELNETCONF
    package static let newNexthop: UInt16 = 104  // RTM_NEWNEXTHOP
    package static let delNexthop: UInt16 = 105  // RTM_DELNEXTHOP
}

/// Netlink header flags (`nlmsghdr.nlmsg_flags`).
package enum NLMsgFlag {
    package static let request: UInt16 = 0x1  // NLM_F_REQUEST
    package static let multi: UInt16 = 0x2  // NLM_F_MULTI
    package static let ack: UInt16 = 0x4  // NLM_F_ACK
    package static let dumpInterrupted: UInt16 = 0x10  // NLM_F_DUMP_INTR
    package static let dump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
}

/// rtnetlink multicast groups (RTNLGRP_*), joined with NETLINK_ADD_MEMBERSHIP.
package enum RTNLGroup {
    package static let link: UInt32 = 1
    package static let neighbor: UInt32 = 3
    package static let ipv4Address: UInt32 = 5
    package static let ipv4Route: UInt32 = 7
    package static let ipv4Rule: UInt32 = 8
    package static let ipv6Address: UInt32 = 9
    package static let ipv6Route: UInt32 = 11
    package static let ipv6Rule: UInt32 = 19
    package static let ipv4Netconf: UInt32 = 24
    package static let ipv6Netconf: UInt32 = 25
    /// Nexthop objects (`ip nexthop`, kernel 5.3 and later).
    package static let nexthop: UInt32 = 32
    /// Everything the monitor listens to.
    package static let monitored: [UInt32] = [
        link, ipv4Address, ipv6Address, ipv4Route, ipv6Route, ipv4Rule, ipv6Rule, ipv4Netconf, ipv6Netconf,
        neighbor,
    ]
    /// Groups the monitor joins where the kernel has them: a kernel without
    /// nexthop objects refuses the group, and has none to miss.
    package static let monitoredWhereAvailable: [UInt32] = [nexthop]
}

/// Attributes of RTM_*NEIGH messages (NDA_*), and neighbor states (NUD_*).
package enum NDA {
    package static let destination: UInt16 = 1  // NDA_DST
    package static let linkLayerAddress: UInt16 = 2  // NDA_LLADDR
    /// States whose link-layer address is a real one (NUD_REACHABLE, NUD_STALE,
    /// NUD_DELAY, NUD_PROBE, NUD_PERMANENT); not INCOMPLETE, FAILED, NOARP or NONE.
    package static let validStates: UInt16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x80
    /// NUD_FAILED: resolution failed; the entry holds no address.
    package static let failed: UInt16 = 0x20
}

/// Socket options and levels.
package enum SockOpt {
    package static let solSocket: Int32 = 1  // SOL_SOCKET
    package static let rcvbuf: Int32 = 8  // SO_RCVBUF
    package static let rcvbufForce: Int32 = 33  // SO_RCVBUFFORCE
    package static let solNetlink: Int32 = 270  // SOL_NETLINK
    package static let addMembership: Int32 = 1  // NETLINK_ADD_MEMBERSHIP
    package static let capAck: Int32 = 10  // NETLINK_CAP_ACK
}

/// Address families.
package enum AddressFamily {
    package static let unspec: UInt8 = 0  // AF_UNSPEC
    package static let inet: UInt8 = 2  // AF_INET
    package static let inet6: UInt8 = 10  // AF_INET6
}

/// Link attributes (IFLA_*), and IFLA_LINKINFO's nested IFLA_INFO_KIND.
package enum IFLA {
    package static let ifname: UInt16 = 3
    package static let operstate: UInt16 = 16
    package static let linkinfo: UInt16 = 18
    package static let infoKind: UInt16 = 1  // IFLA_INFO_KIND, inside IFLA_LINKINFO
}

/// Interface flags (IFF_*), from <linux/if.h>.
package enum IFF {
    package static let up: UInt32 = 0x1
    package static let loopback: UInt32 = 0x8
    package static let pointToPoint: UInt32 = 0x10
    package static let running: UInt32 = 0x40
    package static let lowerUp: UInt32 = 0x10000
    package static let dormant: UInt32 = 0x20000
}

/// RFC 2863 operational states (IF_OPER_*).
package enum IFOper {
    package static let unknown: UInt8 = 0
    package static let notPresent: UInt8 = 1
    package static let down: UInt8 = 2
    package static let lowerLayerDown: UInt8 = 3
    package static let testing: UInt8 = 4
    package static let dormant: UInt8 = 5
    package static let up: UInt8 = 6
}

/// Address attributes (IFA_*) and address flags (IFA_F_*).
package enum IFA {
    package static let address: UInt16 = 1
    package static let local: UInt16 = 2
    package static let flags: UInt16 = 8
    package static let fNoDAD: UInt32 = 0x02
    package static let fOptimistic: UInt32 = 0x04
    package static let fDADFailed: UInt32 = 0x08
    package static let fDeprecated: UInt32 = 0x20
    package static let fTentative: UInt32 = 0x40
}

/// Route attributes (RTA_*), route types (RTN_*), and rtm_flags (RTM_F_*).
package enum RTA {
    package static let dst: UInt16 = 1
    package static let src: UInt16 = 2
    package static let oif: UInt16 = 4
    package static let gateway: UInt16 = 5
    package static let priority: UInt16 = 6
    package static let prefsrc: UInt16 = 7
    package static let multipath: UInt16 = 9
    package static let table: UInt16 = 15
    package static let cacheInfo: UInt16 = 12
    package static let via: UInt16 = 18
}

package enum RTN {
    package static let unicast: UInt8 = 1
    package static let local: UInt8 = 2
    package static let broadcast: UInt8 = 3
    package static let anycast: UInt8 = 4
    package static let multicast: UInt8 = 5
    package static let blackhole: UInt8 = 6
    package static let unreachable: UInt8 = 7
    package static let prohibit: UInt8 = 8
    package static let `throw`: UInt8 = 9
}

package enum RTMFlag {
    package static let fibMatch: UInt32 = 0x2000  // RTM_F_FIB_MATCH
}

/// Route scopes (RT_SCOPE_*), as carried in `ifaddrmsg.ifa_scope`.
package enum RTScope {
    package static let universe: UInt8 = 0
    package static let site: UInt8 = 200
    package static let link: UInt8 = 253
    package static let host: UInt8 = 254
}

/// Hardware types (ARPHRD_*), from <linux/if_arp.h>.
package enum ARPHRD {
    package static let ether: UInt16 = 1
    package static let ppp: UInt16 = 512
    package static let rawIP: UInt16 = 519
    package static let tunnel: UInt16 = 768
    package static let tunnel6: UInt16 = 769
    package static let loopback: UInt16 = 772
    package static let sit: UInt16 = 776
    package static let ipGRE: UInt16 = 778
    package static let ieee80211: UInt16 = 801
    package static let ip6GRE: UInt16 = 823
    package static let none: UInt16 = 0xFFFE
}

/// errno values the netlink layer interprets.
package enum Errno {
    package static let intr: Int32 = 4  // EINTR
    package static let again: Int32 = 11  // EAGAIN / EWOULDBLOCK
    package static let noMem: Int32 = 12  // ENOMEM
    package static let noBufs: Int32 = 105  // ENOBUFS
    package static let noSpc: Int32 = 28  // ENOSPC (libmnl: message truncated)
    package static let timedOut: Int32 = 110  // ETIMEDOUT
}

/// socket(2) type flags.
package enum SockFlag {
    package static let nonBlock: Int32 = 0o4000  // SOCK_NONBLOCK
    package static let closeOnExec: Int32 = 0o2000000  // SOCK_CLOEXEC
}

/// recvmsg(2) result flags.
package enum MessageFlag {
    package static let truncated: Int32 = 0x20  // MSG_TRUNC
}

/// NETLINK_ROUTE, the rtnetlink bus.
package let netlinkRoute: Int32 = 0
