import Glibc
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// Strict parsing of address literals: valid forms round-trip, everything else
/// throws `.invalidAddress` with a message that names the input.
@Suite struct IPAddressTests {
    @Test(
        arguments: [
            ("192.0.2.1", IPAddress.Family.ipv4, [192, 0, 2, 1] as [UInt8]),
            ("0.0.0.0", .ipv4, [0, 0, 0, 0]),
            ("255.255.255.255", .ipv4, [255, 255, 255, 255]),
            ("127.0.0.1", .ipv4, [127, 0, 0, 1]),
        ] as [(String, IPAddress.Family, [UInt8])])
    func ipv4RoundTrips(_ text: String, _ family: IPAddress.Family, _ bytes: [UInt8]) throws {
        let address = try IPAddress(text)
        #expect(address.family == family)
        #expect(address.bytes == bytes)
        #expect(address.description == text)
        #expect(address.scopeID == 0)
        #expect(try IPAddress(address.description) == address)
    }

    @Test(arguments: [
        ("::", "::"),
        ("::1", "::1"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("2001:db8:0:1:0:0:0:0", "2001:db8:0:1::"),
        ("fe80::1", "fe80::1"),
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
        ("ff02::1", "ff02::1"),
    ])
    func ipv6RoundTripsToCanonicalText(_ text: String, _ canonical: String) throws {
        let address = try IPAddress(text)
        #expect(address.family == .ipv6)
        #expect(address.bytes.count == 16)
        #expect(address.description == canonical)
        #expect(try IPAddress(canonical) == address)
    }

    @Test func bytesRoundTrip() throws {
        let v6 = try IPAddress("2001:db8::8:800:200c:417a")
        #expect(v6.bytes == [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x08, 0x08, 0, 0x20, 0x0c, 0x41, 0x7a])
        #expect(IPAddress(bytes: v6.bytes) == v6)
        #expect(IPAddress(bytes: [192, 0, 2, 1]) == (try IPAddress("192.0.2.1")))
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 5)) == nil)
        #expect(IPAddress(bytes: [UInt8]()) == nil)
    }

    @Test func zoneByNumber() throws {
        let address = try IPAddress("fe80::1%7")
        #expect(address.family == .ipv6)
        #expect(address.scopeID == 7)
        #expect(address.isLinkLocal)
        #expect(address.description == "fe80::1%7")
        #expect(try IPAddress(address.description) == address)
        #expect(address != (try IPAddress("fe80::1%8")))
        #expect(address != (try IPAddress("fe80::1")))
    }

    @Test func zoneByInterfaceName() throws {
        // Every network namespace has lo.
        let address = try IPAddress("fe80::1%lo")
        #expect(address.scopeID == if_nametoindex("lo"))
        #expect(address.scopeID != 0)
    }

    @Test func multicastLinkLocalTakesAZone() throws {
        #expect(try IPAddress("ff02::1%3").scopeID == 3)
    }

    @Test func classification() throws {
        #expect(try IPAddress("169.254.1.1").isLinkLocal)
        #expect(try IPAddress("febf::1").isLinkLocal)
        #expect(try !IPAddress("fec0::1").isLinkLocal)
        #expect(try !IPAddress("192.0.2.1").isLinkLocal)
        #expect(try IPAddress("127.255.0.1").isLoopback)
        #expect(try IPAddress("::1").isLoopback)
        #expect(try !IPAddress("::2").isLoopback)
        #expect(try IPAddress("0.0.0.0").isUnspecified)
        #expect(try IPAddress("::").isUnspecified)
        #expect(IPAddress.ipv4Any == (try IPAddress("0.0.0.0")))
    }

    static let malformed = [
        "", "999.1.1.1", "1.2.3", "::g", "fe80::1%nosuchif", "example.com",
        "1.2.3.4.5", "0x7f.0.0.1", "256.0.0.0", "1.2.3.-4", " 192.0.2.1", "192.0.2.1 ", "192.0.2.1/24",
        "2001:db8::1::2", "2001:db8:::1", "12345::", ":::", "fe80::1%", "2001:db8::1%2", "192.0.2.1%1",
        "fe80::1%0", "fe80::1%../lo", "localhost", "::1]", "[::1]",
    ]

    @Test(arguments: malformed)
    func malformedInputIsRejectedNamingTheInput(_ input: String) throws {
        let error = try #require(throws: ReachabilityError.self) { try IPAddress(input) }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains("\"\(input)\""), "message: \(error.message)")
        #expect(error.errno == nil)
    }

    @Test func hostnameGetsAHint() throws {
        let error = try #require(throws: ReachabilityError.self) { try IPAddress("example.com") }
        #expect(error.message.contains("hostname"))
    }

    /// A string argument shown escaped in test output (a raw NUL would cut the console line short).
    struct Escaped: Sendable, CustomTestStringConvertible {
        var text: String
        var testDescription: String { text.debugDescription }
    }

    static let withNul = ["\0", "192.0.2.1\0", "192.0.2.1\0garbage", "\0192.0.2.1", "::1\0", "fe80::1%lo\0"]

    @Test(arguments: withNul.map(Escaped.init))
    func nulBytesAreRejectedAndShownEscaped(_ input: Escaped) throws {
        let error = try #require(throws: ReachabilityError.self) { try IPAddress(input.text) }
        #expect(error.code == .invalidAddress)
        #expect(!error.message.utf8.contains(0))
        let escaped = input.text.split(separator: "\0", omittingEmptySubsequences: false).joined(separator: "\\u{0}")
        #expect(error.message.contains("\"\(escaped)\""), "message: \(error.message)")
    }

    @Test func controlCharactersAreEscaped() throws {
        let error = try #require(throws: ReachabilityError.self) { try IPAddress("192.0.2.1\n") }
        #expect(error.message.contains("192.0.2.1\\u{a}"))
        #expect(!error.message.contains("\n"))
    }

    @Test(arguments: [
        String(repeating: "1", count: 100_000),
        "192.0.2.1" + String(repeating: " ", count: 10_000),
        String(repeating: "ffff:", count: 20_000) + "1",
        "fe80::1%" + String(repeating: "x", count: 5_000),
        String(repeating: "é", count: 50_000),
    ])
    func hugeStringsAreRejectedWithABoundedMessage(_ input: String) throws {
        let error = try #require(throws: ReachabilityError.self) { try IPAddress(input) }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains(String(input.prefix(40))))
        #expect(error.message.count < 400, "message is \(error.message.count) characters")
    }

    @Test(arguments: [("192.0.2.1", "2001:db8::1"), ("2001:db8::1", "192.0.2.1"), ("::1", "127.0.0.1")])
    func mixedFamilyPairIsRejected(_ local: String, _ remote: String) throws {
        let error = try #require(throws: ReachabilityError.self) {
            _ = try Reachability(localAddress: local, remoteAddress: remote)
        }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains(local))
        #expect(error.message.contains(remote))
    }

    @Test func pairWithAMalformedSideIsRejectedNamingIt() throws {
        let error = try #require(throws: ReachabilityError.self) {
            _ = try Reachability(localAddress: "192.0.2.1", remoteAddress: "192.0.2.300")
        }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains("192.0.2.300"))
    }

    @Test func sameFamilyPairIsAccepted() throws {
        let reachability = try Reachability(localAddress: "192.0.2.1", remoteAddress: "198.51.100.1")
        #expect(reachability.targetDescription == "192.0.2.1 → 198.51.100.1")
    }

    @Test func hostnameAsAddressThrows() throws {
        let error = try #require(throws: ReachabilityError.self) { _ = try Reachability(address: "example.com") }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains("example.com"))
        #expect(error.description.contains("example.com"))
    }

    @Test(arguments: ["0.0.0.0", "::"])
    func unspecifiedAddressMeansTheInternet(_ text: String) throws {
        #expect(try Reachability(address: text).targetDescription == "internet")
    }
}

