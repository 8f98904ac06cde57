#!/usr/bin/env python3
"""A scriptable DNS server for the hostname tests (standard library only).

It answers A and AAAA queries over UDP on 127.0.0.1:53 (run it inside a test
network namespace) from a table the test changes while it runs, and counts every
query. Unlike dnsmasq it can rotate answers per query (what round-robin records
and CDNs do), never answer some names (a stalled upstream), or answer late.

Commands arrive on stdin, one JSON object per line; each gets one JSON line back
on stdout:
  {"cmd": "set", "name": N, "answers": [[addr, ...], ...]}
        each A query for N gets the next set of addresses in turn (AAAA queries
        answer the IPv6 addresses of the set the last A query got)
  {"cmd": "set", "name": N, "stall": true}     never answer N
  {"cmd": "set", "name": N, "delay": S, "answers": [[...]]}   answer after S seconds
  {"cmd": "remove", "name": N}                 N gets NXDOMAIN again
  {"cmd": "stats"}   -> {"queries": {name: count}, "total": count}
  {"cmd": "reset"}   zeroes the counters
A name "*.PARENT" answers every name directly under PARENT (each keeps its own
turn). Names not in the table get NXDOMAIN. It prints {"ready": true} once listening.
"""

import heapq
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import time

table = {}
turns = {}
current = {}
queries = {}
pending = []  # (due, serial, reply, address)
serial = 0


def parse_question(packet):
    labels, offset = [], 12
    while True:
        length = packet[offset]
        offset += 1
        if length == 0:
            break
        if length & 0xC0:
            raise ValueError("compressed question")
        labels.append(packet[offset:offset + length].decode("ascii", "replace"))
        offset += length
    qtype, qclass = struct.unpack("!HH", packet[offset:offset + 4])
    return ".".join(labels).lower(), qtype, qclass, offset + 4


def reply(packet, question_end, rcode, records):
    (ident, flags) = struct.unpack("!HH", packet[:4])
    header = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100) | rcode, 1, len(records), 0, 0)
    body = packet[12:question_end]
    for rtype, rdata in records:
        body += struct.pack("!HHHIH", 0xC00C, rtype, 1, 0, len(rdata)) + rdata
    return header + body


def answer(packet):
    name, qtype, qclass, end = parse_question(packet)
    queries[name] = queries.get(name, 0) + 1
    entry = table.get(name)
    if entry is None and "." in name:
        entry = table.get("*." + name.split(".", 1)[1])  # a wildcard for the parent
    if entry is None:
        return reply(packet, end, 3, []), 0.0
    if entry.get("stall"):
        return None, 0.0
    sets = entry.get("answers") or [[]]
    if qtype == 1:
        turn = turns.get(name, 0)
        turns[name] = turn + 1
        current[name] = sets[turn % len(sets)]
    addresses = current.get(name, sets[0])
    records = []
    for text in addresses:
        address = ipaddress.ip_address(text)
        if qtype == 1 and address.version == 4:
            records.append((1, address.packed))
        elif qtype == 28 and address.version == 6:
            records.append((28, address.packed))
    return reply(packet, end, 0, records), float(entry.get("delay", 0))


def command(line):
    message = json.loads(line)
    cmd = message.get("cmd")
    if cmd == "set":
        name = message["name"].lower().rstrip(".")
        table[name] = message
        turns[name] = 0
        current.pop(name, None)
        return {"ok": True}
    if cmd == "remove":
        table.pop(message["name"].lower().rstrip("."), None)
        return {"ok": True}
    if cmd == "stats":
        return {"queries": queries, "total": sum(queries.values())}
    if cmd == "reset":
        queries.clear()
        return {"ok": True}
    return {"error": "unknown command"}


def main():
    global serial
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 53))
    print(json.dumps({"ready": True}), flush=True)
    stdin = sys.stdin.fileno()
    buffered = b""
    while True:
        timeout = max(0.0, pending[0][0] - time.monotonic()) if pending else None
        readable, _, _ = select.select([server, stdin], [], [], timeout)
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, _, data, address = heapq.heappop(pending)
            server.sendto(data, address)
        if server in readable:
            packet, address = server.recvfrom(4096)
            try:
                data, delay = answer(packet)
            except (ValueError, IndexError, struct.error):
                continue
            if data is None:
                continue
            if delay > 0:
                serial += 1
                heapq.heappush(pending, (now + delay, serial, data, address))
            else:
                server.sendto(data, address)
        if stdin in readable:
            chunk = os.read(stdin, 65536)
            if not chunk:
                return
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if line.strip():
                    print(json.dumps(command(line)), flush=True)


if __name__ == "__main__":
    main()
