import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

// The files the monitor reads for evaluation, which itself reads none: sysfs for
// interface classification, resolv.conf for `NetworkPath.supportsDNS`.

/// Reads the sysfs facts classification asks for (``InterfaceFacts``) from `/sys`
/// or a fake tree with the same layout (`class/net/IF/uevent`, …).
struct SysfsReader: InterfaceFacts {
    /// The sysfs root; nil reads nothing.
    var root: String?
    /// Where DHCP leases are read for `ANDROID_METERED`; nil reads none.
    var leases: LeaseFiles? = nil
    /// What the files are read through.
    var systemCalls: SystemCalls

    /// The facts `environment` names: its sysfs root and lease root, read through
    /// its system calls.
    init(_ environment: NetworkEnvironment) {
        root = environment.sysfsRoot
        systemCalls = environment.systemCalls
        leases = environment.leaseRoot.map { LeaseFiles(root: $0, systemCalls: environment.systemCalls) }
    }

    init(root: String?, systemCalls: SystemCalls = .live) {
        self.root = root
        self.systemCalls = systemCalls
    }

    /// The indices of `links` whose lease says metered (none without a lease root).
    func meteredByLease(_ links: [(name: String, index: Int32)]) -> Set<Int32> {
        leases?.metered(links) ?? []
    }

    /// The udev DEVTYPE of the interface, from `class/net/IF/uevent`.
    func deviceType(of name: String) -> String? {
        guard let root, Self.isSafeName(name) else { return nil }
        guard let contents = readSmallFile("\(root)/class/net/\(name)/uevent", limit: 4096, systemCalls: systemCalls)
        else { return nil }
        for line in contents.split(whereSeparator: \.isNewline) where line.hasPrefix("DEVTYPE=") {
            return String(line.dropFirst("DEVTYPE=".count))
        }
        return nil
    }

    /// True when `class/net/IF/phy80211` or `class/net/IF/wireless` exists.
    func isWireless(_ name: String) -> Bool {
        guard let root, Self.isSafeName(name) else { return false }
        if case .success = systemCalls.access("\(root)/class/net/\(name)/phy80211") { return true }
        if case .success = systemCalls.access("\(root)/class/net/\(name)/wireless") { return true }
        return false
    }

    /// The basename of `class/net/IF/device/driver`'s link target.
    func driver(of name: String) -> String? {
        guard let root, Self.isSafeName(name) else { return nil }
        guard case .success(let target) = systemCalls.readlink("\(root)/class/net/\(name)/device/driver"),
            !target.isEmpty
        else { return nil }
        return target.split(separator: "/").last.map(String.init)
    }

    /// Interface names never contain '/', and "." / ".." are not interfaces.
    private static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(0)
    }
}

/// Whether nameservers are configured (``NameserverRule``), read from `resolvConf`
/// and, when that names only systemd-resolved's stub, from `resolvedUpstream`.
package struct DNSConfiguration: Sendable, Hashable {
    var resolvConf: String
    var resolvedUpstream: String = "/run/systemd/resolve/resolv.conf"
    /// What the files are read through (the environment's).
    var systemCalls: SystemCalls = .live

    var isConfigured: Bool {
        var upstreamRead = false
        return isConfigured(upstreamRead: &upstreamRead)
    }

    /// ``isConfigured``, and whether it read `resolvedUpstream` for it (only behind
    /// systemd-resolved's stub).
    func isConfigured(upstreamRead: inout Bool) -> Bool {
        NameserverRule.isConfigured(
            resolvConf: readSmallFile(resolvConf, limit: Self.sizeLimit, systemCalls: systemCalls),
            resolvedUpstream: {
                upstreamRead = true
                return readSmallFile(resolvedUpstream, limit: Self.sizeLimit, systemCalls: systemCalls)
            })
    }

    /// The resolv.conf that applies to `environment`: `override` when given; for a
    /// `/run/netns/NAME` namespace `/etc/netns/NAME/resolv.conf` when it exists (as
    /// `ip netns exec` arranges); else `/etc/resolv.conf`.
    package static func resolvConfPath(for environment: NetworkEnvironment, override: String? = nil) -> String {
        if let override { return override }
        let named = environment.networkNamespacePath.flatMap(NetworkNamespace.name(of:))
        if let named, case .success = environment.systemCalls.access("/etc/netns/\(named)/resolv.conf") {
            return "/etc/netns/\(named)/resolv.conf"
        }
        return "/etc/resolv.conf"
    }

    /// The `nameserver` addresses in the file at `path` (none when it can't be read).
    static func nameservers(in path: String, systemCalls: SystemCalls = .live) -> [String] {
        NameserverRule.nameservers(in: readSmallFile(path, limit: sizeLimit, systemCalls: systemCalls) ?? "")
    }

    /// resolv.conf is a few hundred bytes; glibc reads no more than this either
    /// way, and a FIFO or a huge file must not stall or bloat an evaluation.
    package static let sizeLimit = 1 << 20
}
