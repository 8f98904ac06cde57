import Foundation
import Glibc
import Reachability
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem
import Testing

@testable import Connectivity

/// RFC 8910 discovery: the captive-portal API URI read from
/// the files hosts record it in, with fixtures in the formats the daemons write.
@Suite struct CaptivePortalDiscoveryTests {
    /// A file-system root of its own: `ROOT/run/systemd/netif/links`,
    /// `ROOT/var/lib/dhcp`, `ROOT/var/lib/NetworkManager`; removed on deinit.
    final class Root {
        let path: String
        var discovery: CaptivePortalDiscovery { CaptivePortalDiscovery(root: path) }

        init() throws {
            path = NSTemporaryDirectory() + "discovery-\(UUID().uuidString)"
            for directory in ["run/systemd/netif/links", "var/lib/dhcp", "var/lib/NetworkManager"] {
                try FileManager.default.createDirectory(
                    atPath: "\(path)/\(directory)", withIntermediateDirectories: true)
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// Writes `contents` to `ROOT/RELATIVE`, modified at `modified` when given; returns the path.
        @discardableResult
        func write(_ relative: String, _ contents: String, modified: Date? = nil) throws -> String {
            try write(relative, Array(contents.utf8), modified: modified)
        }

        @discardableResult
        func write(_ relative: String, _ bytes: [UInt8], modified: Date? = nil) throws -> String {
            let file = "\(path)/\(relative)"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            if let modified {
                try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file)
            }
            return file
        }
    }

