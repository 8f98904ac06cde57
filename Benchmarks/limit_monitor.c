/* The least a monitor that reports the final state can do: the yardstick of issue 30.
 *
 *     cc -O2 -o /tmp/limit_monitor Benchmarks/limit_monitor.c
 *     cd ../shared/peers && /usr/bin/python3 latency.py --only ip-monitor,glib,watch,limit \
 *         --subject watch='exec reachability watch --json' --subject limit='exec /tmp/limit_monitor'
 *
 * On every wake-up: read what the events socket holds (link, address and route groups;
 * only a link's IFF_UP/IFF_RUNNING is kept, nothing else is parsed), ask the kernel the
 * way to 8.8.8.8 and 2001:4860:4860::8888 in one sendto, read the two answers, and write
 * `{"reachable": B}` when B changed (B: some answer is a unicast route out of a link that
 * is up and running). One kernel round trip and one write per pass, no allocation, no
 * locks: what `reachability watch --json` does in its pass, without the rest (the
 * interface table, flags, hostnames, the notification contract, the JSON of a state).
 * Not part of the package; not built by SwiftPM.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINK_SLOTS 4096
static unsigned char running[LINK_SLOTS];
static char buffer[65536] __attribute__((aligned(4)));

static void note_link(struct nlmsghdr *h) {
    struct ifinfomsg *ifi = NLMSG_DATA(h);
    if (ifi->ifi_index <= 0 || ifi->ifi_index >= LINK_SLOTS) return;
    running[ifi->ifi_index] =
        h->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
}

static void note_all(char *data, ssize_t length) {
    for (struct nlmsghdr *h = (void *)data; NLMSG_OK(h, length); h = NLMSG_NEXT(h, length))
        if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK) note_link(h);
}

static int open_socket(unsigned groups) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    struct sockaddr_nl address = {.nl_family = AF_NETLINK, .nl_groups = groups};
    if (fd < 0 || bind(fd, (void *)&address, sizeof address) < 0) {
        perror("netlink");
        _exit(1);
    }
    return fd;
}

static ssize_t receive(int fd) {
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n >= 0 || errno != EINTR) return n;
    }
}

static ssize_t receive_blocking(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        ssize_t n = receive(fd);
        if (n >= 0 || errno != EAGAIN) return n;
        if (poll(&p, 1, 5000) <= 0) return -1;
    }
}

/* Is the answer a unicast route out of a running link? */
static int usable(struct nlmsghdr *h) {
    if (h->nlmsg_type != RTM_NEWROUTE) return 0;
    struct rtmsg *rt = NLMSG_DATA(h);
    if (rt->rtm_type != RTN_UNICAST) return 0;
    int length = RTM_PAYLOAD(h);
    for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, length); a = RTA_NEXT(a, length))
        if (a->rta_type == RTA_OIF) {
            int index = *(int *)RTA_DATA(a);
            return index > 0 && index < LINK_SLOTS && running[index];
        }
    return 0;
}

struct request {
    struct nlmsghdr header;
    struct rtmsg route;
    struct rtattr attribute;
    unsigned char address[16];
};

static int lookup(int fd, unsigned *sequence) {
    static const unsigned char v4[4] = {8, 8, 8, 8};
    static const unsigned char v6[16] = {0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88};
    struct request requests[2];
    memset(requests, 0, sizeof requests);
    for (int i = 0; i < 2; i++) {
        int size = i == 0 ? 4 : 16;
        requests[i].header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(size);
        requests[i].header.nlmsg_type = RTM_GETROUTE;
        requests[i].header.nlmsg_flags = NLM_F_REQUEST;
        requests[i].header.nlmsg_seq = ++*sequence;
        requests[i].route.rtm_family = i == 0 ? AF_INET : AF_INET6;
        requests[i].route.rtm_dst_len = i == 0 ? 32 : 128;
        requests[i].attribute.rta_len = RTA_LENGTH(size);
        requests[i].attribute.rta_type = RTA_DST;
        memcpy(requests[i].address, i == 0 ? v4 : v6, size);
    }
    /* Both requests in one datagram: the second starts at the first's aligned end. */
    char packet[2 * sizeof(struct request)];
    size_t first = NLMSG_ALIGN(requests[0].header.nlmsg_len);
    memcpy(packet, &requests[0], requests[0].header.nlmsg_len);
    memcpy(packet + first, &requests[1], requests[1].header.nlmsg_len);
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, packet, first + requests[1].header.nlmsg_len, 0, (void *)&kernel, sizeof kernel) < 0) return -1;
    int reachable = 0;
    for (int answers = 0; answers < 2;) {
        ssize_t n = receive_blocking(fd);
        if (n < 0) return -1;
        for (struct nlmsghdr *h = (void *)buffer; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq + 1 < *sequence) continue; /* an older pass's late answer */
            answers++;
            reachable |= usable(h);
        }
    }
    return reachable;
}

static void say(int reachable) {
    static const char yes[] = "{\"reachable\": true}\n", no[] = "{\"reachable\": false}\n";
    if (reachable) write(1, yes, sizeof yes - 1);
    else write(1, no, sizeof no - 1);
}

int main(void) {
    int events = open_socket(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE |
                             RTMGRP_IPV6_ROUTE);
    int requests = open_socket(0);
    unsigned sequence = 0;
    struct {
        struct nlmsghdr header;
        struct ifinfomsg link;
    } dump = {{NLMSG_LENGTH(sizeof(struct ifinfomsg)), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, ++sequence, 0},
              {.ifi_family = AF_UNSPEC}};
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    sendto(requests, &dump, sizeof dump, 0, (void *)&kernel, sizeof kernel);
    for (int done = 0; !done;) {
        ssize_t n = receive_blocking(requests);
        if (n < 0) return 1;
        note_all(buffer, n);
        for (struct nlmsghdr *h = (void *)buffer; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n))
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) done = 1;
    }
    int state = lookup(requests, &sequence);
    if (state < 0) return 1;
    say(state);
    struct pollfd p = {.fd = events, .events = POLLIN};
    for (;;) {
        if (poll(&p, 1, -1) < 0 && errno != EINTR) return 1;
        for (;;) {
            ssize_t n = receive(events);
            if (n < 0) break; /* EAGAIN: drained (ENOBUFS: the next lookup tells the truth) */
            note_all(buffer, n);
        }
        int now = lookup(requests, &sequence);
        if (now >= 0 && now != state) say(state = now);
    }
}
