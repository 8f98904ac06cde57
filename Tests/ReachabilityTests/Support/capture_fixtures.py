#!/usr/bin/env python3
"""Captures real rtnetlink datagrams for the parser tests.

Run it as root inside a fresh network namespace, from the package root:

    unshare -rn python3 Tests/ReachabilityTests/Support/capture_fixtures.py

It builds a small network (lo up; a veth pair veth0/veth1 with 192.0.2.1/24 and
2001:db8::1/64 on veth0, 192.0.2.2/24 and a still-tentative 2001:db8::2/64 on
veth1; an IPv4 default route via 192.0.2.254 on veth0; no IPv6 default route),
then asks the kernel over a raw NETLINK_ROUTE socket and writes what it answers
into Tests/ReachabilityTests/Fixtures/:

    links.bin               RTM_GETLINK dump (every datagram, NLMSG_DONE included)
    addresses.bin           RTM_GETADDR dump (likewise)
    route-get.bin           RTM_GETROUTE 8.8.8.8: unicast via the gateway on veth0
    route-get-onlink.bin    RTM_GETROUTE 192.0.2.3: unicast on veth0, no gateway (not an address of this host)
    route-get-local.bin     RTM_GETROUTE 192.0.2.1: RTN_LOCAL on lo
    route-get-error.bin     RTM_GETROUTE 2001:4860:4860::8888: NLMSG_ERROR -ENETUNREACH

A dump that spans several datagrams is stored as their concatenation: each
datagram holds whole, 4-byte aligned messages, so the result is one valid buffer.
No packet is sent anywhere; lookups only ask the kernel which way one would go.
"""

import ipaddress
import os
import socket
import struct
import subprocess
import sys

NLMSG_ERROR = 2
NLMSG_DONE = 3
RTM_GETLINK = 18
RTM_GETADDR = 22
RTM_GETROUTE = 26
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
RTA_DST = 1

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures")


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def set_up_network():
    ip("link", "set", "lo", "up")
    ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
    ip("addr", "add", "192.0.2.1/24", "dev", "veth0")
    ip("addr", "add", "2001:db8::1/64", "dev", "veth0", "nodad")
    ip("addr", "add", "192.0.2.2/24", "dev", "veth1")
    ip("link", "set", "veth0", "up")
    ip("link", "set", "veth1", "up")
    # Added after the link is up, so duplicate address detection is still running at capture time.
    ip("addr", "add", "2001:db8::2/64", "dev", "veth1")
    ip("route", "add", "default", "via", "192.0.2.254", "dev", "veth0")


class Netlink:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind((0, 0))
        self.seq = 1000

    def request(self, msg_type, flags, payload):
        self.seq += 1
        header = struct.pack("=IHHII", 16 + len(payload), msg_type, flags, self.seq, 0)
        self.sock.send(header + payload)
        return self.seq

    def receive_until_done(self, seq):
        """Returns the concatenated datagrams of a dump, up to and including NLMSG_DONE."""
        data = b""
        while True:
            datagram = self.sock.recv(1 << 16)
            data += datagram
            if self.last_type(datagram, seq) in (NLMSG_DONE, NLMSG_ERROR):
                return data

    def receive_one(self):
        return self.sock.recv(1 << 16)

    @staticmethod
    def last_type(datagram, seq):
        offset, last = 0, None
        while offset + 16 <= len(datagram):
            length, msg_type, _, msg_seq, _ = struct.unpack_from("=IHHII", datagram, offset)
            if length < 16:
                raise ValueError("bad nlmsg_len %d" % length)
            if msg_seq == seq:
                last = msg_type
            offset += (length + 3) & ~3
        return last


def rtattr(attr_type, value):
    length = 4 + len(value)
    padding = b"\0" * (((length + 3) & ~3) - length)
    return struct.pack("=HH", length, attr_type) + value + padding


def route_get(nl, address):
    parsed = ipaddress.ip_address(address)
    family = socket.AF_INET if parsed.version == 4 else socket.AF_INET6
    bits = 32 if parsed.version == 4 else 128
    # struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; u32 flags.
    rtmsg = struct.pack("=BBBBBBBBI", family, bits, 0, 0, 0, 0, 0, 0, 0)
    nl.request(RTM_GETROUTE, NLM_F_REQUEST, rtmsg + rtattr(RTA_DST, parsed.packed))
    return nl.receive_one()


def write(name, data):
    with open(os.path.join(FIXTURES, name), "wb") as handle:
        handle.write(data)
    print("%-22s %5d bytes" % (name, len(data)))


def main():
    if os.geteuid() != 0:
        sys.exit("run as root in a new namespace: unshare -rn python3 %s" % sys.argv[0])
    set_up_network()
    nl = Netlink()

    # struct ifinfomsg: family, pad, type, index, flags, change.
    seq = nl.request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, struct.pack("=BBHiII", socket.AF_UNSPEC, 0, 0, 0, 0, 0))
    write("links.bin", nl.receive_until_done(seq))

    # struct ifaddrmsg: family, prefixlen, flags, scope, index.
    seq = nl.request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, struct.pack("=BBBBI", socket.AF_UNSPEC, 0, 0, 0, 0))
    write("addresses.bin", nl.receive_until_done(seq))

    write("route-get.bin", route_get(nl, "8.8.8.8"))
    write("route-get-onlink.bin", route_get(nl, "192.0.2.3"))
    write("route-get-local.bin", route_get(nl, "192.0.2.1"))
    write("route-get-error.bin", route_get(nl, "2001:4860:4860::8888"))


if __name__ == "__main__":
    main()