    /// A link state file as systemd-networkd writes it (`link_save` in
    /// src/network/networkd-state-file.c) for a managed link, with `captivePortal`
    /// as its `CAPTIVE_PORTAL=` line when given.
    static func networkdLink(captivePortal: String?, managed: Bool = true) -> String {
        var lines = [
            "# This is private data. Do not parse.", "ADMIN_STATE=\(managed ? "configured" : "unmanaged")",
            "OPER_STATE=routable", "CARRIER_STATE=carrier", "ADDRESS_STATE=routable",
            "IPV4_ADDRESS_STATE=routable", "IPV6_ADDRESS_STATE=degraded",
        ]
        if managed {
            lines += [
                "ONLINE_STATE=online", "REQUIRED_FOR_ONLINE=yes", "REQUIRED_OPER_STATE_FOR_ONLINE=degraded:routable",
                "REQUIRED_FAMILY_FOR_ONLINE=any", "ACTIVATION_POLICY=up",
                "NETWORK_FILE=/etc/systemd/network/20-wired.network", "NETWORK_FILE_DROPINS=\"\"",
                "DNS=192.0.2.1", "NTP=", "SIP=",
            ]
            if let captivePortal { lines.append("CAPTIVE_PORTAL=\(captivePortal)") }
            lines += ["DOMAINS=", "ROUTE_DOMAINS=", "LLMNR=yes", "MDNS=no"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One lease as ISC dhclient 4.4 writes it (this is what `dhclient -1 -lf FILE`
    /// wrote after a lease from dnsmasq with `dhcp-option-force=114,"…"`), with
    /// `option` as its option-114 line.
    static func dhclientLease(
        interface: String = "eth0", option: String? = #"option default-url "https://portal.example/api";"#,
        expire: String = "expire 3 2099/11/25 16:08:21;"
    ) -> String {
        """
        lease {
          interface "\(interface)";
          fixed-address 192.0.2.10;
          option subnet-mask 255.255.255.0;
          option routers 192.0.2.1;
          option dhcp-lease-time 3600;
        \(option.map { "  " + $0 + "\n" } ?? "")  option dhcp-message-type 5;
          option dhcp-server-identifier 192.0.2.1;
          option dhcp-renewal-time 1800;
          option broadcast-address 192.0.2.255;
          option dhcp-rebinding-time 3150;
          option host-name "vm";
          renew 3 2099/11/25 15:36:20;
          rebind 3 2099/11/25 16:00:51;
          \(expire)
        }

        """
    }

    static let now = Date(timeIntervalSince1970: 1_764_000_000)  // 2025-11-24

    // MARK: - systemd-networkd

    @Test("networkd: the link state file's CAPTIVE_PORTAL= for the interface's index")
    func networkdLink() throws {
        let root = try Root()
        let path = try root.write(
            "run/systemd/netif/links/7", Self.networkdLink(captivePortal: "https://portal.example/api"))
        try root.write("run/systemd/netif/links/8", Self.networkdLink(captivePortal: "https://other.example/api"))
        let found = try #require(root.discovery.discover(interfaceName: "eth0", index: 7, now: Self.now))
        #expect(found.uri == .api(URL(string: "https://portal.example/api")!))
        #expect(found.format == .networkd)
        #expect(found.path == path)
        #expect(found.interface == "eth0")
        #expect(root.discovery.discover(interfaceName: "eth0", index: 9, now: Self.now) == nil, "no file for index 9")
    }

    @Test("networkd: urn:ietf:params:capport:unrestricted means no portal")
    func networkdUnrestricted() throws {
        let root = try Root()
        try root.write(
            "run/systemd/netif/links/3", Self.networkdLink(captivePortal: "urn:ietf:params:capport:unrestricted"))
        let found = try #require(root.discovery.discover(interfaceName: "wlan0", index: 3, now: Self.now))
        #expect(found.uri == .unrestricted)
        #expect(found.apiURL == nil)
    }

    @Test("networkd manages the link and recorded none: nothing, not a dhclient lease of the same name")
    func networkdManagedWithoutPortal() throws {
        let root = try Root()
        try root.write("run/systemd/netif/links/3", Self.networkdLink(captivePortal: nil))
        try root.write("var/lib/dhcp/dhclient.eth0.leases", Self.dhclientLease())
        #expect(root.discovery.discover(interfaceName: "eth0", index: 3, now: Self.now) == nil)
    }

    @Test("networkd sees but does not manage the link: dhclient's lease is read")
    func networkdUnmanaged() throws {
        let root = try Root()
        try root.write("run/systemd/netif/links/3", Self.networkdLink(captivePortal: nil, managed: false))
        try root.write("var/lib/dhcp/dhclient.eth0.leases", Self.dhclientLease())
        #expect(root.discovery.discover(interfaceName: "eth0", index: 3, now: Self.now)?.format == .dhclient)
    }

    @Test(
        "networkd values: quotes, comments, the last line wins; an unterminated quote is no value",
        arguments: [
            ("CAPTIVE_PORTAL=\"https://q.example/api\"\n", "https://q.example/api"),
            ("CAPTIVE_PORTAL='https://q.example/api'\n", "https://q.example/api"),
            ("  CAPTIVE_PORTAL = https://q.example/api  \r\n", "https://q.example/api"),
            ("#CAPTIVE_PORTAL=https://no.example/\nCAPTIVE_PORTAL=https://q.example/api\n", "https://q.example/api"),
            ("CAPTIVE_PORTAL=https://old.example/\nCAPTIVE_PORTAL=https://q.example/api\n", "https://q.example/api"),
            ("CAPTIVE_PORTAL=\"https://q.example/api\n", nil),
            ("XCAPTIVE_PORTAL=https://q.example/api\n", nil),
        ] as [(String, String?)])
    func networkdValues(text: String, expected: String?) {
        let value = CaptivePortalDiscovery.networkdState(Array(text.utf8)).captivePortal
        #expect(value.map { String(decoding: $0, as: UTF8.self) } == expected)
    }

    // MARK: - dhclient

    @Test("dhclient: the real lease format, option default-url (ISC's name for code 114)")
    func dhclientLease() throws {
        let root = try Root()
        let path = try root.write("var/lib/dhcp/dhclient.eth0.leases", Self.dhclientLease())
        let found = try #require(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now))
        #expect(found.uri == .api(URL(string: "https://portal.example/api")!))
        #expect(found.format == .dhclient)
        #expect(found.path == path)
        #expect(root.discovery.discover(interfaceName: "eth1", index: 2, now: Self.now) == nil, "another interface")
    }

    @Test(
        "dhclient: option 114 under its other names and forms",
        arguments: [
            #"option captive-portal "https://portal.example/api";"#,
            #"option unknown-114 "https://portal.example/api";"#,
            "option unknown-114 "
                + Array("https://portal.example/api".utf8).map { String(format: "%02x", $0) }.joined(separator: ":")
                + ";",
            #"option default-url "https:\057\057portal.example/api";"#,
            #"option default-url "https://portal.example/api"; # a comment"#,
        ])
    func dhclientForms(option: String) throws {
        let root = try Root()
        try root.write("var/lib/dhcp/dhclient.leases", Self.dhclientLease(option: option))
        let found = root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now)
        #expect(found?.uri == .api(URL(string: "https://portal.example/api")!), "\(option)")
    }

    @Test("dhclient: the newest lease for the interface wins; when it has no option 114, nothing")
    func dhclientNewest() throws {
        let root = try Root()
        let older = Self.dhclientLease(option: #"option default-url "https://old.example/api";"#)
        let newer = Self.dhclientLease(option: #"option default-url "https://new.example/api";"#)
        let other = Self.dhclientLease(interface: "wlan0", option: #"option default-url "https://wlan.example/api";"#)
        try root.write("var/lib/dhcp/dhclient.leases", older + newer + other)
        #expect(
            root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now)?.apiURL
                == URL(string: "https://new.example/api"))
        try root.write("var/lib/dhcp/dhclient.leases", older + newer + Self.dhclientLease(option: nil))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
    }

    @Test("dhclient: across files, the most recently modified file's lease wins")
    func dhclientNewestFile() throws {
        let root = try Root()
        try root.write(
            "var/lib/dhcp/dhclient.eth0.leases",
            Self.dhclientLease(option: #"option default-url "https://a.example/api";"#),
            modified: Self.now.addingTimeInterval(-60))
        try root.write(
            "var/lib/dhcp/dhclient.leases", Self.dhclientLease(option: #"option default-url "https://b.example/api";"#),
            modified: Self.now.addingTimeInterval(-600))
        #expect(
            root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now)?.apiURL
                == URL(string: "https://a.example/api"))
    }

    @Test("dhclient: an expired lease is skipped; expire never and epoch forms")
    func dhclientExpiry() throws {
        let root = try Root()
        try root.write(
            "var/lib/dhcp/dhclient.leases", Self.dhclientLease(expire: "expire 1 2020/01/06 10:00:00;"))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
        try root.write("var/lib/dhcp/dhclient.leases", Self.dhclientLease(expire: "expire never;"))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) != nil)
        try root.write(
            "var/lib/dhcp/dhclient.leases",
            Self.dhclientLease(expire: "expire epoch 1700000000; # Tue Nov 14 22:13:20 2023"))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
        #expect(
            CaptivePortalDiscovery.expiry([.word("3"), .word("2026/11/25"), .word("16:08:21")])
                == Date(timeIntervalSince1970: 1_795_622_901))
    }

    @Test("NetworkManager's dhclient backend: its lease file, in dhclient's format")
    func networkManagerLease() throws {
        let root = try Root()
        let path = try root.write(
            "var/lib/NetworkManager/dhclient-5c1e3f52-6c4f-4b8a-9d4e-1f2a3b4c5d6e-wlan0.lease",
            Self.dhclientLease(interface: "wlan0"))
        // The internal client's lease file: only the address (nm-dhcp-nettools.c, lease_save).
        try root.write(
            "var/lib/NetworkManager/internal-5c1e3f52-6c4f-4b8a-9d4e-1f2a3b4c5d6e-eth0.lease",
            "# This is private data. Do not parse.\nADDRESS=192.0.2.10\n")
        let found = try #require(root.discovery.discover(interfaceName: "wlan0", index: 3, now: Self.now))
        #expect(found.format == .networkManager)
        #expect(found.path == path)
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
    }

    // MARK: - Bad input

    @Test(
        "a URI that is not an https API URL or the unrestricted URN is ignored",
        arguments: [
            "http://portal.example/api",  // RFC 8908: the API is HTTPS
            "javascript:alert(1)",
            "https://user:pass@portal.example/api",
            "https://user@portal.example/api",
            "file:///etc/passwd",
            "data:text/html,x",
            "https:///api",
            "https://portal.example:99999/api",
            "https://portal.example/" + String(repeating: "a", count: 9000),
            "https://portal.example/a b",
            "https://portäl.example/api",
            "urn:ietf:params:capport:restricted",
            "",
        ])
    func refusedURIs(uri: String) throws {
        #expect(CaptivePortalDiscovery.accept(Array(uri.utf8)) == nil)
        let root = try Root()
        try root.write("run/systemd/netif/links/4", Self.networkdLink(captivePortal: uri))
        try root.write("var/lib/dhcp/dhclient.leases", Self.dhclientLease(option: "option default-url \"\(uri)\";"))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 4, now: Self.now) == nil)
        #expect(root.discovery.discover(interfaceName: "eth0", index: 5, now: Self.now) == nil)
    }

