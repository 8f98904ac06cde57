public import Foundation
import Glibc
public import Reachability
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// A captive-portal API URI and where it came from: the configuration, or what the
/// network announced (RFC 8910: DHCPv4 option 114, IPv6 RA option 37, DHCPv6
/// option 103) as the host recorded it.
///
/// `Sendable`: a plain value.
public struct CaptivePortalAPISource: Sendable, Hashable, CustomStringConvertible {
    /// What the URI says.
    ///
    /// `Sendable`: a plain enum.
    public enum URI: Sendable, Hashable, CustomStringConvertible {
        /// The RFC 8908 API to ask: always an https URL when discovered.
        case api(URL)
        /// RFC 8910's `urn:ietf:params:capport:unrestricted`: the network says it has
        /// no captive portal; there is no API to ask.
        case unrestricted

        /// The URL, or `urn:ietf:params:capport:unrestricted`.
        public var description: String {
            switch self {
            case .api(let url): url.absoluteString
            case .unrestricted: CaptivePortalDiscovery.unrestrictedURN
            }
        }
    }

    /// Which file format the URI was read from (``configuration`` when none).
    ///
    /// `Sendable`: a plain enum.
    public enum Format: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// ``ConnectivityConfiguration/captivePortalAPI``: nothing was read.
        case configuration
        /// systemd-networkd's link state file (`/run/systemd/netif/links/IFINDEX`,
        /// its `CAPTIVE_PORTAL=` line).
        case networkd = "systemd-networkd"
        /// An ISC dhclient lease file (`option default-url`, or the option declared
        /// as `captive-portal`, or undeclared as `unknown-114`).
        case dhclient
        /// A lease file NetworkManager's dhclient backend wrote
        /// (`/var/lib/NetworkManager/dhclient-UUID-IFACE.lease`, dhclient's format).
        case networkManager = "NetworkManager"

        /// The raw value: `"configuration"`, `"systemd-networkd"`, `"dhclient"` or
        /// `"NetworkManager"`.
        public var description: String { rawValue }
    }

    /// The URI.
    public var uri: URI
    /// The format it was read from.
    public var format: Format
    /// The file it was read from (nil for the configuration).
    public var path: String?
    /// The interface it was announced on (nil for the configuration).
    public var interface: String?

    /// A source with these fields.
    public init(uri: URI, format: Format, path: String? = nil, interface: String? = nil) {
        self.uri = uri
        self.format = format
        self.path = path
        self.interface = interface
    }

    /// The API URL to ask, nil for ``URI/unrestricted``.
    public var apiURL: URL? {
        if case .api(let url) = uri { return url }
        return nil
    }

    /// One line: `https://portal.example/api (dhclient /var/lib/dhcp/dhclient.leases, eth0)`,
    /// or `… (configuration)`.
    public var description: String {
        let origin = [format.rawValue, path, interface].compactMap { $0 }
        return "\(uri) (\(origin.count > 1 ? "\(origin[0]) \(origin.dropFirst().joined(separator: ", "))" : origin[0]))"
    }
}

