import Foundation
import Reachability

@_spi(Testing) @testable import ReachabilityCore

/// A throwaway directory laid out like `/sys` (`class/net/IF/uevent`,
/// `class/net/IF/phy80211`), for classification tests. Call `remove()` when done.
struct FakeSysfs {
    enum WirelessMarker: String {
        case phy80211, wireless
    }

    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("fake-sysfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("class/net"), withIntermediateDirectories: true)
    }

    var reader: SysfsReader { SysfsReader(root: root.path) }

    /// Adds `class/net/NAME/` with a udev-style `uevent` and, optionally, a wireless marker directory.
    @discardableResult
    func interface(_ name: String, index: Int = 3, devtype: String? = nil, wireless: WirelessMarker? = nil) throws
        -> FakeSysfs
    {
        try directory("class/net/\(name)", devtype: devtype, interfaceName: name, index: index, wireless: wireless)
        return self
    }

    /// Writes a device directory at `relativePath` (which may lie outside `class/net`).
    func directory(
        _ relativePath: String, devtype: String?, interfaceName: String, index: Int = 3,
        wireless: WirelessMarker? = nil
    ) throws {
        let directory = root.appendingPathComponent(relativePath)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var uevent = "INTERFACE=\(interfaceName)\nIFINDEX=\(index)\n"
        if let devtype { uevent += "DEVTYPE=\(devtype)\n" }
        try Data(uevent.utf8).write(to: directory.appendingPathComponent("uevent"))
        if let wireless {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(wireless.rawValue), withIntermediateDirectories: true)
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }
}
