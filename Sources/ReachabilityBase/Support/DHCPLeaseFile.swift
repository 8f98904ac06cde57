import Glibc
@_spi(Testing) package import ReachabilitySystem

/// dhclient's lease files (ISC dhclient, and NetworkManager's dhclient backend): the
/// `lease { … }` blocks, read with a tokenizer of dhclient's own language, for
/// every reader of them (captive-portal discovery, `ANDROID_METERED`).
package enum DHCPLeaseFile {
    /// One `lease { … }` block.
    package struct Lease: Equatable, Sendable {
        /// `interface "NAME";`.
        package var interface: String?
        /// Each `option NAME VALUE;` in block order: a quoted value's bytes, or
        /// colon-separated hex as bytes (other values are left out).
        package var options: [(name: String, value: [UInt8])] = []
        /// The words of `expire …;` (`never`, `epoch N`, `W YYYY/MM/DD HH:MM:SS`).
        package var expire: [DHCPTokens.Token]?

        /// The last value of any of `names`.
        package func option(_ names: Set<String>) -> [UInt8]? {
            options.last { names.contains($0.name) }?.value
        }

        package static func == (lhs: Lease, rhs: Lease) -> Bool {
            lhs.interface == rhs.interface && lhs.expire == rhs.expire
                && lhs.options.map(\.name) == rhs.options.map(\.name)
                && lhs.options.map(\.value) == rhs.options.map(\.value)
        }
    }

    /// The IPv4 `lease { … }` blocks of a lease file, in file order. A file that
    /// stops making sense (an unterminated string, a stray brace) yields the leases
    /// completed before that point.
    package static func leases(_ bytes: [UInt8]) -> [Lease] {
        var tokens = DHCPTokens(bytes)
        var leases: [Lease] = []
        var depth = 0
        var current: Lease?
        var statement: [DHCPTokens.Token] = []
        while let token = tokens.next() {
            switch token {
            case .open:
                if depth == 0 {
                    current = statement.count == 1 && statement[0] == .word("lease") ? Lease() : nil
                }
                depth += 1
                statement = []
            case .close:
                guard depth > 0 else { return leases }
                depth -= 1
                if depth == 0, let lease = current { leases.append(lease) }
                if depth == 0 { current = nil }
                statement = []
            case .semicolon:
                if depth == 1, current != nil { apply(statement, to: &current!) }
                statement = []
            case .word, .string:
                // A statement longer than any dhclient writes is garbage: drop it.
                if statement.count < 64 { statement.append(token) }
            case .invalid:
                return leases
            }
        }
        return leases
    }

    private static func apply(_ statement: [DHCPTokens.Token], to lease: inout Lease) {
        guard case .word(let keyword)? = statement.first else { return }
        switch keyword {
        case "interface":
            if statement.count == 2, case .string(let name) = statement[1] {
                lease.interface = String(decoding: name, as: UTF8.self)
            }
        case "option":
            guard statement.count == 3, case .word(let name) = statement[1] else { return }
            switch statement[2] {
            case .string(let value): lease.options.append((name, value))
            case .word(let hex): if let value = hexBytes(hex) { lease.options.append((name, value)) }
            default: break
            }
        case "expire":
            lease.expire = Array(statement.dropFirst())
        default: break
        }
    }

    /// The names of dhclient's lease files in `directory` (`dhclient*.leases`,
    /// `dhclient*.lease`), from its first `limit` entries, sorted; none when the
    /// directory can't be read. Listed through `systemCalls` (the live system for
    /// callers outside the core, which have no environment's to give).
    package static func fileNames(in directory: String, limit: Int, systemCalls: SystemCalls = .live) -> [String] {
        guard !directory.utf8.contains(0),
            case .success(let entries) = systemCalls.directoryEntries(directory, limit: limit)
        else { return [] }
        return entries.filter(isFileName).sorted()
    }

    /// Whether dhclient (or NetworkManager's dhclient backend) writes its leases
    /// under this name.
    package static func isFileName(_ name: String) -> Bool {
        name.hasPrefix("dhclient") && (name.hasSuffix(".leases") || name.hasSuffix(".lease"))
    }

    /// `68:74:74:70` as bytes; nil unless it is colon-separated hex pairs (or single digits).
    package static func hexBytes(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        for part in text.split(separator: ":", omittingEmptySubsequences: false) {
            guard (1...2).contains(part.count), let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// dhclient's `expire` forms as seconds since the epoch: `epoch SECONDS`, and
    /// `WEEKDAY YYYY/MM/DD HH:MM:SS` (UTC, a real calendar date); nil for `never`
    /// and anything else (taken as not expired). Numbers are read in range, never as
    /// arbitrary integers: a hostile date can't trap.
    package static func expiry(_ words: [DHCPTokens.Token]) -> Int? {
        let texts = words.compactMap { token -> String? in
            if case .word(let text) = token { return text }
            return nil
        }
        guard texts.count == words.count else { return nil }
        if texts.count == 2, texts[0] == "epoch", texts[1].count <= 18, let seconds = Int(texts[1]) { return seconds }
        guard texts.count == 3 else { return nil }
        let date = texts[1].split(separator: "/", omittingEmptySubsequences: false).map {
            $0.count <= 4 ? Int($0) : nil
        }
        let time = texts[2].split(separator: ":", omittingEmptySubsequences: false).map {
            $0.count <= 2 ? Int($0) : nil
        }
        guard date.count == 3, time.count == 3, let year = date[0], let month = date[1], let day = date[2],
            let hour = time[0], let minute = time[1], let second = time[2],
            (1970...9999).contains(year), (1...12).contains(month), (0...23).contains(hour),
            (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Int(timegm(&parts))
    }
}

/// The tokens of dhclient's configuration language, as its lease files use it:
/// words, `"strings"` (with `\"`, `\\` and `\ooo` escapes), `{`, `}`, `;`, and
/// `#` comments to the end of the line.
package struct DHCPTokens {
    package enum Token: Equatable, Sendable {
        case word(String)
        case string([UInt8])
        case open
        case close
        case semicolon
        /// An unterminated string, or a word or string too long to be real.
        case invalid
    }

    private let bytes: [UInt8]
    private var index = 0
    /// The longest word or string taken (a URI is at most 8 KiB; escapes quadruple it).
    package static let tokenLimit = 4 * 8192

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package mutating func next() -> Token? {
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            case UInt8(ascii: "#"):
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "{"):
                index += 1
                return .open
            case UInt8(ascii: "}"):
                index += 1
                return .close
            case UInt8(ascii: ";"):
                index += 1
                return .semicolon
            case UInt8(ascii: "\""):
                return string()
            default:
                let start = index
                while index < bytes.count, !Self.delimiters.contains(bytes[index]) { index += 1 }
                guard index - start <= Self.tokenLimit else { return .invalid }
                return .word(String(decoding: bytes[start..<index], as: UTF8.self))
            }
        }
        return nil
    }

    private static let delimiters: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D, 0x22, 0x23, 0x3B, 0x7B, 0x7D]

    private mutating func string() -> Token {
        index += 1  // The opening quote.
        var value: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return .string(value)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return .invalid }
                let octal = bytes[index..<min(index + 3, bytes.count)]
                if octal.count == 3, octal.allSatisfy({ (0x30...0x37).contains($0) }) {
                    let number = octal.reduce(0) { $0 * 8 + Int($1 - 0x30) }
                    guard number <= 0xFF else { return .invalid }
                    value.append(UInt8(number))
                    index += 3
                } else {
                    value.append(bytes[index])
                    index += 1
                }
            default:
                value.append(byte)
            }
            guard value.count <= Self.tokenLimit else { return .invalid }
        }
        return .invalid
    }
}
