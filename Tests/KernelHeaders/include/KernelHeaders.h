// The kernel's values of every number the package types by hand (Constants.swift,
// GenericNetlink.swift, CNetlink's shim.h), as the C compiler reads them from the
// real headers in KernelHeaders.c: KernelConstantTests compares the two. A test-only
// target: the headers it reads clash with glibc's (<linux/if.h>) or need _GNU_SOURCE,
// so that the library's own C boundary can't include them.
#ifndef KERNEL_HEADERS_H
#define KERNEL_HEADERS_H

#define KERNEL_HEADER_CONSTANTS(X)                                                                  \
    X(NLMSG_NOOP) X(NLMSG_ERROR) X(NLMSG_DONE) X(NLMSG_OVERRUN)                                      \
    X(RTM_NEWLINK) X(RTM_DELLINK) X(RTM_GETLINK) X(RTM_NEWADDR) X(RTM_DELADDR) X(RTM_GETADDR)        \
    X(RTM_NEWROUTE) X(RTM_DELROUTE) X(RTM_GETROUTE) X(RTM_NEWNEIGH) X(RTM_DELNEIGH) X(RTM_GETNEIGH)  \
    X(RTM_NEWRULE) X(RTM_DELRULE) X(RTM_NEWNETCONF) X(RTM_DELNETCONF) X(RTM_NEWNEXTHOP)              \
    X(RTM_DELNEXTHOP)                                                                                \
    X(NLM_F_REQUEST) X(NLM_F_MULTI) X(NLM_F_ACK) X(NLM_F_DUMP_INTR) X(NLM_F_DUMP)                    \
    X(RTNLGRP_LINK) X(RTNLGRP_NEIGH) X(RTNLGRP_IPV4_IFADDR) X(RTNLGRP_IPV4_ROUTE)                    \
    X(RTNLGRP_IPV4_RULE) X(RTNLGRP_IPV6_IFADDR) X(RTNLGRP_IPV6_ROUTE) X(RTNLGRP_IPV6_RULE)           \
    X(RTNLGRP_IPV4_NETCONF) X(RTNLGRP_IPV6_NETCONF) X(RTNLGRP_NEXTHOP)                              \
    X(NDA_DST) X(NDA_LLADDR)                                                                         \
    X(NUD_INCOMPLETE) X(NUD_REACHABLE) X(NUD_STALE) X(NUD_DELAY) X(NUD_PROBE) X(NUD_FAILED)          \
    X(NUD_NOARP) X(NUD_PERMANENT) X(NUD_NONE)                                                        \
    X(SOL_SOCKET) X(SO_RCVBUF) X(SO_RCVBUFFORCE) X(SOL_NETLINK) X(NETLINK_ADD_MEMBERSHIP)            \
    X(NETLINK_CAP_ACK)                                                                               \
    X(AF_UNSPEC) X(AF_INET) X(AF_INET6)                                                              \
    X(IFLA_IFNAME) X(IFLA_OPERSTATE) X(IFLA_LINKINFO) X(IFLA_INFO_KIND)                              \
    X(IFF_UP) X(IFF_LOOPBACK) X(IFF_POINTOPOINT) X(IFF_RUNNING) X(IFF_LOWER_UP) X(IFF_DORMANT)       \
    X(IF_OPER_UNKNOWN) X(IF_OPER_NOTPRESENT) X(IF_OPER_DOWN) X(IF_OPER_LOWERLAYERDOWN)               \
    X(IF_OPER_TESTING) X(IF_OPER_DORMANT) X(IF_OPER_UP)                                              \
    X(IFA_ADDRESS) X(IFA_LOCAL) X(IFA_FLAGS) X(IFA_F_NODAD) X(IFA_F_OPTIMISTIC) X(IFA_F_DADFAILED)   \
    X(IFA_F_DEPRECATED) X(IFA_F_TENTATIVE)                                                           \
    X(RTA_DST) X(RTA_SRC) X(RTA_OIF) X(RTA_GATEWAY) X(RTA_PRIORITY) X(RTA_PREFSRC) X(RTA_MULTIPATH)  \
    X(RTA_TABLE) X(RTA_CACHEINFO) X(RTA_VIA)                                                         \
    X(RTN_UNICAST) X(RTN_LOCAL) X(RTN_BROADCAST) X(RTN_ANYCAST) X(RTN_MULTICAST) X(RTN_BLACKHOLE)    \
    X(RTN_UNREACHABLE) X(RTN_PROHIBIT) X(RTN_THROW)                                                  \
    X(RTM_F_FIB_MATCH)                                                                               \
    X(RT_SCOPE_UNIVERSE) X(RT_SCOPE_SITE) X(RT_SCOPE_LINK) X(RT_SCOPE_HOST)                          \
    X(ARPHRD_ETHER) X(ARPHRD_PPP) X(ARPHRD_RAWIP) X(ARPHRD_TUNNEL) X(ARPHRD_TUNNEL6)                 \
    X(ARPHRD_LOOPBACK) X(ARPHRD_SIT) X(ARPHRD_IPGRE) X(ARPHRD_IEEE80211) X(ARPHRD_IP6GRE)            \
    X(ARPHRD_NONE)                                                                                   \
    X(SOCK_NONBLOCK) X(SOCK_CLOEXEC) X(MSG_TRUNC)                                                    \
    X(NETLINK_ROUTE) X(NETLINK_GENERIC)                                                              \
    X(GENL_ID_CTRL) X(GENL_HDRLEN) X(GENL_NAMSIZ) X(CTRL_CMD_NEWFAMILY) X(CTRL_CMD_GETFAMILY)        \
    X(CTRL_ATTR_FAMILY_ID) X(CTRL_ATTR_FAMILY_NAME)                                                  \
    X(NL80211_CMD_GET_INTERFACE) X(NL80211_CMD_NEW_INTERFACE) X(NL80211_CMD_GET_STATION)             \
    X(NL80211_CMD_NEW_STATION) X(NL80211_ATTR_IFINDEX) X(NL80211_ATTR_IFTYPE) X(NL80211_ATTR_MAC)    \
    X(NL80211_ATTR_STA_INFO) X(NL80211_ATTR_SSID) X(NL80211_STA_INFO_SIGNAL)                         \
    X(NL80211_STA_INFO_SIGNAL_AVG) X(NL80211_STA_INFO_STA_FLAGS) X(NL80211_STA_FLAG_TDLS_PEER)       \
    X(NL80211_IFTYPE_STATION) X(NL80211_IFTYPE_P2P_CLIENT) X(ETH_ALEN)                               \
    X(CLONE_NEWNET) X(CLONE_NEWNS) X(CLONE_FS) X(NS_GET_NSTYPE) X(__NR_pidfd_open) X(IN_MODIFY)      \
    X(NETLINK_CONNECTOR) X(CN_IDX_PROC) X(CN_VAL_PROC) X(PROC_CN_MCAST_LISTEN) X(PROC_CN_MCAST_IGNORE) \
    X(PROC_EVENT_NONE) X(PROC_EVENT_FORK) X(PROC_EVENT_EXEC) X(PROC_EVENT_EXIT)

#define KERNEL_HEADER_DECLARE(name) extern const long long kh_##name;
KERNEL_HEADER_CONSTANTS(KERNEL_HEADER_DECLARE)
#undef KERNEL_HEADER_DECLARE

/// The proc connector's layout: sizeof(struct nlmsghdr), sizeof(struct cn_msg),
/// offsetof(struct proc_event, event_data).
extern const long long kh_sizeof_nlmsghdr, kh_sizeof_cn_msg, kh_offsetof_proc_event_event_data;
/// The classic BPF instructions of its filter: BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ
/// | BPF_K and | BPF_X, BPF_MISC | BPF_TAX, BPF_RET | BPF_K.
extern const long long kh_bpf_load_word, kh_bpf_jump_if_constant, kh_bpf_jump_if_x, kh_bpf_into_x,
    kh_bpf_return_constant;

/// NL80211_GENL_NAME, the nl80211 family's name.
extern const char *const kh_NL80211_GENL_NAME;

#endif
