import CNetlink
import Glibc
import KernelHeaders
import Testing

@testable import ReachabilityBase

/// The kernel numbers the package types by hand (Constants.swift, GenericNetlink.swift, ProcessConnector.swift,
/// the CNetlink shim's `CNL_*`), each against the value the C compiler reads from the
/// real headers (`Tests/KernelHeaders`), and the errno values against Glibc's.
///
/// Not compared, on purpose: `NL80211.maxSSIDLength` (IEEE80211_MAX_SSID_LEN is in
/// the kernel's own <linux/ieee80211.h>, which no UAPI package ships: 802.11's 32
/// octets); `RTNLGroup.monitored` and `.monitoredWhereAvailable` (lists of the groups
/// compared here); the offsets into `struct ndmsg` the neighbour parser reads (layout,
/// not constants: the parser's tests feed it the kernel's messages).
@Suite struct KernelConstantTests {
    /// A hand-typed value and the header's, under the header's name.
    struct Pair {
        let name: String
        let typed: Int64
        let header: Int64

        init(_ name: String, _ typed: some BinaryInteger, _ header: some BinaryInteger) {
            self.name = name
            self.typed = Int64(typed)
            self.header = Int64(header)
        }
    }

    static let netlink: [Pair] = [
        Pair("NLMSG_NOOP", NLMsgType.noop, kh_NLMSG_NOOP),
        Pair("NLMSG_ERROR", NLMsgType.error, kh_NLMSG_ERROR),
        Pair("NLMSG_DONE", NLMsgType.done, kh_NLMSG_DONE),
        Pair("NLMSG_OVERRUN", NLMsgType.overrun, kh_NLMSG_OVERRUN),
        Pair("RTM_NEWLINK", NLMsgType.newLink, kh_RTM_NEWLINK),
        Pair("RTM_DELLINK", NLMsgType.delLink, kh_RTM_DELLINK),
        Pair("RTM_GETLINK", NLMsgType.getLink, kh_RTM_GETLINK),
        Pair("RTM_NEWADDR", NLMsgType.newAddr, kh_RTM_NEWADDR),
        Pair("RTM_DELADDR", NLMsgType.delAddr, kh_RTM_DELADDR),
        Pair("RTM_GETADDR", NLMsgType.getAddr, kh_RTM_GETADDR),
        Pair("RTM_NEWROUTE", NLMsgType.newRoute, kh_RTM_NEWROUTE),
        Pair("RTM_DELROUTE", NLMsgType.delRoute, kh_RTM_DELROUTE),
        Pair("RTM_GETROUTE", NLMsgType.getRoute, kh_RTM_GETROUTE),
        Pair("RTM_NEWNEIGH", NLMsgType.newNeigh, kh_RTM_NEWNEIGH),
        Pair("RTM_DELNEIGH", NLMsgType.delNeigh, kh_RTM_DELNEIGH),
        Pair("RTM_GETNEIGH", NLMsgType.getNeigh, kh_RTM_GETNEIGH),
        Pair("RTM_NEWRULE", NLMsgType.newRule, kh_RTM_NEWRULE),
        Pair("RTM_DELRULE", NLMsgType.delRule, kh_RTM_DELRULE),
        Pair("RTM_NEWNETCONF", NLMsgType.newNetconf, kh_RTM_NEWNETCONF),
        Pair("RTM_DELNETCONF", NLMsgType.delNetconf, kh_RTM_DELNETCONF),
        Pair("RTM_NEWNEXTHOP", NLMsgType.newNexthop, kh_RTM_NEWNEXTHOP),
        Pair("RTM_DELNEXTHOP", NLMsgType.delNexthop, kh_RTM_DELNEXTHOP),
        Pair("NLM_F_REQUEST", NLMsgFlag.request, kh_NLM_F_REQUEST),
        Pair("NLM_F_MULTI", NLMsgFlag.multi, kh_NLM_F_MULTI),
        Pair("NLM_F_ACK", NLMsgFlag.ack, kh_NLM_F_ACK),
        Pair("NLM_F_DUMP_INTR", NLMsgFlag.dumpInterrupted, kh_NLM_F_DUMP_INTR),
        Pair("NLM_F_DUMP", NLMsgFlag.dump, kh_NLM_F_DUMP),
        Pair("RTNLGRP_LINK", RTNLGroup.link, kh_RTNLGRP_LINK),
        Pair("RTNLGRP_NEIGH", RTNLGroup.neighbor, kh_RTNLGRP_NEIGH),
        Pair("RTNLGRP_IPV4_IFADDR", RTNLGroup.ipv4Address, kh_RTNLGRP_IPV4_IFADDR),
        Pair("RTNLGRP_IPV4_ROUTE", RTNLGroup.ipv4Route, kh_RTNLGRP_IPV4_ROUTE),
        Pair("RTNLGRP_IPV4_RULE", RTNLGroup.ipv4Rule, kh_RTNLGRP_IPV4_RULE),
        Pair("RTNLGRP_IPV6_IFADDR", RTNLGroup.ipv6Address, kh_RTNLGRP_IPV6_IFADDR),
        Pair("RTNLGRP_IPV6_ROUTE", RTNLGroup.ipv6Route, kh_RTNLGRP_IPV6_ROUTE),
        Pair("RTNLGRP_IPV6_RULE", RTNLGroup.ipv6Rule, kh_RTNLGRP_IPV6_RULE),
        Pair("RTNLGRP_IPV4_NETCONF", RTNLGroup.ipv4Netconf, kh_RTNLGRP_IPV4_NETCONF),
        Pair("RTNLGRP_IPV6_NETCONF", RTNLGroup.ipv6Netconf, kh_RTNLGRP_IPV6_NETCONF),
        Pair("RTNLGRP_NEXTHOP", RTNLGroup.nexthop, kh_RTNLGRP_NEXTHOP),
        Pair("NDA_DST", NDA.destination, kh_NDA_DST),
        Pair("NDA_LLADDR", NDA.linkLayerAddress, kh_NDA_LLADDR),
        Pair(
            "NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT", NDA.validStates,
            kh_NUD_REACHABLE | kh_NUD_STALE | kh_NUD_DELAY | kh_NUD_PROBE | kh_NUD_PERMANENT),
        Pair(
            "not NUD_INCOMPLETE, NUD_FAILED, NUD_NOARP or NUD_NONE",
            Int64(NDA.validStates) & (kh_NUD_INCOMPLETE | kh_NUD_FAILED | kh_NUD_NOARP | kh_NUD_NONE), 0),
        Pair("NUD_FAILED", NDA.failed, kh_NUD_FAILED),
        Pair("NETLINK_ROUTE", netlinkRoute, kh_NETLINK_ROUTE),
        Pair("NETLINK_GENERIC", netlinkGeneric, kh_NETLINK_GENERIC),
    ]

