#!/usr/bin/env python3
"""Captures real rtnetlink datagrams into the fuzz corpus (Fuzz/corpus).

Run it as root or inside `unshare -rn` (it makes its own namespace when it is
not already in a fresh one):  python3 Fuzz/capture.py [OUTDIR]

In a private network namespace it subscribes to the groups the monitor uses,
then makes links (veth, macvlan, tun), IPv4/IPv6 addresses (tentative ones
too), routes of every type, policy rules and deletions, and saves every
datagram the kernel sends as one file; it also saves the replies to link,
address and route dumps and to RTM_GETROUTE questions (answers and errors).
"""
import os
import socket
import struct
import subprocess
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

if os.environ.get("CAPTURE_IN_NS") != "1":
    env = dict(os.environ, CAPTURE_IN_NS="1")
    sys.exit(subprocess.call(["unshare", "-rn", sys.executable, os.path.abspath(__file__), OUT], env=env))

RTMGRP = {"link": 1, "ipv4_ifaddr": 0x10, "ipv4_route": 0x40, "ipv4_rule": 0x80,
          "ipv6_ifaddr": 0x100, "ipv6_route": 0x400}
RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE = 18, 22, 26
NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
RTA_DST, RTA_OIF = 1, 4
RTM_F_FIB_MATCH = 0x2000

os.makedirs(OUT, exist_ok=True)
saved = 0


def save(name, data):
    global saved
    with open(os.path.join(OUT, f"captured-{name}-{saved:03d}.bin"), "wb") as f:
        f.write(data)
    saved += 1


def ip(*commands):
    for command in commands:
        subprocess.run(["ip"] + command.split(), check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def drain(sock, name):
    sock.settimeout(0.2)
    try:
        while True:
            save(name, sock.recv(1 << 20))
    except (socket.timeout, BlockingIOError):
        pass


def request(sock, msg_type, flags, payload, name):
    header = struct.pack("=LHHLL", 16 + len(payload), msg_type, NLM_F_REQUEST | flags, 1, 0)
    sock.send(header + payload)
    drain(sock, name)


def attr(kind, data):
    length = 4 + len(data)
    return struct.pack("=HH", length, kind) + data + b"\0" * ((4 - length % 4) % 4)


events = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
events.bind((0, sum(RTMGRP.values())))
queries = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
queries.bind((0, 0))

steps = [
    ("lo-up", ["link set lo up"]),
    ("veth", ["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up"]),
    ("addr4", ["addr add 10.1.0.2/24 dev v0", "addr add 10.1.0.1/24 dev v1"]),
    ("addr6", ["-6 addr add 2001:db8::2/64 dev v0", "-6 addr add 2001:db8::1/64 dev v1 nodad"]),
    ("default", ["route add default via 10.1.0.1 dev v0 metric 100",
                 "-6 route add default via 2001:db8::1 dev v0 metric 100"]),
    ("route-types", ["route add blackhole 10.9.0.0/16", "route add unreachable 10.8.0.0/16",
                     "route add prohibit 10.7.0.0/16", "route add 10.6.0.0/16 via 10.1.0.1 table 100",
                     "route add 10.5.0.0/16 dev v0 scope link src 10.1.0.2 mtu 1400",
                     "route add 10.4.0.0/16 nexthop via 10.1.0.1 weight 1 nexthop via 10.1.0.1 weight 2"]),
    ("rules", ["rule add to 10.6.0.0/16 table 100 priority 100", "-6 rule add to 2001:db8:6::/48 table 100"]),
    ("replace", ["route replace default via 10.1.0.1 dev v0 metric 50"]),
    ("carrier", ["link set v1 down", "link set v1 up"]),
    ("macvlan", ["link add mv0 link v0 type macvlan mode bridge", "link set mv0 up",
                 "addr add 10.2.0.2/24 dev mv0"]),
    ("tun", ["tuntap add mode tun dev tun0", "link set tun0 up", "addr add 10.3.0.2/32 peer 10.3.0.1 dev tun0",
             "route add 0.0.0.0/1 dev tun0", "route add 128.0.0.0/1 dev tun0"]),
    ("dormant", ["link set v0 mode dormant", "link set v0 mode default"]),
]

for name, commands in steps:
    ip(*commands)
    drain(events, "event-" + name)

# Dumps (multi-part replies end with NLMSG_DONE).
request(queries, RTM_GETLINK, NLM_F_DUMP, struct.pack("=BxHiII", 0, 0, 0, 0, 0), "dump-links")
request(queries, RTM_GETADDR, NLM_F_DUMP, struct.pack("=BBBBi", 0, 0, 0, 0, 0), "dump-addresses")
request(queries, RTM_GETROUTE, NLM_F_DUMP, struct.pack("=BBBBBBBBI", 0, 0, 0, 0, 0, 0, 0, 0, 0), "dump-routes")

# Route lookups: answers (via gateway, on-link, local, fibmatch with oif) and errors.
for name, family, address, oif, flags in [
    ("get-gateway", socket.AF_INET, "8.8.8.8", None, 0),
    ("get-onlink", socket.AF_INET, "10.1.0.1", None, 0),
    ("get-local", socket.AF_INET, "10.1.0.2", None, 0),
    ("get-blackhole", socket.AF_INET, "10.9.1.1", None, 0),
    ("get-unreachable", socket.AF_INET, "10.8.1.1", None, 0),
    ("get-prohibit", socket.AF_INET, "10.7.1.1", None, 0),
    ("get-tun", socket.AF_INET, "1.1.1.1", None, 0),
    ("get-fibmatch", socket.AF_INET, "8.8.8.8", 2, RTM_F_FIB_MATCH),
    ("get6-gateway", socket.AF_INET6, "2001:4860:4860::8888", None, 0),
    ("get6-linklocal", socket.AF_INET6, "fe80::1", 2, 0),
]:
    raw = socket.inet_pton(family, address)
    payload = struct.pack("=BBBBBBBBI", family, len(raw) * 8, 0, 0, 0, 0, 0, 0, flags) + attr(RTA_DST, raw)
    if oif is not None:
        payload += attr(RTA_OIF, struct.pack("=i", oif))
    request(queries, RTM_GETROUTE, 0, payload, name)

ip("route del default via 10.1.0.1 dev v0 metric 50", "rule del priority 100", "link del tun0", "link del mv0",
   "addr del 10.1.0.2/24 dev v0")
drain(events, "event-deletions")
ip("link del v0")
drain(events, "event-link-deleted")
print(f"capture: {saved} datagrams into {OUT}")
