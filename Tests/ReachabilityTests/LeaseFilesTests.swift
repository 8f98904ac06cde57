import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// Reading Android's `ANDROID_METERED` (DHCP option 43) from the lease files
/// systemd-networkd and dhclient write, and the tethering classification.
@Suite struct LeaseFilesTests {
    static let meteredHex = "414e44524f49445f4d455445524544"  // "ANDROID_METERED"

    /// A lease root with the given files (relative path → contents).
    static func root(_ files: [String: String]) throws -> String {
        let root = NSTemporaryDirectory() + "rtest-leases-\(UUID().uuidString)"
        for (relative, contents) in files {
            let path = root + "/" + relative
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try contents.write(toFile: path, atomically: true, encoding: .utf8)
        }
        return root
    }

    /// The expiry of `expire WORDS;` (dhclient's lease syntax), via the shared reader.
    static func expiry(_ words: String) -> Int? {
        var tokens = DHCPTokens(Array(words.utf8))
        var list: [DHCPTokens.Token] = []
        while let token = tokens.next() { list.append(token) }
        return DHCPLeaseFile.expiry(list)
    }

    static func block(_ interface: String, vendor: String?, expire: String = "never") -> String {
        """
        lease {
          interface "\(interface)";
          fixed-address 192.0.2.16;
          option routers 192.0.2.1;
        \(vendor.map { "  option vendor-encapsulated-options \($0);\n" } ?? "")  expire \(expire);
        }

        """
    }