    static let sockets: [Pair] = [
        Pair("SOL_SOCKET", SockOpt.solSocket, kh_SOL_SOCKET),
        Pair("SO_RCVBUF", SockOpt.rcvbuf, kh_SO_RCVBUF),
        Pair("SO_RCVBUFFORCE", SockOpt.rcvbufForce, kh_SO_RCVBUFFORCE),
        Pair("SOL_NETLINK", SockOpt.solNetlink, kh_SOL_NETLINK),
        Pair("NETLINK_ADD_MEMBERSHIP", SockOpt.addMembership, kh_NETLINK_ADD_MEMBERSHIP),
        Pair("NETLINK_CAP_ACK", SockOpt.capAck, kh_NETLINK_CAP_ACK),
        Pair("AF_UNSPEC", AddressFamily.unspec, kh_AF_UNSPEC),
        Pair("AF_INET", AddressFamily.inet, kh_AF_INET),
        Pair("AF_INET6", AddressFamily.inet6, kh_AF_INET6),
        Pair("SOCK_NONBLOCK", SockFlag.nonBlock, kh_SOCK_NONBLOCK),
        Pair("SOCK_CLOEXEC", SockFlag.closeOnExec, kh_SOCK_CLOEXEC),
        Pair("MSG_TRUNC", MessageFlag.truncated, kh_MSG_TRUNC),
    ]

