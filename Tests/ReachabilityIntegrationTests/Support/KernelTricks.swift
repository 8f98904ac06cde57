import Foundation

/// Small Python programs run inside a test namespace for what `ip` cannot do.
enum KernelTricks {
    /// Sets a link's operstate with RTM_SETLINK + IFLA_OPERSTATE, as wpa_supplicant
    /// does when 802.1X/WPA authentication completes on a DORMANT-mode link.
    /// Arguments: interface name, IF_OPER_* value.
    static let setOperstate = """
        import socket, struct, sys
        name, state = sys.argv[1], int(sys.argv[2])
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        ifi = struct.pack('=BxHiII', 0, 0, socket.if_nametoindex(name), 0, 0)
        attr = struct.pack('=HHB3x', 5, 16, state)
        body = ifi + attr
        s.send(struct.pack('=IHHII', 16 + len(body), 19, 1 | 4, 1, 0) + body)
        err = struct.unpack('=i', s.recv(4096)[16:20])[0]
        sys.exit(0 if err == 0 else 1)
        """

    /// Attaches to a tun device (TUNSETIFF, IFF_TUN | IFF_NO_PI) so it gets
    /// carrier, prints "ready", and holds it until stdin closes.
    static let holdTun = """
        import fcntl, os, struct, sys
        fd = os.open('/dev/net/tun', os.O_RDWR)
        fcntl.ioctl(fd, 0x400454ca, struct.pack('16sH', sys.argv[1].encode(), 0x0001 | 0x1000))
        print('ready', flush=True)
        sys.stdin.read()
        """
}

extension TestNamespace {
    /// Starts a process in the namespace that holds `tun` open (carrier on) until
    /// the returned holder is detached.
    func attachTun(_ tun: String) throws -> TunHolder {
        let child = try spawn(["python3", "-c", KernelTricks.holdTun, tun], captureOutput: true)
        guard child.readLine().hasPrefix("ready") else {
            child.terminate()
            throw CommandFailed(command: "hold \(tun)", status: -1, stderr: "the tun holder did not attach")
        }
        return TunHolder(child)
    }
}

/// A process holding a tun device open. `detach()` closes it: the tun loses carrier.
final class TunHolder: Sendable {
    private let child: Child

    init(_ child: Child) { self.child = child }

    func detach() {
        child.closeInput()
        child.wait()
    }
}
