// The C boundary of the Reachability package: libmnl plus the few things Swift
// cannot import directly. Only prefixed `static inline` wrappers live here.
// Do not include <linux/if.h> (it clashes with glibc's <net/if.h>); interface
// flags and ARPHRD values are retyped in Sources/ReachabilityBase/Netlink/Constants.swift.
#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

#include <libmnl/libmnl.h>
#include <linux/filter.h>
#include <linux/rtnetlink.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/inotify.h>
#include <sys/socket.h>

/// Kernel values the calls below need, from headers this file can't include (glibc
/// declares CLONE_* only under _GNU_SOURCE; <linux/nsfs.h> and SYS_pidfd_open are
/// newer than some of the C libraries it builds with). KernelConstantTests checks them.
enum {
    CNL_CLONE_NEWNET = 0x40000000,
    CNL_CLONE_NEWNS = 0x00020000,
    CNL_CLONE_FS = 0x00000200,
    CNL_NS_GET_NSTYPE = 0xb703,
    CNL_SYS_PIDFD_OPEN = 434,
};

/// MNL_SOCKET_BUFFER_SIZE is a macro over sysconf; Swift cannot import it.
static inline size_t cnl_socket_buffer_size(void) { return MNL_SOCKET_BUFFER_SIZE; }

/// NLMSG_HDRLEN / NLA_HDRLEN are macro expressions.
static inline size_t cnl_nlmsg_hdrlen(void) { return MNL_NLMSG_HDRLEN; }
static inline size_t cnl_attr_hdrlen(void) { return MNL_ATTR_HDRLEN; }
static inline size_t cnl_align(size_t len) { return MNL_ALIGN(len); }

/// setns(2) for a network namespace. Called through syscall(2) so that the
/// declaration does not depend on _GNU_SOURCE having been defined first.
static inline int cnl_setns_net(int fd) { return (int)syscall(SYS_setns, fd, CNL_CLONE_NEWNET); }

/// The namespace type of a namespace file descriptor (ioctl NS_GET_NSTYPE), or -1
/// with errno (ENOTTY: not a namespace file).
static inline int cnl_namespace_type(int fd) { return ioctl(fd, CNL_NS_GET_NSTYPE); }

/// eventfd(2) with close-on-exec and non-blocking flags.
static inline int cnl_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// epoll(7) for the shared reader thread: struct epoll_event is packed on x86-64,
/// so Swift never touches one; a descriptor is registered with a 64-bit token, and
/// a wait hands back the ready tokens.
static inline int cnl_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
/// Registers `fd` for input (`priority`: EPOLLPRI, a mount table's change) with `token`.
static inline int cnl_epoll_add(int epoll, int fd, uint64_t token, int priority) {
    struct epoll_event event = { .events = priority ? EPOLLPRI : EPOLLIN, .data = { .u64 = token } };
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}
static inline int cnl_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL); }
/// Waits up to `timeout` ms; writes up to `capacity` ready tokens, returns their count (or -1, errno).
static inline int cnl_epoll_wait(int epoll, uint64_t *tokens, int capacity, int timeout) {
    struct epoll_event events[64];
    int room = capacity < 64 ? capacity : 64;
    int count = epoll_wait(epoll, events, room, timeout);
    for (int i = 0; i < count; i++) tokens[i] = events[i].data.u64;
    return count;
}

/// The current thread's kernel thread id (for diagnostics and tests).
static inline int cnl_gettid(void) { return (int)syscall(SYS_gettid); }

/// Gives the calling thread a private mount namespace (unshare CLONE_NEWNS | CLONE_FS,
/// thread-local) whose mounts do not propagate back (MS_SLAVE | MS_REC on /), as
/// `ip netns exec` does before bind-mounting /etc/netns/NAME over /etc.
static inline int cnl_private_mounts(void) {
    if (syscall(SYS_unshare, CNL_CLONE_NEWNS | CNL_CLONE_FS) != 0) return -1;
    return mount("none", "/", NULL, MS_SLAVE | MS_REC, NULL);
}

/// Bind-mounts `source` over `target`.
static inline int cnl_bind_mount(const char *source, const char *target) {
    return mount(source, target, "none", MS_BIND, NULL);
}

/// pidfd_open(2): a descriptor that becomes readable when process `pid` exits
/// (Linux 5.3+), or -1 with errno.
static inline int cnl_pidfd_open(int pid) { return (int)syscall(CNL_SYS_PIDFD_OPEN, pid, 0); }

/// struct mmsghdr, which glibc declares only under _GNU_SOURCE: one datagram of recvmmsg(2).
struct cnl_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

/// recvmmsg(2) of up to `count` datagrams without waiting (MSG_DONTWAIT): how many
/// arrived, or -1 with errno. Through syscall(2), as setns, for the same reason.
static inline int cnl_recvmmsg(int fd, struct cnl_mmsghdr *messages, unsigned int count) {
    return (int)syscall(SYS_recvmmsg, fd, messages, count, MSG_DONTWAIT, NULL);
}

/// inotify_init1(2), close-on-exec and non-blocking.
static inline int cnl_inotify_init(void) { return inotify_init1(IN_CLOEXEC | IN_NONBLOCK); }

/// The inotify events a directory watch of the library asks for: a file in it
/// written, created, deleted or renamed (and the directory itself going away),
/// added to what the directory is watched for already (IN_MASK_ADD: a second watch
/// of it never narrows the first's).
static inline uint32_t cnl_inotify_directory_mask(void) {
    return IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
        | IN_ONLYDIR | IN_MASK_ADD;
}

/// IN_Q_OVERFLOW: the kernel dropped inotify events.
static inline uint32_t cnl_inotify_overflow(void) { return IN_Q_OVERFLOW; }

/// Attaches `count` instructions of classic BPF to socket `fd` (SO_ATTACH_FILTER): the
/// kernel runs them on each datagram, and queues only what they keep.
static inline int cnl_attach_filter(int fd, const struct sock_filter *program, unsigned short count) {
    struct sock_fprog fprog = { .len = count, .filter = (struct sock_filter *)program };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog);
}

/// Names the calling thread (prctl PR_SET_NAME; at most 15 bytes are kept).
static inline int cnl_set_thread_name(const char *name) { return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL); }

#endif