    static let links: [Pair] = [
        Pair("IFLA_IFNAME", IFLA.ifname, kh_IFLA_IFNAME),
        Pair("IFLA_OPERSTATE", IFLA.operstate, kh_IFLA_OPERSTATE),
        Pair("IFLA_LINKINFO", IFLA.linkinfo, kh_IFLA_LINKINFO),
        Pair("IFLA_INFO_KIND", IFLA.infoKind, kh_IFLA_INFO_KIND),
        Pair("IFF_UP", IFF.up, kh_IFF_UP),
        Pair("IFF_LOOPBACK", IFF.loopback, kh_IFF_LOOPBACK),
        Pair("IFF_POINTOPOINT", IFF.pointToPoint, kh_IFF_POINTOPOINT),
        Pair("IFF_RUNNING", IFF.running, kh_IFF_RUNNING),
        Pair("IFF_LOWER_UP", IFF.lowerUp, kh_IFF_LOWER_UP),
        Pair("IFF_DORMANT", IFF.dormant, kh_IFF_DORMANT),
        Pair("IF_OPER_UNKNOWN", IFOper.unknown, kh_IF_OPER_UNKNOWN),
        Pair("IF_OPER_NOTPRESENT", IFOper.notPresent, kh_IF_OPER_NOTPRESENT),
        Pair("IF_OPER_DOWN", IFOper.down, kh_IF_OPER_DOWN),
        Pair("IF_OPER_LOWERLAYERDOWN", IFOper.lowerLayerDown, kh_IF_OPER_LOWERLAYERDOWN),
        Pair("IF_OPER_TESTING", IFOper.testing, kh_IF_OPER_TESTING),
        Pair("IF_OPER_DORMANT", IFOper.dormant, kh_IF_OPER_DORMANT),
        Pair("IF_OPER_UP", IFOper.up, kh_IF_OPER_UP),
        Pair("IFA_ADDRESS", IFA.address, kh_IFA_ADDRESS),
        Pair("IFA_LOCAL", IFA.local, kh_IFA_LOCAL),
        Pair("IFA_FLAGS", IFA.flags, kh_IFA_FLAGS),
        Pair("IFA_F_NODAD", IFA.fNoDAD, kh_IFA_F_NODAD),
        Pair("IFA_F_OPTIMISTIC", IFA.fOptimistic, kh_IFA_F_OPTIMISTIC),
        Pair("IFA_F_DADFAILED", IFA.fDADFailed, kh_IFA_F_DADFAILED),
        Pair("IFA_F_DEPRECATED", IFA.fDeprecated, kh_IFA_F_DEPRECATED),
        Pair("IFA_F_TENTATIVE", IFA.fTentative, kh_IFA_F_TENTATIVE),
        Pair("ARPHRD_ETHER", ARPHRD.ether, kh_ARPHRD_ETHER),
        Pair("ARPHRD_PPP", ARPHRD.ppp, kh_ARPHRD_PPP),
        Pair("ARPHRD_RAWIP", ARPHRD.rawIP, kh_ARPHRD_RAWIP),
        Pair("ARPHRD_TUNNEL", ARPHRD.tunnel, kh_ARPHRD_TUNNEL),
        Pair("ARPHRD_TUNNEL6", ARPHRD.tunnel6, kh_ARPHRD_TUNNEL6),
        Pair("ARPHRD_LOOPBACK", ARPHRD.loopback, kh_ARPHRD_LOOPBACK),
        Pair("ARPHRD_SIT", ARPHRD.sit, kh_ARPHRD_SIT),
        Pair("ARPHRD_IPGRE", ARPHRD.ipGRE, kh_ARPHRD_IPGRE),
        Pair("ARPHRD_IEEE80211", ARPHRD.ieee80211, kh_ARPHRD_IEEE80211),
        Pair("ARPHRD_IP6GRE", ARPHRD.ip6GRE, kh_ARPHRD_IP6GRE),
        Pair("ARPHRD_NONE", ARPHRD.none, kh_ARPHRD_NONE),
    ]

    static let routes: [Pair] = [
        Pair("RTA_DST", RTA.dst, kh_RTA_DST),
        Pair("RTA_SRC", RTA.src, kh_RTA_SRC),
        Pair("RTA_OIF", RTA.oif, kh_RTA_OIF),
        Pair("RTA_GATEWAY", RTA.gateway, kh_RTA_GATEWAY),
        Pair("RTA_PRIORITY", RTA.priority, kh_RTA_PRIORITY),
        Pair("RTA_PREFSRC", RTA.prefsrc, kh_RTA_PREFSRC),
        Pair("RTA_MULTIPATH", RTA.multipath, kh_RTA_MULTIPATH),
        Pair("RTA_TABLE", RTA.table, kh_RTA_TABLE),
        Pair("RTA_CACHEINFO", RTA.cacheInfo, kh_RTA_CACHEINFO),
        Pair("RTA_VIA", RTA.via, kh_RTA_VIA),
        Pair("RTN_UNICAST", RTN.unicast, kh_RTN_UNICAST),
        Pair("RTN_LOCAL", RTN.local, kh_RTN_LOCAL),
        Pair("RTN_BROADCAST", RTN.broadcast, kh_RTN_BROADCAST),
        Pair("RTN_ANYCAST", RTN.anycast, kh_RTN_ANYCAST),
        Pair("RTN_MULTICAST", RTN.multicast, kh_RTN_MULTICAST),
        Pair("RTN_BLACKHOLE", RTN.blackhole, kh_RTN_BLACKHOLE),
        Pair("RTN_UNREACHABLE", RTN.unreachable, kh_RTN_UNREACHABLE),
        Pair("RTN_PROHIBIT", RTN.prohibit, kh_RTN_PROHIBIT),
        Pair("RTN_THROW", RTN.throw, kh_RTN_THROW),
        Pair("RTM_F_FIB_MATCH", RTMFlag.fibMatch, kh_RTM_F_FIB_MATCH),
        Pair("RT_SCOPE_UNIVERSE", RTScope.universe, kh_RT_SCOPE_UNIVERSE),
        Pair("RT_SCOPE_SITE", RTScope.site, kh_RT_SCOPE_SITE),
        Pair("RT_SCOPE_LINK", RTScope.link, kh_RT_SCOPE_LINK),
        Pair("RT_SCOPE_HOST", RTScope.host, kh_RT_SCOPE_HOST),
    ]

