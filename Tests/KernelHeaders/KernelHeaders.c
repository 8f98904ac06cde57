#include <asm/unistd.h>
#include <linux/genetlink.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/nl80211.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <sys/inotify.h>
#include <sys/socket.h>

#include "KernelHeaders.h"

#define KERNEL_HEADER_DEFINE(name) const long long kh_##name = (long long)(name);
KERNEL_HEADER_CONSTANTS(KERNEL_HEADER_DEFINE)

const char *const kh_NL80211_GENL_NAME = NL80211_GENL_NAME;