@Suite struct PrefixTests {
    static func route(_ family: UInt8, _ destination: String?, _ length: UInt8) throws -> RouteMessage {
        RouteMessage(
            family: family, type: 1, table: 254, destinationLength: length,
            destination: try destination.map { try IPAddress($0) }, outputInterface: 2, hasGateway: false,
            preferredSource: nil, priority: nil)
    }

    @Test(arguments: [
        ("198.51.100.7", "198.51.100.0", UInt8(24), true), ("198.51.101.7", "198.51.100.0", 24, false),
        ("198.51.100.7", "198.51.100.7", 32, true), ("198.51.100.8", "198.51.100.7", 32, false),
        ("10.1.2.3", "10.0.0.0", 8, true), ("11.1.2.3", "10.0.0.0", 8, false), ("8.8.8.8", "0.0.0.0", 0, true),
        ("8.8.8.8", "8.8.8.0", 23, true), ("8.8.9.8", "8.8.8.0", 23, true), ("8.8.10.8", "8.8.8.0", 23, false),
        ("2001:db8::1", "2001:db8::", 32, true), ("2001:db9::1", "2001:db8::", 32, false),
        ("2001:db8::1:0:0:1", "2001:db8:0:0:1::", 80, true), ("2001:db8::2:0:0:1", "2001:db8:0:0:1::", 80, false),
        ("2001:db8::1", "2001:db8::1", 128, true), ("2001:db8::2", "2001:db8::1", 128, false),
        ("2001:db8::1", "2001:db8::", 65, true),
    ])
    func covers(address: String, prefix: String, length: UInt8, expected: Bool) throws {
        let family: UInt8 = address.contains(":") ? 10 : 2
        #expect(try Self.route(family, prefix, length).covers(try IPAddress(address)) == expected)
    }

    @Test func otherFamiliesAndUnreadablePrefixes() throws {
        let v4 = try IPAddress("192.0.2.1")
        let v6 = try IPAddress("2001:db8::1")
        #expect(try !Self.route(10, "2001:db8::", 0).covers(v4), "an IPv6 default doesn't cover IPv4")
        #expect(try Self.route(10, "2001:db8::", 0).covers(v6))
        #expect(try Self.route(2, nil, 24).covers(v4), "no RTA_DST: assume it covers")
        #expect(try !Self.route(28, nil, 20).covers(v4), "MPLS routes cover no IP target")
    }
}