    static let genericNetlink: [Pair] = [
        Pair("GENL_ID_CTRL", GENL.controllerID, kh_GENL_ID_CTRL),
        Pair("GENL_HDRLEN", GENL.headerSize, kh_GENL_HDRLEN),
        Pair("GENL_NAMSIZ", GENL.familyNameSize, kh_GENL_NAMSIZ),
        Pair("CTRL_CMD_NEWFAMILY", GENL.cmdNewFamily, kh_CTRL_CMD_NEWFAMILY),
        Pair("CTRL_CMD_GETFAMILY", GENL.cmdGetFamily, kh_CTRL_CMD_GETFAMILY),
        Pair("CTRL_ATTR_FAMILY_ID", GENL.attrFamilyID, kh_CTRL_ATTR_FAMILY_ID),
        Pair("CTRL_ATTR_FAMILY_NAME", GENL.attrFamilyName, kh_CTRL_ATTR_FAMILY_NAME),
        Pair("NL80211_CMD_GET_INTERFACE", NL80211.cmdGetInterface, kh_NL80211_CMD_GET_INTERFACE),
        Pair("NL80211_CMD_NEW_INTERFACE", NL80211.cmdNewInterface, kh_NL80211_CMD_NEW_INTERFACE),
        Pair("NL80211_CMD_GET_STATION", NL80211.cmdGetStation, kh_NL80211_CMD_GET_STATION),
        Pair("NL80211_CMD_NEW_STATION", NL80211.cmdNewStation, kh_NL80211_CMD_NEW_STATION),
        Pair("NL80211_ATTR_IFINDEX", NL80211.attrIfindex, kh_NL80211_ATTR_IFINDEX),
        Pair("NL80211_ATTR_IFTYPE", NL80211.attrIftype, kh_NL80211_ATTR_IFTYPE),
        Pair("NL80211_ATTR_MAC", NL80211.attrMAC, kh_NL80211_ATTR_MAC),
        Pair("NL80211_ATTR_STA_INFO", NL80211.attrStaInfo, kh_NL80211_ATTR_STA_INFO),
        Pair("NL80211_ATTR_SSID", NL80211.attrSSID, kh_NL80211_ATTR_SSID),
        Pair("NL80211_STA_INFO_SIGNAL", NL80211.staInfoSignal, kh_NL80211_STA_INFO_SIGNAL),
        Pair("NL80211_STA_INFO_SIGNAL_AVG", NL80211.staInfoSignalAverage, kh_NL80211_STA_INFO_SIGNAL_AVG),
        Pair("NL80211_STA_INFO_STA_FLAGS", NL80211.staInfoFlags, kh_NL80211_STA_INFO_STA_FLAGS),
        Pair("NL80211_STA_FLAG_TDLS_PEER", NL80211.staFlagTDLSPeer, kh_NL80211_STA_FLAG_TDLS_PEER),
        Pair("NL80211_IFTYPE_STATION", NL80211.iftypeStation, kh_NL80211_IFTYPE_STATION),
        Pair("NL80211_IFTYPE_P2P_CLIENT", NL80211.iftypeP2PClient, kh_NL80211_IFTYPE_P2P_CLIENT),
        Pair("ETH_ALEN", NL80211.macLength, kh_ETH_ALEN),
    ]