/// Finds the captive-portal API URI the network announced (RFC 8910) where the host
/// records it, for an interface given by name and index.
///
/// ```swift
/// if let found = CaptivePortalDiscovery.system.discover(interfaceName: "wlan0", index: 3) {
///     print("the network announced", found.uri, "- read from", found.path ?? "-")
/// }
/// ```
///
/// What is read, in this order (the first that knows the interface wins):
///
/// 1. systemd-networkd's link state file, `/run/systemd/netif/links/IFINDEX`: its
///    `CAPTIVE_PORTAL=` line (networkd's pick among DHCPv4, DHCPv6 and RA). When
///    networkd manages the link (the file names its `.network` file) and recorded
///    none, nothing is found. Its lease files (`/run/systemd/netif/leases/IFINDEX`)
///    are not read: networkd does not record the option there.
/// 2. dhclient lease files (`dhclient*.leases`, `dhclient*.lease`) in `/var/lib/dhcp`
///    and `/var/lib/dhclient`, and those NetworkManager's dhclient backend writes in
///    `/var/lib/NetworkManager`: the newest unexpired `lease { … }` naming the
///    interface (the last one in the most recently modified file). When that lease
///    carries no option 114, nothing is found: an older lease's URI belongs to
///    another network. NetworkManager's internal DHCP client records only the
///    address in its lease files, and nothing of the option under
///    `/run/NetworkManager`: with it (NetworkManager's default), nothing is found.
///
/// What a network hands over is not trusted: a URI is taken only when it is RFC
/// 8910's `urn:ietf:params:capport:unrestricted`, or an https URL (RFC 8908 requires
/// HTTPS for the API) that passes the configuration's URL rules, with no user name
/// or password, of at most 8 KiB of printable ASCII. Anything else — `http:`,
/// `javascript:`, binary garbage, an unterminated quote — is ignored, as are files
/// that are not regular files or are larger than ``maximumFileSize`` (read no
/// further), and directories beyond their first ``maximumFilesPerDirectory`` entries.
///
/// The files describe the interfaces of the namespace their daemons run in: a
/// ``Connectivity`` watching another namespace reads them only when the locations
/// were changed from ``system``.
///
/// `Sendable`: a plain value.
public struct CaptivePortalDiscovery: Sendable, Hashable {
    /// Prefixed to every directory below (`"/"`: the real file system). Default `"/"`.
    public var root: String
    /// Directories of systemd-networkd link state files named by interface index.
    /// Default `["/run/systemd/netif/links"]`.
    public var networkdLinkDirectories: [String]
    /// Directories of dhclient lease files (`dhclient*.leases` or `dhclient*.lease`).
    /// Default `["/var/lib/dhcp", "/var/lib/dhclient"]`.
    public var dhclientLeaseDirectories: [String]
    /// Directories of NetworkManager's dhclient-backend lease files
    /// (`dhclient*.lease`). Default `["/var/lib/NetworkManager"]`.
    public var networkManagerLeaseDirectories: [String]
    /// A file larger than this is ignored (and no more is read of it). Default 1 MiB.
    public var maximumFileSize: Int
    /// Entries looked at per directory. Default 256.
    public var maximumFilesPerDirectory: Int

    /// RFC 8910's URI for "no captive portal here".
    public static let unrestrictedURN = "urn:ietf:params:capport:unrestricted"

    /// The real locations (the defaults above).
    public static let system = CaptivePortalDiscovery()

    /// The default locations under `root` (`"/"`: the real file system).
    public init(root: String = "/") {
        self.root = root
        networkdLinkDirectories = ["/run/systemd/netif/links"]
        dhclientLeaseDirectories = ["/var/lib/dhcp", "/var/lib/dhclient"]
        networkManagerLeaseDirectories = ["/var/lib/NetworkManager"]
        maximumFileSize = 1 << 20
        maximumFilesPerDirectory = 256
    }

    /// The URI announced on the interface `interfaceName` (index `index`), read as
    /// the type's description says; nil when none is recorded, or none that passes.
    /// Leases that expired before `now` are skipped.
    public func discover(interfaceName: String, index: Int, now: Date = Date()) -> CaptivePortalAPISource? {
        discover(interfaceName: interfaceName, index: index, now: now, systemCalls: .live)
    }

    /// ``discover(interfaceName:index:now:)`` with every open, fstat and directory
    /// listing made through `systemCalls`: a check passes its environment's, so that
    /// a fault plan reaches these reads as it reaches the monitor's.
    func discover(interfaceName: String, index: Int, now: Date = Date(), systemCalls: SystemCalls)
        -> CaptivePortalAPISource?
    {
        for directory in networkdLinkDirectories {
            let path = join(root, directory) + "/\(index)"
            guard let bytes = Self.readFile(path, limit: maximumFileSize, systemCalls: systemCalls)?.bytes else {
                continue
            }
            let state = Self.networkdState(bytes)
            if let value = state.captivePortal {
                return Self.accept(value).map {
                    CaptivePortalAPISource(uri: $0, format: .networkd, path: path, interface: interfaceName)
                }
            }
            if state.managed { return nil }  // networkd runs DHCP and RA there, and recorded nothing.
        }
        var newest:
            (modified: (Int, Int), order: Int, lease: DHCPLease, path: String, format: CaptivePortalAPISource.Format)?
        let groups: [([String], CaptivePortalAPISource.Format)] = [
            (dhclientLeaseDirectories, .dhclient), (networkManagerLeaseDirectories, .networkManager),
        ]
        for (directories, format) in groups {
            for directory in directories {
                let full = join(root, directory)
                for name in Self.leaseFiles(in: full, limit: maximumFilesPerDirectory, systemCalls: systemCalls) {
                    let path = "\(full)/\(name)"
                    guard let (bytes, modified) = Self.readFile(path, limit: maximumFileSize, systemCalls: systemCalls)
                    else { continue }
                    let leases = Self.dhclientLeases(bytes)
                    for (order, lease) in leases.enumerated() where lease.interface == interfaceName {
                        if let expiry = lease.expiry, expiry < now { continue }
                        if let current = newest,
                            (current.modified.0, current.modified.1, current.order) > (modified.0, modified.1, order)
                        {
                            continue
                        }
                        newest = (modified, order, lease, path, format)
                    }
                }
            }
        }
        guard let newest, let value = newest.lease.captivePortal, let uri = Self.accept(value) else { return nil }
        return CaptivePortalAPISource(uri: uri, format: newest.format, path: newest.path, interface: interfaceName)
    }