    @Test("a value dhclient recorded with quotes in it (a server that sent them) is refused")
    func quotedValue() throws {
        let root = try Root()
        try root.write(
            "var/lib/dhcp/dhclient.leases",
            Self.dhclientLease(option: #"option default-url "\"https://portal.example/api\"";"#))
        let lease = try #require(
            CaptivePortalDiscovery.dhclientLeases(
                Array(
                    Self.dhclientLease(
                        option: #"option default-url "\"https://portal.example/api\"";"#
                    ).utf8)
            ).first)
        #expect(lease.captivePortal == Array(#""https://portal.example/api""#.utf8))
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
    }

    @Test("accepted URIs: https, and the unrestricted URN in any case")
    func acceptedURIs() {
        #expect(
            CaptivePortalDiscovery.accept(Array("https://192.0.2.1:8443/api".utf8))
                == .api(URL(string: "https://192.0.2.1:8443/api")!))
        #expect(CaptivePortalDiscovery.accept(Array("URN:IETF:params:capport:UNRESTRICTED".utf8)) == .unrestricted)
    }

    @Test("an unterminated string keeps the leases completed before it; garbage yields none, never a crash")
    func unterminatedAndGarbage() throws {
        let good = Self.dhclientLease()
        let broken = "lease {\n  interface \"eth0\";\n  option default-url \"https://evil.example/api;\n}\n"
        let leases = CaptivePortalDiscovery.dhclientLeases(Array((good + broken).utf8))
        #expect(leases.count == 1)
        #expect(leases.first?.captivePortal == Array("https://portal.example/api".utf8))
        let root = try Root()
        try root.write("var/lib/dhcp/dhclient.leases", good + broken)
        #expect(
            root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now)?.apiURL
                == URL(string: "https://portal.example/api"))

        var garbage = [UInt8](repeating: 0, count: 65536)
        for index in garbage.indices { garbage[index] = UInt8(truncatingIfNeeded: index &* 131 &+ 7) }
        #expect(CaptivePortalDiscovery.dhclientLeases(garbage).isEmpty)
        #expect(CaptivePortalDiscovery.networkdState(garbage).captivePortal == nil)
        #expect(CaptivePortalDiscovery.dhclientLeases(Array("}}}{{{;;\"\\".utf8)).isEmpty)
        #expect(CaptivePortalDiscovery.dhclientLeases(Array(String(repeating: "{", count: 100_000).utf8)).isEmpty)
        try root.write("var/lib/dhcp/dhclient.leases", garbage)
        try root.write("run/systemd/netif/links/2", garbage)
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
    }

    @Test("a file over maximumFileSize, a FIFO and a directory are not read")
    func unreadableFiles() throws {
        let root = try Root()
        var discovery = root.discovery
        discovery.maximumFileSize = 4096
        let padding = "# " + String(repeating: "x", count: 8192) + "\n"
        try root.write("var/lib/dhcp/dhclient.leases", padding + Self.dhclientLease())
        #expect(discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil, "over the cap")
        #expect(CaptivePortalDiscovery.readFile("\(root.path)/var/lib/dhcp/dhclient.leases", limit: 4096)?.bytes == nil)
        #expect(
            CaptivePortalDiscovery.readFile("\(root.path)/var/lib/dhcp/dhclient.leases", limit: 1 << 20)?.bytes != nil)

        try FileManager.default.removeItem(atPath: "\(root.path)/var/lib/dhcp/dhclient.leases")
        #expect(mkfifo("\(root.path)/var/lib/dhcp/dhclient.leases", 0o600) == 0)
        #expect(mkfifo("\(root.path)/run/systemd/netif/links/2", 0o600) == 0)
        try FileManager.default.createDirectory(
            atPath: "\(root.path)/var/lib/dhcp/dhclient.wlan0.leases", withIntermediateDirectories: true)
        let started = ContinuousClock.now
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
        #expect(root.discovery.discover(interfaceName: "wlan0", index: 3, now: Self.now) == nil)
        #expect(ContinuousClock.now - started < .seconds(5), "a FIFO never blocks the read")
    }

    @Test(
        "failing open, fstat or the directory listing (EMFILE, EACCES, EINTR) finds no API: no crash, no wait",
        arguments: [SystemCall.open, .fstat, .opendir])
    func failingReads(call: SystemCall) throws {
        let root = try Root()
        try root.write("run/systemd/netif/links/7", Self.networkdLink(captivePortal: "https://networkd.example/api"))
        try root.write(
            "var/lib/dhcp/dhclient.eth1.leases",
            Self.dhclientLease(interface: "eth1", option: #"option default-url "https://dhclient.example/api";"#))
        try root.write(
            "var/lib/NetworkManager/dhclient-5c1e3f52-wlan0.lease",
            Self.dhclientLease(interface: "wlan0", option: #"option default-url "https://nm.example/api";"#))
        let faults = SystemCallFaults()
        var configuration = ConnectivityConfiguration.recommended
        configuration.captivePortalDiscovery = root.discovery
        configuration.environment.systemCalls = SystemCalls(faults: faults)
        let interfaces = [
            NetworkInterface(name: "eth0", index: 7, type: .wiredEthernet),
            NetworkInterface(name: "eth1", index: 8, type: .wiredEthernet),
            NetworkInterface(name: "wlan0", index: 9, type: .wifi),
        ]
        func found() -> [String?] {
            interfaces.map { configuration.captivePortalAPISource(for: $0)?.apiURL?.host }
        }
        let everything = ["networkd.example", "dhclient.example", "nm.example"]
        #expect(found() == everything)
        for errno in [EMFILE, EACCES, EINTR] {
            // Not `.always`: a call retried on the error would spend the rule and then
            // find the API (a failure here), rather than spin for ever.
            let rule = faults.inject(call, errno: errno, count: .times(100))
            // A failed listing hides the lease files; networkd's link file is read without one.
            #expect(
                found() == (call == .opendir ? ["networkd.example", nil, nil] : [nil, nil, nil]), "errno \(errno)")
            #expect((1..<100).contains(faults.fired(rule)), "the plan reaches discovery's \(call), never retried")
            faults.remove(rule)
            #expect(found() == everything, "read again once the fault is gone")
        }
        // An interrupted read is retried, as everywhere: the API is still found.
        let interrupted = faults.inject(.read, errno: EINTR, count: .times(3))
        #expect(found() == everything)
        #expect(faults.fired(interrupted) == 3)
    }

    @Test("only dhclient*.lease(s) files are read, and at most maximumFilesPerDirectory entries")
    func fileNamesAndLimits() throws {
        let root = try Root()
        try root.write("var/lib/dhcp/other.leases", Self.dhclientLease())
        try root.write("var/lib/NetworkManager/secret_key", Self.dhclientLease())
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) == nil)
        try root.write("var/lib/dhcp/dhclient.leases", Self.dhclientLease())
        #expect(root.discovery.discover(interfaceName: "eth0", index: 2, now: Self.now) != nil)
        for number in 0..<40 { try root.write("var/lib/dhcp/filler-\(number)", "") }
        var limited = root.discovery
        limited.maximumFilesPerDirectory = 2
        let seen = CaptivePortalDiscovery.leaseFiles(in: "\(root.path)/var/lib/dhcp", limit: 2).count
        #expect(seen <= 2)
        _ = limited.discover(interfaceName: "eth0", index: 2, now: Self.now)  // Bounded, whatever it finds.
    }

    @Test("discover(_:) maps interfaces to what was found, leaving out those with nothing")
    func discoverInterfaces() throws {
        let root = try Root()
        try root.write("run/systemd/netif/links/3", Self.networkdLink(captivePortal: "https://three.example/api"))
        let interfaces = [
            NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet),
            NetworkInterface(name: "wlan0", index: 3, type: .wifi),
        ]
        let found = root.discovery.discover(interfaces, now: Self.now)
        #expect(found.map(\.interface) == ["wlan0"])
    }

    // MARK: - Configuration

    @Test("the configured API wins; discovery off finds nothing; another namespace reads only set locations")
    func configurationSource() throws {
        let root = try Root()
        try root.write("run/systemd/netif/links/2", Self.networkdLink(captivePortal: "https://found.example/api"))
        let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
        var configuration = ConnectivityConfiguration.recommended
        configuration.captivePortalDiscovery = root.discovery
        #expect(configuration.captivePortalAPISource(for: eth0)?.format == .networkd)
        #expect(configuration.captivePortalAPISource(for: nil) == nil)

        configuration.captivePortalAPI = URL(string: "http://configured.example/api")
        let configured = try #require(configuration.captivePortalAPISource(for: eth0))
        #expect(
            configured == CaptivePortalAPISource(uri: .api(configuration.captivePortalAPI!), format: .configuration))
        #expect(configured.description == "http://configured.example/api (configuration)")

        configuration.captivePortalAPI = nil
        configuration.discoversCaptivePortalAPI = false
        #expect(configuration.captivePortalAPISource(for: eth0) == nil)

        configuration.discoversCaptivePortalAPI = true
        configuration.environment = NetworkEnvironment(networkNamespacePath: "/run/netns/elsewhere")
        #expect(configuration.captivePortalAPISource(for: eth0)?.format == .networkd, "locations set: read")
        configuration.captivePortalDiscovery = .system
        #expect(configuration.captivePortalAPISource(for: eth0) == nil, "the host's files describe the host's links")
    }

    @Test("validate() refuses discovery locations that can't work, unless discovery is off")
    func validation() throws {
        var configuration = ConnectivityConfiguration.recommended
        try configuration.validate()
        for bad in ["relative/dir", "", "/a\u{0}b"] {
            configuration.captivePortalDiscovery.root = bad
            #expect(throws: ConnectivityError.self) { try configuration.validate() }
        }
        configuration.captivePortalDiscovery = .system
        configuration.captivePortalDiscovery.maximumFileSize = 0
        #expect(throws: ConnectivityError.self) { try configuration.validate() }
        configuration.discoversCaptivePortalAPI = false
        try configuration.validate()
    }

    @Test("the source's description names the format, the file and the interface")
    func sourceDescription() {
        let source = CaptivePortalAPISource(
            uri: .unrestricted, format: .dhclient, path: "/var/lib/dhcp/dhclient.leases", interface: "eth0")
        #expect(
            source.description == "urn:ietf:params:capport:unrestricted (dhclient /var/lib/dhcp/dhclient.leases, eth0)")
    }

    // MARK: - RFC 8908 fields

    @Test("the API's answer: every RFC 8908 field, and ill-typed ones ignored")
    func apiFields() throws {
        let full = try #require(
            CaptivePortalAPIResponse(
                json: Array(
                    """
                    {"captive": true, "user-portal-url": "https://portal.example/login",
                     "venue-info-url": "https://venue.example/", "seconds-remaining": 326,
                     "bytes-remaining": 65536, "can-extend-session": true}
                    """.utf8)))
        #expect(
            full
                == CaptivePortalAPIResponse(
                    captive: true, userPortalURL: URL(string: "https://portal.example/login"),
                    venueInfoURL: URL(string: "https://venue.example/"), secondsRemaining: 326, bytesRemaining: 65536,
                    canExtendSession: true))
        let odd = try #require(
            CaptivePortalAPIResponse(
                json: Array(
                    #"{"captive": false, "bytes-remaining": -1, "can-extend-session": "yes", "seconds-remaining": 1.5}"#
                        .utf8)))
        #expect(odd.bytesRemaining == nil)
        #expect(odd.canExtendSession == nil)
        #expect(odd.secondsRemaining == nil)
        #expect(odd.captive == false)
    }
}