    /// The shim's own, and the one the system-call layer passes with its mask.
    static let shim: [Pair] = [
        Pair("CLONE_NEWNET", CNL_CLONE_NEWNET, kh_CLONE_NEWNET),
        Pair("CLONE_NEWNS", CNL_CLONE_NEWNS, kh_CLONE_NEWNS),
        Pair("CLONE_FS", CNL_CLONE_FS, kh_CLONE_FS),
        Pair("NS_GET_NSTYPE", CNL_NS_GET_NSTYPE, kh_NS_GET_NSTYPE),
        Pair("SYS_pidfd_open", CNL_SYS_PIDFD_OPEN, kh___NR_pidfd_open),
        Pair("IN_MODIFY", IN_MODIFY, kh_IN_MODIFY),
    ]

    static let processConnector: [Pair] = [
        Pair("NETLINK_CONNECTOR", ProcessConnector.bus, kh_NETLINK_CONNECTOR),
        Pair("CN_IDX_PROC", ProcessConnector.index, kh_CN_IDX_PROC),
        Pair("CN_VAL_PROC", ProcessConnector.value, kh_CN_VAL_PROC),
        Pair("PROC_CN_MCAST_LISTEN", ProcessConnector.listen, kh_PROC_CN_MCAST_LISTEN),
        Pair("PROC_CN_MCAST_IGNORE", ProcessConnector.ignore, kh_PROC_CN_MCAST_IGNORE),
        Pair("PROC_EVENT_NONE", ProcessConnector.eventNone, kh_PROC_EVENT_NONE),
        Pair("PROC_EVENT_FORK", ProcessConnector.eventFork, kh_PROC_EVENT_FORK),
        Pair("PROC_EVENT_EXEC", ProcessConnector.eventExec, kh_PROC_EVENT_EXEC),
        Pair("PROC_EVENT_EXIT", ProcessConnector.eventExit, kh_PROC_EVENT_EXIT),
        Pair("BPF_LD | BPF_W | BPF_ABS", ProcessConnector.loadWord, kh_bpf_load_word),
        Pair("BPF_JMP | BPF_JEQ | BPF_K", ProcessConnector.jumpIfConstant, kh_bpf_jump_if_constant),
        Pair("BPF_JMP | BPF_JEQ | BPF_X", ProcessConnector.jumpIfX, kh_bpf_jump_if_x),
        Pair("BPF_MISC | BPF_TAX", ProcessConnector.intoX, kh_bpf_into_x),
        Pair("BPF_RET | BPF_K", ProcessConnector.returnConstant, kh_bpf_return_constant),
        Pair("sizeof(struct nlmsghdr)", ProcessConnector.headerSize, kh_sizeof_nlmsghdr),
        Pair("sizeof(struct cn_msg)", ProcessConnector.messageSize, kh_sizeof_cn_msg),
        Pair(
            "offsetof(struct proc_event, event_data)", ProcessConnector.eventDataOffset,
            kh_offsetof_proc_event_event_data),
    ]

    /// The errno values, which Glibc imports.
    static let errnos: [Pair] = [
        Pair("EINTR", Errno.intr, EINTR),
        Pair("EAGAIN", Errno.again, EAGAIN),
        Pair("ENOMEM", Errno.noMem, ENOMEM),
        Pair("ENOBUFS", Errno.noBufs, ENOBUFS),
        Pair("ENOSPC", Errno.noSpc, ENOSPC),
        Pair("ETIMEDOUT", Errno.timedOut, ETIMEDOUT),
        Pair("ENOENT", GenlErrno.noEntry, ENOENT),
        Pair("ENODEV", GenlErrno.noDevice, ENODEV),
        Pair("EOPNOTSUPP", GenlErrno.notSupported, EOPNOTSUPP),
    ]

    /// The tables above, by name (a test case each).
    enum Table: String, CaseIterable {
        case netlink, sockets, links, routes, genericNetlink, shim, processConnector, errnos

        var pairs: [Pair] {
            switch self {
            case .netlink: KernelConstantTests.netlink
            case .sockets: KernelConstantTests.sockets
            case .links: KernelConstantTests.links
            case .routes: KernelConstantTests.routes
            case .genericNetlink: KernelConstantTests.genericNetlink
            case .shim: KernelConstantTests.shim
            case .processConnector: KernelConstantTests.processConnector
            case .errnos: KernelConstantTests.errnos
            }
        }
    }

    @Test("Each hand-typed kernel constant is the headers' value", arguments: Table.allCases)
    func matchesTheHeaders(_ table: Table) {
        for pair in table.pairs {
            #expect(pair.typed == pair.header, "\(pair.name): typed \(pair.typed), the header says \(pair.header)")
        }
    }

    @Test("The nl80211 family's name is the header's")
    func nl80211FamilyName() {
        #expect(NL80211.familyName == String(cString: kh_NL80211_GENL_NAME))
    }
}