    @Test("systemd-networkd: VENDOR_SPECIFIC= (key=value) and \"Vendor_Specific\" (JSON), by index")
    func networkd() throws {
        let root = try Self.root([
            "run/systemd/netif/leases/3":
                "# This is private data.\nADDRESS=192.0.2.16\nVENDOR_SPECIFIC=\(Self.meteredHex)\n",
            "run/systemd/netif/leases/4":
                "{\n  \"Address\": [192,0,2,17],\n  \"Vendor_Specific\": \"\(Self.meteredHex)\"\n}\n",
            "run/systemd/netif/leases/5": "ADDRESS=192.0.2.18\nVENDOR_SPECIFIC=0102030405\n",
            "run/systemd/netif/leases/6": "VENDOR_SPECIFIC=414e44524f49445f4d4554455245\n",  // cut short
            "run/systemd/netif/leases/7": "VENDOR_SPECIFIC=zz\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let leases = LeaseFiles(root: root)
        #expect(leases.isMetered(interface: "eth0", index: 3))
        #expect(leases.isMetered(interface: "eth0", index: 4))
        #expect(!leases.isMetered(interface: "eth0", index: 5))
        #expect(!leases.isMetered(interface: "eth0", index: 6))
        #expect(!leases.isMetered(interface: "eth0", index: 7))
        #expect(!leases.isMetered(interface: "eth0", index: 8), "no file")
    }

    @Test("dhclient: the newest lease block of the interface, quoted or hex; expired leases don't count")
    func dhclient() throws {
        let now = 1_790_000_000  // 2026-09-21
        let root = try Self.root([
            "var/lib/dhcp/dhclient.leases": Self.block("wlan0", vendor: "\"ANDROID_METERED\"")
                + Self.block("eth0", vendor: "\"ANDROID_METERED\"") + Self.block("eth0", vendor: nil),
            "var/lib/dhclient/dhclient-usb0.lease": Self.block(
                "usb0", vendor: "41:4e:44:52:4f:49:44:5f:4d:45:54:45:52:45:44"),
            "var/lib/NetworkManager/dhclient-uuid-wlan1.lease": Self.block(
                "wlan1", vendor: "\"ANDROID_METERED\"", expire: "1 2026/01/05 10:00:00"),
            "var/lib/dhcp/other.leases": Self.block("eth9", vendor: "\"ANDROID_METERED\""),
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let leases = LeaseFiles(root: root)
        #expect(leases.isMetered(interface: "wlan0", index: 90, now: now))
        #expect(!leases.isMetered(interface: "eth0", index: 91, now: now), "its newest lease has no option 43")
        #expect(leases.isMetered(interface: "usb0", index: 92, now: now), "the hex form")
        #expect(!leases.isMetered(interface: "wlan1", index: 93, now: now), "expired")
        #expect(!leases.isMetered(interface: "eth9", index: 94, now: now), "not a dhclient* file")
        #expect(Self.expiry("1 2026/01/05 10:00:00") == 1_767_607_200)
        #expect(Self.expiry("epoch 1767607200") == 1_767_607_200)
        #expect(Self.expiry("never") == nil)
    }

    @Test("garbage, truncation and odd bytes: never metered, never a crash")
    func badInput() throws {
        let garbage = String(decoding: (0..<20000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }, as: UTF8.self)
        let root = try Self.root([
            "var/lib/dhcp/dhclient.leases": "lease { interface \"eth0\"; option vendor-encapsulated-options \"ANDR",
            "var/lib/dhcp/dhclient.eth1.leases": garbage,
            "run/systemd/netif/leases/1": garbage,
            "run/systemd/netif/leases/2": "VENDOR_SPECIFIC=" + String(repeating: "41", count: 5000) + "\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let leases = LeaseFiles(root: root)
        for (name, index) in [("eth0", Int32(1)), ("eth1", 2), ("eth2", 3)] {
            #expect(!leases.isMetered(interface: name, index: index))
        }
        // Hostile dates: never a trap, never an expiry.
        for date in [
            "1 -2147483648/01/01 00:00:00", "1 2147483647/13/40 99:99:99", "1 2026/0/1 00:00:00", "x y z w",
            "1 2026/02/30 00:00:00", "epoch 99999999999999999999999",
        ] {
            #expect(Self.expiry(date) == nil, "\(date)")
        }
        let hostile = try Self.root([
            "var/lib/dhcp/dhclient.leases": Self.block(
                "eth5", vendor: "\"ANDROID_METERED\"", expire: "1 -2147483648/01/01 00:00:00")
        ])
        defer { try? FileManager.default.removeItem(atPath: hostile) }
        #expect(LeaseFiles(root: hostile).isMetered(interface: "eth5", index: 5), "an unreadable expiry is no expiry")
        #expect(LeaseFiles.isLeaseFileName("3") && LeaseFiles.isLeaseFileName("dhclient.eth0.leases"))
        #expect(LeaseFiles.isLeaseFileName("dhclient-uuid-wlan0.lease"))
        #expect(!LeaseFiles.isLeaseFileName("timestamps") && !LeaseFiles.isLeaseFileName(".#3abc"))
        #expect(LeaseFiles.decodeHex("4"[...]) == nil)
        #expect(LeaseFiles.decodeHex("4G"[...]) == nil)
        #expect(LeaseFiles.decodeHex("4a4B"[...]) == [0x4a, 0x4b])
    }

    @Test("A lease file over 1 MiB is not read at all, though its start says metered; one of exactly 1 MiB is")
    func oversized() throws {
        let lease = Self.block("eth0", vendor: "\"ANDROID_METERED\"")
        let networkd = "VENDOR_SPECIFIC=\(Self.meteredHex)\n"
        func padded(_ text: String, to size: Int) -> String {
            text + String(repeating: "#", count: size - text.utf8.count - 1) + "\n"
        }
        let big = try Self.root([
            "var/lib/dhcp/dhclient.leases": padded(lease, to: 2_000_144),
            "run/systemd/netif/leases/4": padded(networkd, to: LeaseFiles.fileLimit + 1),
        ])
        defer { try? FileManager.default.removeItem(atPath: big) }
        #expect(!LeaseFiles(root: big).isMetered(interface: "eth0", index: 3), "2,000,144 bytes: skipped")
        #expect(!LeaseFiles(root: big).isMetered(interface: "eth1", index: 4), "1 MiB + 1 byte: skipped")
        let fits = try Self.root([
            "var/lib/dhcp/dhclient.leases": padded(lease, to: LeaseFiles.fileLimit),
            "run/systemd/netif/leases/4": padded(networkd, to: LeaseFiles.fileLimit),
        ])
        defer { try? FileManager.default.removeItem(atPath: fits) }
        #expect(LeaseFiles(root: fits).isMetered(interface: "eth0", index: 3))
        #expect(LeaseFiles(root: fits).isMetered(interface: "eth1", index: 4))
    }

    @Test("A FIFO or a device in a lease file's place is no lease: no wait, not a byte read")
    func fifoOrDeviceInPlace() throws {
        let networkd = "VENDOR_SPECIFIC=\(Self.meteredHex)\n"
        let root = try Self.root([:])
        defer { try? FileManager.default.removeItem(atPath: root) }
        for directory in ["run/systemd/netif/leases", "var/lib/dhcp", "var/lib/NetworkManager"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        // FIFOs nothing writes to: an open without O_NONBLOCK would wait for ever.
        let silent = [
            "run/systemd/netif/leases/3", "var/lib/dhcp/dhclient.eth3.leases",
        ].map { ScratchFiles.fifo(at: root + "/" + $0) }
        // A FIFO a writer holds open with a metered lease in it: what a read would take.
        let fed = ScratchFiles.fifo(at: root + "/run/systemd/netif/leases/4")
        let writer = open(fed, O_RDWR | O_CLOEXEC)
        #expect(writer >= 0)
        defer { close(writer) }
        #expect(networkd.withCString { write(writer, $0, strlen($0)) } == networkd.utf8.count)
        // Devices: /dev/zero never ends, /dev/null is empty.
        for (relative, device) in [
            ("run/systemd/netif/leases/5", "/dev/zero"), ("var/lib/dhcp/dhclient.eth5.leases", "/dev/zero"),
            ("run/systemd/netif/leases/6", "/dev/null"), ("var/lib/NetworkManager/dhclient-u-eth6.lease", "/dev/null"),
        ] {
            try FileManager.default.createSymbolicLink(atPath: root + "/" + relative, withDestinationPath: device)
        }
        let faults = SystemCallFaults()
        let leases = LeaseFiles(root: root, systemCalls: SystemCalls(faults: faults))
        let links: [(name: String, index: Int32)] = [("eth3", 3), ("eth4", 4), ("eth5", 5), ("eth6", 6)]
        let metered = ScratchFiles.result(releasing: silent + [fed]) { leases.metered(links) }
        #expect(metered == [], "nil: the read waited on a FIFO")
        #expect(faults.attempts(.read) == 0, "no FIFO or device is read")

        // The same reader takes a regular file in their place (the silent FIFOs stay:
        // eth3's are not asked for again, as a read of them outside the deadline could wait).
        try FileManager.default.removeItem(atPath: root + "/run/systemd/netif/leases/4")
        try networkd.write(toFile: root + "/run/systemd/netif/leases/4", atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: root + "/var/lib/dhcp/dhclient.eth5.leases")
        try Self.block("eth5", vendor: "\"ANDROID_METERED\"").write(
            toFile: root + "/var/lib/dhcp/dhclient.eth5.leases", atomically: true, encoding: .utf8)
        #expect(leases.metered([("eth4", 4), ("eth5", 5)]) == [4, 5])
    }

    @Test("tethering: RNDIS and ipheth drivers and Bluetooth PAN are tethered; a plain Ethernet adapter isn't")
    func tethering() {
        struct Facts: InterfaceFacts {
            var devtypes: [String: String] = [:]
            var drivers: [String: String] = [:]
            func deviceType(of name: String) -> String? { devtypes[name] }
            func isWireless(_ name: String) -> Bool { false }
            func driver(of name: String) -> String? { drivers[name] }
        }
        let facts = Facts(
            devtypes: ["bnep0": "bluetooth"],
            drivers: ["usb0": "rndis_host", "eth1": "ipheth", "eth2": "cdc_ncm", "eth0": "e1000e"])
        func link(_ name: String) -> LinkMessage {
            LinkMessage(index: 5, name: name, flags: IFF.up, hardwareType: ARPHRD.ether, operState: 6)
        }
        let classes = ["usb0", "eth1", "bnep0", "eth2", "eth0"].map {
            InterfaceClassifier.classify(link($0), sysfs: facts)
        }
        #expect(classes.map(\.isTethered) == [true, true, true, false, false])
        #expect(classes[0].type == .wiredEthernet && classes[2].type == .other)
        // A VPN is never tethered, whatever its driver.
        var vpn = link("tun0")
        vpn.kind = "tun"
        #expect(!InterfaceClassifier.classify(vpn, sysfs: Facts(drivers: ["tun0": "rndis_host"])).isTethered)
    }
}

extension LeaseFiles {
    /// Whether the lease of one interface says metered (``metered(_:now:)`` for one link).
    func isMetered(interface name: String, index: Int32, now: Int = time(nil)) -> Bool {
        !metered([(name, index)], now: now).isEmpty
    }
}
