import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// `InterfaceClassifier.classify` (DESIGN §3) against a fake sysfs tree.
@Suite struct ClassifierTests {
    static func link(
        _ name: String, hardwareType: UInt16 = ARPHRD.ether, kind: String? = nil, flags: UInt32 = LinkFlags.usable
    ) -> LinkMessage {
        LinkMessage(index: 3, name: name, flags: flags, hardwareType: hardwareType, operState: IFOper.up, kind: kind)
    }

    /// Classifies `link` against a fresh fake sysfs tree prepared by `prepare`.
    static func classify(_ link: LinkMessage, _ prepare: (FakeSysfs) throws -> Void = { _ in }) throws
        -> InterfaceClassification
    {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try prepare(sysfs)
        return InterfaceClassifier.classify(link, sysfs: sysfs.reader)
    }

    // MARK: - Wi-Fi

    @Test func wifiByDevtype() throws {
        let result = try Self.classify(Self.link("wlp2s0")) { try $0.interface("wlp2s0", devtype: "wlan") }
        #expect(result == InterfaceClassification(.wifi))
        #expect(!result.isVirtualPrivate)
    }

    @Test(arguments: [FakeSysfs.WirelessMarker.phy80211, .wireless])
    func wifiByWirelessDirectory(_ marker: FakeSysfs.WirelessMarker) throws {
        let result = try Self.classify(Self.link("wlan0")) { try $0.interface("wlan0", wireless: marker) }
        #expect(result == InterfaceClassification(.wifi))
    }

    @Test func plainEthernetWithoutSysfsHintsIsWired() throws {
        let result = try Self.classify(Self.link("eth0")) { try $0.interface("eth0") }
        #expect(result == InterfaceClassification(.wiredEthernet))
        // Another interface's Wi-Fi marker does not leak.
        let other = try Self.classify(Self.link("eth0")) {
            try $0.interface("wlan0", devtype: "wlan", wireless: .phy80211)
        }
        #expect(other == InterfaceClassification(.wiredEthernet))
    }

