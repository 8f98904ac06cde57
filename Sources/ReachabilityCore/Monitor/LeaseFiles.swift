import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Reads the DHCP leases the host's clients recorded, for one fact: whether the
/// network said it is metered with Android's `ANDROID_METERED` in DHCP option 43
/// (vendor-specific information), as an Android or iOS hotspot does. Android and
/// NetworkManager treat such a network as metered.
///
/// - systemd-networkd: `run/systemd/netif/leases/IFINDEX`, `VENDOR_SPECIFIC=HEX`
///   (the key=value format) or `"Vendor_Specific": "HEX"` (the JSON one).
/// - dhclient (and NetworkManager's dhclient backend): `var/lib/dhcp`,
///   `var/lib/dhclient`, `var/lib/NetworkManager`, files named `dhclient*.lease(s)`;
///   the newest unexpired `lease { interface "IF"; … }` block, its `option
///   vendor-encapsulated-options "…";` (or the colon-separated hex form).
///
/// Bounded: files over 1 MiB, more than 256 directory entries, and anything but
/// regular files are not read. Pure apart from the reads; a missing directory is no lease.
struct LeaseFiles: Sendable, Hashable {
    /// The root the paths above are under (`/` for the host).
    var root: String
    /// What the files are read through (the environment's).
    var systemCalls: SystemCalls = .live

    static let marker = Array("ANDROID_METERED".utf8)
    static let fileLimit = 1 << 20
    static let entryLimit = 256
    static let dhclientDirectories = ["var/lib/dhcp", "var/lib/dhclient", "var/lib/NetworkManager"]
    static let networkdDirectory = "run/systemd/netif/leases"

    /// The directories whose changes can change an answer.
    var directories: [String] {
        ([Self.networkdDirectory] + Self.dhclientDirectories).map { path($0) }
    }

    private func path(_ relative: String) -> String {
        root.hasSuffix("/") ? root + relative : root + "/" + relative
    }

    /// The indices of `links` whose lease says metered, reading each dhclient lease
    /// file at most once for all of them.
    func metered(_ links: [(name: String, index: Int32)], now: Int = time(nil)) -> Set<Int32> {
        var result = Set<Int32>()
        var pending: [(name: String, index: Int32)] = []
        for link in links {
            if let text = readSmallFile(
                path("\(Self.networkdDirectory)/\(link.index)"), limit: Self.fileLimit, wholeOrNothing: true,
                systemCalls: systemCalls),
                Self.networkdSaysMetered(text)
            {
                result.insert(link.index)
            } else {
                pending.append(link)
            }
        }
        guard !pending.isEmpty else { return result }
        // Newest file first; an interface's lease is its last block in the first
        // file that has one.
        for file in dhclientFiles() where !pending.isEmpty {
            guard let text = readSmallFile(file, limit: Self.fileLimit, wholeOrNothing: true, systemCalls: systemCalls)
            else { continue }
            let leases = DHCPLeaseFile.leases(Array(text.utf8))
            pending = pending.filter { link in
                guard let lease = leases.last(where: { $0.interface == link.name }) else { return true }
                let unexpired = lease.expire.flatMap(DHCPLeaseFile.expiry).map { $0 > now } ?? true
                if unexpired, let value = lease.option(["vendor-encapsulated-options"]), Self.containsMarker(value) {
                    result.insert(link.index)
                }
                return false
            }
        }
        return result
    }

    /// Whether a file of that name in a lease directory can hold a lease: networkd's
    /// (an interface index) or dhclient's.
    static func isLeaseFileName(_ name: String) -> Bool {
        (!name.isEmpty && name.utf8.allSatisfy { (0x30...0x39).contains($0) })
            || DHCPLeaseFile.isFileName(name)
    }

    /// networkd's lease text: the vendor-specific option in hex, either format.
    static func networkdSaysMetered(_ text: String) -> Bool {
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.hasPrefix("VENDOR_SPECIFIC=") {
                return decodeHex(trimmed.dropFirst("VENDOR_SPECIFIC=".count)).map(containsMarker) ?? false
            }
            if trimmed.hasPrefix("\"Vendor_Specific\"") {
                let value = trimmed.drop { $0 != ":" }.dropFirst().drop { $0 == " " || $0 == "\"" }
                return decodeHex(value.prefix { $0 != "\"" }).map(containsMarker) ?? false
            }
        }
        return false
    }

    /// The dhclient lease files, most recently changed first.
    func dhclientFiles() -> [String] {
        var files: [(path: String, modified: Int)] = []
        for directory in Self.dhclientDirectories.map({ path($0) }) {
            for name in DHCPLeaseFile.fileNames(in: directory, limit: Self.entryLimit, systemCalls: systemCalls) {
                let full = directory + "/" + name
                guard case .success(let status) = systemCalls.stat(full), status.isRegularFile else { continue }
                files.append((full, status.modifiedSeconds))
            }
        }
        return files.sorted(by: { $0.modified > $1.modified }).map(\.path)
    }

    static func containsMarker(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= marker.count else { return false }
        return (0...(bytes.count - marker.count)).contains { start in
            bytes[start..<(start + marker.count)].elementsEqual(marker)
        }
    }

    /// Even-length hex (upper or lower case) as bytes; nil for anything else.
    static func decodeHex(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 2 * 255 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x41...0x46: digit - 0x41 + 10
            case 0x61...0x66: digit - 0x61 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
