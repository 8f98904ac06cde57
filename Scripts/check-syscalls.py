#!/usr/bin/env python3
"""Checks that no file of Sources/ReachabilityCore outside System/ makes a system
call directly: every one goes through `SystemCalls` (System/SystemCalls.swift,
DESIGN §4.1), the one wrapper layer, where the error policy lives and where a
test's fault plan can fail any call.

A call is a name of SYSCALLS (libc and libmnl wrappers of system calls, and the
CNetlink shims that make one) followed by `(`, either qualified as `Glibc.NAME(` or
unqualified with no argument label (`read(fd, …)`, not `read(interfaceIndex: …)`,
and not `x.read(…)`: a method of the package's own). Comments and string literals
are stripped first; declarations (`func read(`) don't count. What does not count as
a system call (pure libc, clock reads, libmnl's message helpers, locks) is listed
in System/SystemCalls.swift.

Usage: python3 Scripts/check-syscalls.py   (exit 1 when a file calls one directly)
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "ReachabilityCore")
ALLOWED = "System"

SYSCALLS = [
    # descriptors and files
    "open", "openat", "creat", "read", "pread", "readv", "write", "pwrite", "writev", "close", "dup", "dup2", "dup3",
    "pipe", "pipe2", "fcntl", "ioctl", "stat", "lstat", "fstat", "fstatat", "statx", "access", "faccessat",
    "readlink", "readlinkat", "realpath", "opendir", "fdopendir", "readdir", "closedir", "unlink", "rename",
    "mkdir", "rmdir", "fopen", "fdopen", "fread", "fwrite", "fclose", "getline",
    # sockets
    "socket", "socketpair", "bind", "connect", "listen", "accept", "accept4", "send", "sendto", "sendmsg", "recv",
    "recvfrom", "recvmsg", "setsockopt", "getsockopt", "getsockname", "shutdown",
    # waiting and events
    "poll", "ppoll", "select", "epoll_create1", "epoll_ctl", "epoll_wait", "eventfd", "eventfd_read",
    "eventfd_write", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    # processes, threads, namespaces
    "syscall", "prctl", "setns", "unshare", "mount", "umount", "umount2", "pidfd_open", "kill", "fork", "execve",
    "pthread_create", "pthread_join", "pthread_detach", "pthread_kill", "usleep", "nanosleep", "sleep",
    "getrlimit", "setrlimit",
    # names and interfaces
    "getaddrinfo", "freeaddrinfo", "getnameinfo", "gethostbyname", "if_nametoindex", "if_indextoname",
    "getifaddrs",
    # CNetlink shims that make a call
    "cnl_eventfd", "cnl_setns_net", "cnl_namespace_type", "cnl_pidfd_open", "cnl_inotify_init",
    "cnl_private_mounts", "cnl_bind_mount", "cnl_set_thread_name", "cnl_gettid", "cnl_socket_buffer_size",
]
# libmnl's socket calls, by prefix.
PREFIXES = ["mnl_socket_"]

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
MULTILINE_STRING = re.compile(r'"""(?:.|\n)*?"""')
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
NAMES = "|".join(sorted(map(re.escape, SYSCALLS), key=len, reverse=True))
# `Glibc.read(`, or `read(` not after `.`, an identifier character or `func `, and
# not with a labelled first argument.
QUALIFIED = re.compile(rf"\bGlibc\s*\.\s*({NAMES})\s*\(")
UNQUALIFIED = re.compile(rf"(?<![\w.`])(?<!func )({NAMES})\s*\((?!\s*\w+\s*:(?!:))")
PREFIXED = re.compile(r"(?<![\w.])((?:" + "|".join(map(re.escape, PREFIXES)) + r")\w*)\s*\(")


def code_of(text):
    """The text with comments and string literals blanked, lines kept."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    text = MULTILINE_STRING.sub(blank, text)
    text = COMMENT.sub(blank, text)
    return STRING.sub(blank, text)


def main():
    findings = []
    checked = 0
    for directory, folders, names in os.walk(ROOT):
        relative = os.path.relpath(directory, ROOT)
        if relative == ALLOWED or relative.startswith(ALLOWED + os.sep):
            continue
        folders[:] = [f for f in folders if not f.endswith(".docc")]
        for name in sorted(names):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            checked += 1
            code = code_of(open(path, encoding="utf-8").read())
            for number, line in enumerate(code.split("\n"), 1):
                for pattern in (QUALIFIED, UNQUALIFIED, PREFIXED):
                    for match in pattern.finditer(line):
                        findings.append(
                            f"{os.path.relpath(path, os.path.join(ROOT, '..', '..'))}:{number}: "
                            f"calls {match.group(1)} directly; go through SystemCalls (System/)")
    for finding in findings:
        print("check-syscalls:", finding)
    print(f"check-syscalls: {len(findings)} direct system call(s) in {checked} files outside {ALLOWED}/")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