    /// ``discover(interfaceName:index:now:)`` for each of `interfaces`, in order; the
    /// interfaces with nothing found are left out.
    public func discover(_ interfaces: [NetworkInterface], now: Date = Date()) -> [CaptivePortalAPISource] {
        interfaces.compactMap { discover(interfaceName: $0.name, index: $0.index, now: now) }
    }

    /// Throws unless the settings can work: absolute paths without NUL bytes, a
    /// ``maximumFileSize`` from 1 byte to 16 MiB, ``maximumFilesPerDirectory`` at
    /// least 1.
    func check() throws(ConnectivityError) {
        for path in [root] + networkdLinkDirectories + dhclientLeaseDirectories + networkManagerLeaseDirectories {
            guard path.hasPrefix("/"), !path.utf8.contains(0), path.utf8.count <= Int(PATH_MAX) else {
                throw ConnectivityError(
                    "captivePortalDiscovery: \(quotedForMessage(path)) is not an absolute path")
            }
        }
        guard (1...(16 << 20)).contains(maximumFileSize) else {
            throw ConnectivityError("captivePortalDiscovery.maximumFileSize \(maximumFileSize) is not 1 byte to 16 MiB")
        }
        guard maximumFilesPerDirectory >= 1 else {
            throw ConnectivityError("captivePortalDiscovery.maximumFilesPerDirectory must be at least 1")
        }
    }

    private func join(_ root: String, _ directory: String) -> String {
        var base = root
        while base.hasSuffix("/") { base.removeLast() }
        return base + (directory.hasPrefix("/") ? directory : "/" + directory)
    }

    // MARK: - The URI rule

    /// The URI in `bytes` when it is acceptable (see the type's description).
    static func accept(_ bytes: [UInt8]) -> CaptivePortalAPISource.URI? {
        guard (1...ConnectivityConfiguration.fieldLimit).contains(bytes.count),
            bytes.allSatisfy({ (0x21...0x7E).contains($0) })
        else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.lowercased() == unrestrictedURN { return .unrestricted }
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", PortalURL.accepted(url) != nil,
            (try? ConnectivityConfiguration.checkURL(url, what: "captive-portal API")) != nil
        else { return nil }
        return .api(url)
    }

    // MARK: - Files

    /// At most `limit` bytes of a regular file, and when it last changed (seconds,
    /// nanoseconds); nil when it can't be read, is not a regular file, or is larger.
    static func readFile(_ path: String, limit: Int, systemCalls: SystemCalls = .live)
        -> (bytes: [UInt8], modified: (Int, Int))?
    {
        guard case .success(let file) = systemCalls.readFile(path, limit: limit) else { return nil }
        return (file.bytes, (file.status.modifiedSeconds, file.status.modifiedNanoseconds))
    }

    /// The names of the lease files in `directory` (``DHCPLeaseFile/fileNames(in:limit:systemCalls:)``).
    static func leaseFiles(in directory: String, limit: Int, systemCalls: SystemCalls = .live) -> [String] {
        DHCPLeaseFile.fileNames(in: directory, limit: limit, systemCalls: systemCalls)
    }

    // MARK: - systemd-networkd

