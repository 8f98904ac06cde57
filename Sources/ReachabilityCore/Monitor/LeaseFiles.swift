import Glibc

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

    /// Whether the lease of interface `name` (index `index`) says metered. `now`
    /// (seconds since the epoch) decides which dhclient leases expired.
    func isMetered(interface name: String, index: Int32, now: Int = time(nil)) -> Bool {
        !metered([(name, index)], now: now).isEmpty
    }

    /// The indices of `links` whose lease says metered, reading each dhclient lease
    /// file at most once for all of them.
    func metered(_ links: [(name: String, index: Int32)], now: Int = time(nil)) -> Set<Int32> {
        var result = Set<Int32>()
        var pending: [(name: String, index: Int32)] = []
        for link in links {
            if let text = readSmallFile(path("\(Self.networkdDirectory)/\(link.index)"), limit: Self.fileLimit),
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
            guard let text = readSmallFile(file, limit: Self.fileLimit) else { continue }
            pending = pending.filter { link in
                guard let block = Self.lastBlock(in: text, interface: link.name) else { return true }
                if Self.expiry(of: block).map({ $0 > now }) ?? true, Self.dhclientSaysMetered(block) {
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
            || (name.hasPrefix("dhclient") && (name.hasSuffix(".leases") || name.hasSuffix(".lease")))
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

    /// One dhclient lease block's text: its vendor-encapsulated-options, quoted or hex.
    static func dhclientSaysMetered(_ block: Substring) -> Bool {
        for line in block.split(whereSeparator: \.isNewline) {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            let key = "option vendor-encapsulated-options "
            guard trimmed.hasPrefix(key) else { continue }
            var value = trimmed.dropFirst(key.count)
            if let semicolon = value.lastIndex(of: ";") { value = value[..<semicolon] }
            if value.hasPrefix("\"") { return containsMarker(Array(value.utf8)) }
            return decodeHex(value.filter { $0 != ":" }[...]).map(containsMarker) ?? false
        }
        return false
    }

    /// The dhclient lease files, most recently changed first.
    func dhclientFiles() -> [String] {
        var files: [(path: String, modified: Int)] = []
        for directory in Self.dhclientDirectories.map({ path($0) }) {
            guard let stream = opendir(directory) else { continue }
            defer { closedir(stream) }
            var seen = 0
            while let entry = readdir(stream), seen < Self.entryLimit {
                seen += 1
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard name.hasPrefix("dhclient"), name.hasSuffix(".leases") || name.hasSuffix(".lease") else {
                    continue
                }
                var info = stat()
                let full = directory + "/" + name
                guard stat(full, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                files.append((full, info.st_mtim.tv_sec))
            }
        }
        return files.sorted(by: { $0.modified > $1.modified }).map(\.path)
    }

    /// The last `lease { … }` block of `text` whose `interface` is `name`.
    static func lastBlock(in text: String, interface name: String) -> Substring? {
        var found: Substring?
        var rest = text[...]
        while let start = rest.firstRange(of: "lease {") {
            let body = rest[start.upperBound...]
            guard let end = body.firstIndex(of: "}") else { break }
            let block = body[..<end]
            if block.contains("interface \"\(name)\";") { found = block }
            rest = body[body.index(after: end)...]
        }
        return found
    }

    /// A block's `expire W YYYY/MM/DD HH:MM:SS;` (UTC) as seconds since the epoch;
    /// nil for `expire never;` or none.
    static func expiry(of block: Substring) -> Int? {
        for line in block.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ";" })
            guard words.count >= 4, words[0] == "expire" else { continue }
            // Parsed as small numbers in range, never as arbitrary Int32s: a hostile
            // `expire 1 -2147483648/…` must not trap on `- 1900`.
            let date = words[2].split(separator: "/").map { $0.count <= 4 ? Int($0) : nil }
            let clock = words[3].split(separator: ":").map { $0.count <= 2 ? Int($0) : nil }
            guard date.count == 3, clock.count == 3, let year = date[0], let month = date[1], let day = date[2],
                let hour = clock[0], let minute = clock[1], let second = clock[2],
                (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
                (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
            else { return nil }
            var parts = tm()
            parts.tm_year = Int32(year - 1900)
            parts.tm_mon = Int32(month - 1)
            parts.tm_mday = Int32(day)
            parts.tm_hour = Int32(hour)
            parts.tm_min = Int32(minute)
            parts.tm_sec = Int32(second)
            return Int(timegm(&parts))
        }
        return nil
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
