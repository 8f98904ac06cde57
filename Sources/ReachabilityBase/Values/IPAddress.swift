import Glibc
@_spi(Testing) import ReachabilitySystem

/// An IPv4 or IPv6 address, parsed strictly.
///
/// Only the standard literal forms are accepted: dotted-quad IPv4 with four
/// decimal parts (`"1.2.3"` and `"0x7f.1"` are rejected, unlike `inet_aton`) and
/// RFC 4291 IPv6, optionally with a zone (`"fe80::1%eth0"` or `"fe80::1%2"`). A
/// zone names an interface of the process's own network namespace.
///
/// `Sendable`: a plain value.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: String, Sendable, Hashable {
        /// IPv4 (`AF_INET`) or IPv6 (`AF_INET6`).
        case ipv4, ipv6

        /// Hashes which family, not its name: `RawRepresentable`'s hash would hash the
        /// `String` raw value, a string hash in every set or dictionary operation on
        /// an address.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(self == .ipv4)
        }
    }

    /// The family of this address.
    public let family: Family
    /// The IPv6 zone (interface index), 0 when none.
    public let scopeID: UInt32
    // Network byte order: IPv4 in the high 4 bytes of `high`; IPv6 across both.
    private let high: UInt64
    private let low: UInt64

    /// Parses an address literal, throwing ``ReachabilityError/Code/invalidAddress``
    /// with the input in the message when it is not one: empty or over 64 bytes, a
    /// NUL byte, an octet over 255, leading or trailing spaces, a zone on an IPv4
    /// or a non-link-local IPv6 address, or a zone that names no interface.
    /// `"::ffff:192.0.2.1"` is an IPv6 (IPv4-mapped) address.
    public init(_ string: String) throws(ReachabilityError) {
        guard !string.isEmpty else {
            throw ReachabilityError(.invalidAddress, "\"\" is not an IP address: the string is empty")
        }
        guard string.utf8.count <= 64, !string.utf8.contains(0) else {
            throw ReachabilityError(
                .invalidAddress, "\(quotedForMessage(string)) is not an IPv4 or IPv6 address literal")
        }
        if let v4 = Self.parse(string, family: AF_INET, size: 4) {
            self.init(validBytes: v4, scopeID: 0)
            return
        }
        var literal = Substring(string)
        var scope: UInt32 = 0
        if let percent = string.firstIndex(of: "%") {
            literal = string[..<percent]
            // A zone belongs to link-local IPv6 only: say so for an IPv4 literal, before
            // looking the zone up.
            if Self.parse(String(literal), family: AF_INET, size: 4) != nil {
                throw ReachabilityError(
                    .invalidAddress,
                    "\(quotedForMessage(string)) has a zone, but only link-local IPv6 addresses take one")
            }
            let zone = String(string[string.index(after: percent)...])
            guard !zone.isEmpty else {
                throw ReachabilityError(.invalidAddress, "\(quotedForMessage(string)) has an empty zone after '%'")
            }
            if let number = UInt32(zone), number > 0 {
                scope = number
            } else {
                // The process's own namespace: a literal names no environment.
                guard case .success(let index) = SystemCalls.live.interfaceIndex(named: zone) else {
                    throw ReachabilityError(
                        .invalidAddress,
                        "\(quotedForMessage(string)) names zone \"\(zone)\", which is no interface here")
                }
                scope = index
            }
        }
        guard let v6 = Self.parse(String(literal), family: AF_INET6, size: 16) else {
            let hint =
                string.contains(where: { $0.isLetter && !$0.isHexDigit }) && !string.contains(":")
                ? " (a hostname? use Reachability(hostname:) for names)" : ""
            throw ReachabilityError(
                .invalidAddress, "\(quotedForMessage(string)) is not an IPv4 or IPv6 address literal\(hint)")
        }
        if scope != 0 {
            let candidate = IPAddress(validBytes: v6, scopeID: 0)
            guard candidate.isLinkLocal || candidate.isMulticastLinkLocal else {
                throw ReachabilityError(
                    .invalidAddress,
                    "\(quotedForMessage(string)) has a zone, but only link-local IPv6 addresses take one")
            }
        }
        self.init(validBytes: v6, scopeID: scope)
    }

    /// Creates an address from 4 (IPv4) or 16 (IPv6) bytes in network order;
    /// `nil` for any other count. The scope applies to IPv6 only: for 4 bytes it
    /// is ignored (``scopeID`` is 0).
    public init?(bytes: some Collection<UInt8>, scopeID: UInt32 = 0) {
        let array = Array(bytes)
        guard array.count == 4 || array.count == 16 else { return nil }
        self.init(validBytes: array, scopeID: scopeID)
    }

    /// `count` (4 or 16) bytes in network order at `bytes`, at any alignment.
    package init(networkOrder bytes: UnsafeRawPointer, count: Int, scopeID: UInt32) {
        if count == 4 {
            family = .ipv4
            high = UInt64(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self))) << 32
            low = 0
            self.scopeID = 0
        } else {
            family = .ipv6
            high = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
            low = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            self.scopeID = scopeID
        }
    }

    /// Calls `body` with the address in network order (4 or 16 bytes), without
    /// making an array.
    package func withNetworkOrderBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        var words = (high.bigEndian, low.bigEndian)
        return withUnsafeBytes(of: &words) { raw in
            body(UnsafeRawBufferPointer(rebasing: raw[0..<(family == .ipv4 ? 4 : 16)]))
        }
    }

    /// `bytes` must hold exactly 4 or 16 bytes.
    package init(validBytes array: [UInt8], scopeID: UInt32) {
        if array.count == 4 {
            family = .ipv4
            high = array.reduce(0) { $0 << 8 | UInt64($1) } << 32
            low = 0
            self.scopeID = 0
        } else {
            family = .ipv6
            high = array[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = array[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
            self.scopeID = scopeID
        }
    }

    /// Whether the first `length` bits equal `prefix`'s (same family; a length
    /// past the address's size compares it all).
    package func hasPrefix(_ prefix: IPAddress, length: Int) -> Bool {
        guard family == prefix.family else { return false }
        let bits = min(max(length, 0), family == .ipv4 ? 32 : 128)
        func mask(_ count: Int) -> UInt64 { count <= 0 ? 0 : count >= 64 ? ~0 : ~0 << UInt64(64 - count) }
        let highMask = mask(bits)
        let lowMask = mask(bits - 64)
        return high & highMask == prefix.high & highMask && low & lowMask == prefix.low & lowMask
    }

    /// The address in network byte order: 4 or 16 bytes.
    public var bytes: [UInt8] {
        let count = family == .ipv4 ? 4 : 16
        return (0..<count).map { i in
            i < 8
                ? UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
                : UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i - 8)))
        }
    }

    /// The canonical text form (`inet_ntop`), with `%zone` when there is one.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let af = family == .ipv4 ? AF_INET : AF_INET6
        let text = bytes.withUnsafeBytes { raw -> String in
            guard inet_ntop(af, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return scopeID == 0 ? text : "\(text)%\(scopeID)"
    }

    /// This address with no zone.
    package var withoutZone: IPAddress { scopeID == 0 ? self : IPAddress(validBytes: bytes, scopeID: 0) }

    /// The network of this address with a prefix of `length` bits: the bits past
    /// it cleared, no zone.
    package func network(prefixLength length: Int) -> IPAddress {
        let bits = min(max(length, 0), family == .ipv4 ? 32 : 128)
        let masked = bytes.enumerated().map { position, byte -> UInt8 in
            let kept = min(max(bits - position * 8, 0), 8)
            return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> UInt8(kept))
        }
        return IPAddress(validBytes: masked, scopeID: 0)
    }

    /// The same address, ignoring the zone.
    package func sameAddress(as other: IPAddress) -> Bool {
        family == other.family && high == other.high && low == other.low
    }

    /// IPv4 169.254.0.0/16 or IPv6 fe80::/10.
    public var isLinkLocal: Bool {
        switch family {
        case .ipv4: return high >> 48 == 0xA9FE
        case .ipv6: return high >> 54 == 0xFE80 >> 6
        }
    }

    /// IPv4 127.0.0.0/8 or IPv6 ::1.
    public var isLoopback: Bool {
        switch family {
        case .ipv4: return high >> 56 == 127
        case .ipv6: return high == 0 && low == 1
        }
    }

    /// An address no public server has: IPv4 0/8, 10/8, 100.64/10 (carrier-grade
    /// NAT), 127/8, 169.254/16, 172.16/12, 192.168/16; IPv6 `::`, `::1`, fc00::/7
    /// (unique local), fe80::/10; an IPv4-mapped IPv6 address by its IPv4 form. A
    /// public check endpoint's name that resolves to one was answered by a captive
    /// portal's or a broken resolver (RFC 1918, RFC 6598, RFC 4193).
    public var isPrivateOrLocal: Bool {
        let address = unmapped
        switch address.family {
        case .ipv4:
            let v4 = UInt32(truncatingIfNeeded: address.high >> 32)
            func within(_ network: UInt32, _ length: UInt32) -> Bool {
                v4 >> (32 - length) == network >> (32 - length)
            }
            return within(0x0000_0000, 8) || within(0x0A00_0000, 8) || within(0x6440_0000, 10)
                || within(0x7F00_0000, 8) || within(0xA9FE_0000, 16) || within(0xAC10_0000, 12)
                || within(0xC0A8_0000, 16)
        case .ipv6:
            return (address.high == 0 && (address.low == 0 || address.low == 1)) || address.high >> 57 == 0xFC >> 1
                || address.isLinkLocal
        }
    }

    /// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the IPv4 address it
    /// stands for (that is where a socket connecting to it goes); any other address
    /// as itself. The kernel's IPv6 routing has no route for the mapped form.
    public var unmapped: IPAddress {
        guard family == .ipv6, high == 0, low >> 32 == 0xFFFF else { return self }
        let v4 = UInt32(truncatingIfNeeded: low)
        return IPAddress(validBytes: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v4 >> $0) }, scopeID: 0)
    }

    package var isMulticastLinkLocal: Bool { family == .ipv6 && high >> 48 == 0xFF02 }

    /// True for 0.0.0.0 and ::.
    package var isUnspecified: Bool { high == 0 && low == 0 }

    /// IPv4 0.0.0.0, Apple's "the Internet" target.
    package static let ipv4Any = IPAddress(validBytes: [0, 0, 0, 0], scopeID: 0)

    private static func parse(_ string: String, family: Int32, size: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: size)
        let ok = out.withUnsafeMutableBytes { inet_pton(family, string, $0.baseAddress) }
        return ok == 1 ? out : nil
    }
}

extension IPAddress {
    /// Global unicast addresses whose lookups stand for "the Internet" (8.8.8.8 and
    /// 2001:4860:4860::8888). Nothing is ever sent to them: the kernel is only asked
    /// which way a packet would go. The one definition, for the library and the CLI.
    package static let internetProbeV4 = IPAddress(validBytes: [8, 8, 8, 8], scopeID: 0)
    /// The IPv6 counterpart of ``internetProbeV4``.
    package static let internetProbeV6 = IPAddress(
        validBytes: [0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88], scopeID: 0)
}