    /// What a networkd link state file says (an environment-style file: `KEY=VALUE`
    /// lines, `#` and `;` comments, a value optionally in matching quotes): the value
    /// of its last `CAPTIVE_PORTAL=` line (a quoted value with no closing quote is no
    /// value), and whether networkd manages the link (it names the `.network` file
    /// it applies, `NETWORK_FILE=`; an unmanaged link's DHCP client may be another).
    static func networkdState(_ bytes: [UInt8]) -> (captivePortal: [UInt8]?, managed: Bool) {
        var found: [UInt8]?
        var managed = false
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 }
            guard let equals = trimmed.firstIndex(of: UInt8(ascii: "=")),
                trimmed.first != UInt8(ascii: "#"), trimmed.first != UInt8(ascii: ";")
            else { continue }
            let key = trimmed[..<equals].filter { $0 != 0x20 && $0 != 0x09 }
            if key.elementsEqual("NETWORK_FILE".utf8) { managed = true }
            guard key.elementsEqual("CAPTIVE_PORTAL".utf8) else { continue }
            var value = Array(trimmed[trimmed.index(after: equals)...])
            while let last = value.last, [0x20, 0x09, 0x0D].contains(last) { value.removeLast() }
            while let first = value.first, [0x20, 0x09].contains(first) { value.removeFirst() }
            if let quote = value.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                guard value.count >= 2, value.last == quote else {
                    found = nil
                    continue
                }
                value = Array(value.dropFirst().dropLast())
            }
            found = value
        }
        return (found, managed)
    }

    // MARK: - dhclient

    /// One `lease { … }` of a dhclient lease file: what discovery needs of it.
    struct DHCPLease: Equatable {
        var interface: String?
        /// The value of option 114, as bytes.
        var captivePortal: [UInt8]?
        /// When it expires; nil for `expire never` or none.
        var expiry: Date?
    }

    /// The names under which dhclient writes option 114: ISC dhclient's own name for
    /// code 114 (`default-url`), the RFC 8910 name a configuration may declare it
    /// under, and dhclient's name for an undeclared code.
    static let optionNames: Set<String> = ["default-url", "captive-portal", "unknown-114"]

    /// The IPv4 `lease { … }` blocks of a dhclient lease file, in file order
    /// (``DHCPLeaseFile/leases(_:)``), with what discovery needs of each.
    static func dhclientLeases(_ bytes: [UInt8]) -> [DHCPLease] {
        DHCPLeaseFile.leases(bytes).map { lease in
            DHCPLease(
                interface: lease.interface, captivePortal: lease.option(optionNames),
                expiry: lease.expire.flatMap(expiry))
        }
    }

    /// dhclient's `expire` forms (``DHCPLeaseFile/expiry(_:)``) as a date; nil for
    /// `never` and anything else (taken as not expired).
    static func expiry(_ words: [DHCPTokens.Token]) -> Date? {
        DHCPLeaseFile.expiry(words).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}

extension ConnectivityConfiguration {
    /// The API a check over `interface` asks, and where it came from:
    /// ``captivePortalAPI`` when set; else, with ``discoversCaptivePortalAPI``, what
    /// ``captivePortalDiscovery`` finds for the interface (read only for the process's
    /// own namespace, unless the locations were changed from
    /// ``CaptivePortalDiscovery/system``), read through the ``environment``'s system calls.
    func captivePortalAPISource(for interface: NetworkInterface?) -> CaptivePortalAPISource? {
        if let captivePortalAPI { return CaptivePortalAPISource(uri: .api(captivePortalAPI), format: .configuration) }
        guard discoversCaptivePortalAPI, let interface,
            environment.networkNamespacePath == nil || captivePortalDiscovery != .system
        else { return nil }
        return captivePortalDiscovery.discover(
            interfaceName: interface.name, index: interface.index, systemCalls: environment.systemCalls)
    }

    /// This configuration with ``captivePortalAPI`` set to the API `source` names
    /// (none for nil or ``CaptivePortalAPISource/URI/unrestricted``): what one check uses.
    func asking(_ source: CaptivePortalAPISource?) -> ConnectivityConfiguration {
        var configuration = self
        configuration.captivePortalAPI = source?.apiURL
        return configuration
    }
}