    @Test func plainEthernetWithNoSysfsAtAllIsWired() {
        let result = InterfaceClassifier.classify(Self.link("eth0"), sysfs: SysfsReader(root: nil))
        #expect(result == InterfaceClassification(.wiredEthernet))
        let missingRoot = SysfsReader(root: "/nonexistent/\(#line)")
        #expect(
            InterfaceClassifier.classify(Self.link("eth0"), sysfs: missingRoot)
                == InterfaceClassification(.wiredEthernet))
    }

    /// Facts answered from memory: classification asks, it reads nothing itself.
    struct RecordedFacts: InterfaceFacts {
        var deviceTypes: [String: String] = [:]
        var wireless: Set<String> = []
        func deviceType(of name: String) -> String? { deviceTypes[name] }
        func isWireless(_ name: String) -> Bool { wireless.contains(name) }
    }

    @Test("Classification takes its sysfs facts injected: from memory, with no file read")
    func injectedFacts() {
        let facts = RecordedFacts(deviceTypes: ["usb0": "wwan", "bnep0": "bluetooth"], wireless: ["wlan9"])
        #expect(InterfaceClassifier.classify(Self.link("usb0"), sysfs: facts) == InterfaceClassification(.cellular))
        #expect(InterfaceClassifier.classify(Self.link("wlan9"), sysfs: facts) == InterfaceClassification(.wifi))
        #expect(
            InterfaceClassifier.classify(Self.link("bnep0"), sysfs: facts)
                == InterfaceClassification(.other, tethered: true))
        #expect(
            InterfaceClassifier.classify(Self.link("wlan9"), sysfs: NoInterfaceFacts())
                == InterfaceClassification(.wiredEthernet))
    }

    // MARK: - Cellular

    @Test(arguments: [ARPHRD.ether, ARPHRD.rawIP, ARPHRD.none])
    func modemByDevtype(_ hardwareType: UInt16) throws {
        let result = try Self.classify(Self.link("usb0", hardwareType: hardwareType)) {
            try $0.interface("usb0", devtype: "wwan")
        }
        #expect(result == InterfaceClassification(.cellular))
    }

    @Test(arguments: [
        ("rmnet_data0", ARPHRD.rawIP), ("rmnet0", ARPHRD.none), ("ccmni1", ARPHRD.rawIP), ("wwan0", ARPHRD.none),
        ("wwan0", ARPHRD.ether),
    ])
    func modemByName(_ name: String, _ hardwareType: UInt16) throws {
        let result = try Self.classify(Self.link(name, hardwareType: hardwareType))
        #expect(result == InterfaceClassification(.cellular))
        #expect(
            InterfaceClassifier.classify(Self.link(name, hardwareType: hardwareType), sysfs: SysfsReader(root: nil))
                == InterfaceClassification(.cellular))
    }

    @Test(arguments: ["rmnet", "wwan", "qmi_wwan", "mhi_net"])
    func modemByKind(_ kind: String) throws {
        let result = try Self.classify(Self.link("mdm0", hardwareType: ARPHRD.rawIP, kind: kind))
        #expect(result == InterfaceClassification(.cellular))
    }

    // MARK: - VPN and tunnels

    @Test(arguments: ["wireguard", "tun", "gre", "ipip", "sit", "vti"])
    func vpnKindsAreOtherAndVirtualPrivate(_ kind: String) throws {
        let result = try Self.classify(Self.link("vpn0", hardwareType: ARPHRD.none, kind: kind))
        #expect(result == InterfaceClassification(.other, virtualPrivate: true))
    }

    /// DESIGN §3 step 2 lists vxlan and geneve among the tunnel kinds, and "tunnels … → other (VPN)";
    /// only veth/bridge/bond/vlan/macvlan are wiredEthernet.
    @Test(arguments: ["vxlan", "geneve"])
    func overlayTunnelKindsAreOtherAndVirtualPrivate(_ kind: String) throws {
        let result = try Self.classify(Self.link("flannel.1", kind: kind))
        #expect(result == InterfaceClassification(.other, virtualPrivate: true))
    }

    @Test func kindIsCaseInsensitive() throws {
        let result = try Self.classify(Self.link("wg0", hardwareType: ARPHRD.none, kind: "WireGuard"))
        #expect(result == InterfaceClassification(.other, virtualPrivate: true))
    }

    @Test(arguments: [ARPHRD.ppp, ARPHRD.none, ARPHRD.rawIP, ARPHRD.tunnel, ARPHRD.ipGRE])
    func pointToPointHardwareWithoutHintsIsOtherVirtualPrivate(_ hardwareType: UInt16) throws {
        let result = try Self.classify(Self.link("ppp0", hardwareType: hardwareType))
        #expect(result == InterfaceClassification(.other, virtualPrivate: true))
    }

    /// Bluetooth (PAN, a phone's shared connection) is tethered; PPP is a VPN-like link.
    @Test(arguments: [("bluetooth", false, true), ("ppp", true, false)])
    func otherDevtypes(_ devtype: String, _ virtualPrivate: Bool, _ tethered: Bool) throws {
        let result = try Self.classify(Self.link("bnep0")) { try $0.interface("bnep0", devtype: devtype) }
        #expect(result == InterfaceClassification(.other, virtualPrivate: virtualPrivate, tethered: tethered))
    }

    // MARK: - Ethernet-like kinds

    @Test(arguments: ["veth", "bridge", "bond", "vlan", "macvlan"])
    func ethernetKindsAreWired(_ kind: String) throws {
        let result = try Self.classify(Self.link("veth0", kind: kind))
        #expect(result == InterfaceClassification(.wiredEthernet))
    }

    /// An Ethernet-like kind says how a link is built; DEVTYPE and the wireless
    /// sysfs entries say its medium, and the medium wins.
    @Test func mediumWinsOverEthernetLikeKind() throws {
        let wifi = try Self.classify(Self.link("veth0", kind: "veth")) {
            try $0.interface("veth0", devtype: "wlan", wireless: .phy80211)
        }
        #expect(wifi == InterfaceClassification(.wifi))
        let modem = try Self.classify(Self.link("veth0", kind: "veth")) { try $0.interface("veth0", devtype: "wwan") }
        #expect(modem == InterfaceClassification(.cellular))
        let bridge = try Self.classify(Self.link("br0", kind: "bridge")) { try $0.interface("br0", devtype: "bridge") }
        #expect(bridge == InterfaceClassification(.wiredEthernet))
    }

    /// Tunnel and cellular kinds are final: sysfs can't turn them into something else.
    @Test func tunnelAndCellularKindsWinOverSysfs() throws {
        let tunnel = try Self.classify(Self.link("wg0", kind: "wireguard")) {
            try $0.interface("wg0", devtype: "wlan", wireless: .phy80211)
        }
        #expect(tunnel == InterfaceClassification(.other, virtualPrivate: true))
        let modem = try Self.classify(Self.link("wwan0", kind: "wwan")) { try $0.interface("wwan0", devtype: "wlan") }
        #expect(modem == InterfaceClassification(.cellular))
    }

    // MARK: - Loopback

    @Test func loopbackFlag() throws {
        let byFlag = try Self.classify(
            Self.link("lo", hardwareType: ARPHRD.loopback, flags: LinkFlags.usable | IFF.loopback))
        #expect(byFlag == InterfaceClassification(.loopback))
        // The loopback flag comes first, whatever else the link says.
        let odd = try Self.classify(Self.link("wwan0", kind: "veth", flags: IFF.up | IFF.loopback)) {
            try $0.interface("wwan0", devtype: "wlan")
        }
        #expect(odd == InterfaceClassification(.loopback))
    }

    // MARK: - Sysfs reading

    @Test func devtypeIsReadFromAMultiLineUevent() throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try sysfs.interface("wlan0", devtype: "wlan")
        #expect(sysfs.reader.deviceType(of: "wlan0") == "wlan")
        #expect(sysfs.reader.deviceType(of: "eth0") == nil)
        try sysfs.interface("eth0")
        #expect(sysfs.reader.deviceType(of: "eth0") == nil)
        #expect(!sysfs.reader.isWireless("wlan0"))
    }

    @Test("A FIFO or a device as uevent: no DEVTYPE, no wait, not a byte read")
    func ueventFIFO() throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try sysfs.interface("usb0", devtype: "wwan")
        try sysfs.interface("usb1", devtype: "wwan")
        let fifo = ScratchFiles.fifo(at: sysfs.root.appendingPathComponent("class/net/usb0/uevent").path)
        let zero = sysfs.root.appendingPathComponent("class/net/usb1/uevent").path
        try FileManager.default.removeItem(atPath: zero)
        try FileManager.default.createSymbolicLink(atPath: zero, withDestinationPath: "/dev/zero")
        let faults = SystemCallFaults()
        let reader = SysfsReader(root: sysfs.root.path, systemCalls: SystemCalls(faults: faults))
        // Every read of the FIFO is made within the deadline (one that waits is let go).
        let found = ScratchFiles.result(releasing: [fifo]) {
            ["usb0", "usb1"].map { reader.deviceType(of: $0) ?? "none" }
        }
        #expect(found == ["none", "none"], "nil: the read waited on the FIFO")
        let classified = ScratchFiles.result(releasing: [fifo]) {
            InterfaceClassifier.classify(Self.link("usb0"), sysfs: reader)
        }
        #expect(classified == InterfaceClassification(.wiredEthernet))
        #expect(faults.attempts(.read) == 0)
    }

    @Test("A uevent over 4 KiB: its first 4096 bytes are read, a DEVTYPE line past them is not seen")
    func ueventOver4KiB() throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        /// `INTERFACE=NAME` padded to `offset` bytes, then `DEVTYPE=wwan` and 8 KiB more.
        func uevent(_ name: String, devtypeAt offset: Int) throws {
            try sysfs.interface(name)
            var text = "INTERFACE=\(name)\nX="
            text += String(repeating: "x", count: offset - text.utf8.count - 1) + "\n"
            text += "DEVTYPE=wwan\n" + String(repeating: "Y=y\n", count: 2048)
            try Data(text.utf8).write(to: sysfs.root.appendingPathComponent("class/net/\(name)/uevent"))
        }
        let line = "DEVTYPE=wwan\n".utf8.count
        try uevent("ends", devtypeAt: 4096 - line)  // its newline is byte 4096
        try uevent("past", devtypeAt: 4096)  // starts right after byte 4096
        try uevent("far", devtypeAt: 1 << 20)
        #expect(sysfs.reader.deviceType(of: "ends") == "wwan")
        #expect(sysfs.reader.deviceType(of: "past") == nil)
        #expect(sysfs.reader.deviceType(of: "far") == nil)
        #expect(
            InterfaceClassifier.classify(Self.link("ends"), sysfs: sysfs.reader) == InterfaceClassification(.cellular))
        #expect(
            InterfaceClassifier.classify(Self.link("past"), sysfs: sysfs.reader)
                == InterfaceClassification(.wiredEthernet))
    }

    @Test(arguments: ["../x", "..", ".", "", "a/../../x", "x/", "/x", "../../class/x", "x\0"])
    func namesCannotEscapeTheRoot(_ name: String) throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        // Wi-Fi markers placed where a traversing name would land.
        try sysfs.directory("class/x", devtype: "wlan", interfaceName: "x", wireless: .phy80211)
        try sysfs.directory("x", devtype: "wlan", interfaceName: "x", wireless: .wireless)
        try sysfs.directory("class/net", devtype: "wlan", interfaceName: "net", wireless: .phy80211)
        try sysfs.directory("class", devtype: "wlan", interfaceName: "class", wireless: .phy80211)
        try sysfs.directory("", devtype: "wlan", interfaceName: "root", wireless: .wireless)
        try sysfs.directory("class/net/x", devtype: "wlan", interfaceName: "x", wireless: .phy80211)

        #expect(sysfs.reader.deviceType(of: name) == nil)
        #expect(!sysfs.reader.isWireless(name))
        let result = InterfaceClassifier.classify(Self.link(name), sysfs: sysfs.reader)
        #expect(result == InterfaceClassification(.wiredEthernet))
    }
}
