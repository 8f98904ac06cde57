#include <asm/unistd.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
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
#include <stddef.h>
#include <sys/socket.h>

#include "KernelHeaders.h"

#define KERNEL_HEADER_DEFINE(name) const long long kh_##name = (long long)(name);
KERNEL_HEADER_CONSTANTS(KERNEL_HEADER_DEFINE)

const long long kh_bpf_load_word = BPF_LD | BPF_W | BPF_ABS;
const long long kh_bpf_jump_if_constant = BPF_JMP | BPF_JEQ | BPF_K;
const long long kh_bpf_jump_if_x = BPF_JMP | BPF_JEQ | BPF_X;
const long long kh_bpf_into_x = BPF_MISC | BPF_TAX;
const long long kh_bpf_return_constant = BPF_RET | BPF_K;
const long long kh_sizeof_nlmsghdr = sizeof(struct nlmsghdr);
const long long kh_sizeof_cn_msg = sizeof(struct cn_msg);
const long long kh_offsetof_proc_event_event_data = offsetof(struct proc_event, event_data);

const char *const kh_NL80211_GENL_NAME = NL80211_GENL_NAME;
