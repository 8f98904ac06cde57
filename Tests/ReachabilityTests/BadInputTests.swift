import Foundation
import Glibc
import Reachability
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Big inputs, made once.
private enum Huge {
    static let megabyteDigits = String(repeating: "1", count: 1 << 20)
    static let megabyteName = String(repeating: "a", count: 1 << 20)
    /// 100,000 one-letter labels (200 kB).
    static let manyLabels = String(repeating: "a.", count: 100_000) + "example"
    static let megabytePath = "/" + String(repeating: "p", count: 1 << 20)
}

/// Checks what every bad-input error must be: the expected code, a readable
/// one-line message (no raw control characters, bounded even for a 1 MB input)
/// that says what is wrong.
private func expectReadable(
    _ error: ReachabilityError?, _ code: ReachabilityError.Code, says: String?, _ name: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let error else { return }  // #expect(throws:) has already recorded the failure.
    #expect(error.code == code, "\(name): \(error)", sourceLocation: sourceLocation)
    #expect(!error.message.isEmpty, "\(name)", sourceLocation: sourceLocation)
    #expect(
        !error.description.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
        "\(name): control characters in \(error.description.debugDescription)", sourceLocation: sourceLocation)
    #expect(error.description.utf8.count < 1000, "\(name): a bounded message", sourceLocation: sourceLocation)
    if let says {
        #expect(error.message.contains(says), "\(name): \(error.message)", sourceLocation: sourceLocation)
    }
}

/// The hardening sweep over the `Reachability` module's public initializers and
/// factories: malformed input (empty, huge, NUL bytes, the wrong family,
/// out-of-range numbers, control characters, bad paths) throws the right
/// `ReachabilityError` with a readable message, or gives the documented result;
/// never a trap. Nothing here opens a socket or resolves a name.
@Suite struct BadInputTests {
    // MARK: IPAddress(_:) and Reachability(address:)

    static let badAddresses: [Input<String>] = [
        Input("empty", "", says: "empty"),
        Input("1 MB of digits", Huge.megabyteDigits),
        Input("65 bytes", "0000:0000:0000:0000:0000:0000:0000:0001%" + String(repeating: "9", count: 25)),
        Input("trailing NUL", "10.0.0.1\u{0}"),
        Input("leading NUL", "\u{0}10.0.0.1"),
        Input("NUL inside", "a\u{0}b"),
        Input("IPv6 with NUL", "::1\u{0}"),
        Input("NUL in the zone", "fe80::1%lo\u{0}"),
        Input("octet 256", "256.0.0.1"),
        Input("last octet 256", "1.2.3.256"),
        Input("octet 99999", "1.2.3.99999"),
        Input("negative octet", "-1.2.3.4"),
        Input("Int.max", "9223372036854775807"),
        Input("2^32", "4294967296"),
        Input("three parts", "1.2.3"),
        Input("five parts", "1.2.3.4.5"),
        Input("hex part", "0x7f.0.0.1"),
        Input("octal-looking part", "010.0.0.1"),
        Input("trailing dot", "1.2.3.4."),
        Input("leading space", " 1.2.3.4"),
        Input("trailing space", "1.2.3.4 "),
        Input("trailing newline", "1.2.3.4\n"),
        Input("escape character", "1.2.3.4\u{1B}"),
        Input("full-width digits", "１.２.３.４"),
        Input("nan", "nan"),
        Input("inf", "inf"),
        Input("a hostname", "example.com", says: "hostname"),
        Input("three colons", ":::"),
        Input("nine groups", "1:2:3:4:5:6:7:8:9"),
        Input("five hex digits", "12345::"),
        Input("mapped octet 256", "::ffff:256.1.1.1"),
        Input("mapped three parts", "::ffff:1.2.3"),
        Input("brackets", "[::1]"),
        Input("empty zone", "fe80::1%", says: "empty zone"),
        Input("zone only", "%lo"),
        Input("zone 0", "fe80::1%0", says: "no interface"),
        Input("zone 2^32", "fe80::1%4294967296", says: "no interface"),
        Input("negative zone", "fe80::1%-1", says: "no interface"),
        Input("unknown zone", "fe80::1%no-such-if0", says: "no interface"),
        Input("zone on a global IPv6 address", "2001:db8::1%1", says: "link-local"),
        Input("zone on ::1", "::1%lo", says: "link-local"),
        Input("zone on IPv4", "192.0.2.1%1", says: "link-local"),
        Input("named zone on IPv4", "192.0.2.1%lo", says: "link-local"),
        Input("unknown zone on IPv4", "192.0.2.1%no-such-if0", says: "link-local"),
        Input("zone on a mapped IPv4 address", "::ffff:192.0.2.1%1", says: "link-local"),
        Input("two zones", "fe80::1%lo%lo"),
    ]

    @Test("IPAddress(_:) and Reachability(address:) throw invalidAddress", arguments: badAddresses)
    func badAddress(_ input: Input<String>) {
        let parsed = #expect(throws: ReachabilityError.self) { try IPAddress(input.value) }
        expectReadable(parsed, .invalidAddress, says: input.says, input.name)
        let watched = #expect(throws: ReachabilityError.self) { try Reachability(address: input.value) }
        expectReadable(watched, .invalidAddress, says: input.says, input.name)
        for (local, remote) in [(input.value, "192.0.2.1"), ("192.0.2.1", input.value)] {
            let pair = #expect(throws: ReachabilityError.self) {
                try Reachability(localAddress: local, remoteAddress: remote)
            }
            expectReadable(pair, .invalidAddress, says: nil, input.name)
        }
    }

    @Test("Documented forms at the edges: IPv4-mapped IPv6, numeric and named zones, the unspecified addresses")
    func documentedAddressForms() throws {
        let mapped = try IPAddress("::ffff:1.2.3.4")
        #expect(mapped.family == .ipv6)
        #expect(mapped.bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 1, 2, 3, 4])
        #expect(mapped.description == "::ffff:1.2.3.4")
        #expect(try IPAddress("fe80::1%1").scopeID == 1)
        let widest = try IPAddress("fe80::1%4294967295")
        #expect(widest.scopeID == UInt32.max)
        #expect(widest.description == "fe80::1%4294967295")
        let loopbackIndex = if_nametoindex("lo")
        #expect(loopbackIndex != 0)
        #expect(try IPAddress("FE80::1%lo").scopeID == loopbackIndex)
        #expect(try IPAddress("ff02::1%lo").scopeID == loopbackIndex)
        #expect(try IPAddress("0:0:0:0:0:0:0:0").description == "::")
        for unspecified in ["0.0.0.0", "::", "0:0:0:0:0:0:0:0"] {
            #expect(try Reachability(address: unspecified).targetDescription == "internet", "\(unspecified)")
        }
        #expect(try Reachability(address: "::ffff:1.2.3.4").targetDescription == "::ffff:1.2.3.4")
    }

    // MARK: IPAddress(bytes:scopeID:)

    @Test(
        "IPAddress(bytes:) is nil for any count but 4 and 16",
        arguments: [0, 1, 3, 5, 8, 15, 17, 32, 1 << 20])
    func wrongByteCount(_ count: Int) {
        #expect(IPAddress(bytes: [UInt8](repeating: 0xFF, count: count)) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0xFF, count: count), scopeID: UInt32.max) == nil)
    }

    @Test("IPAddress(bytes:scopeID:): any byte values, slices, and the scope kept for IPv6 only")
    func bytesAndScopes() throws {
        // Not UTF-8, not valid anything: still just bytes.
        let ones = try #require(IPAddress(bytes: [0xFF, 0xFE, 0xFD, 0xFC], scopeID: UInt32.max))
        #expect(ones.family == .ipv4)
        #expect(ones.scopeID == 0, "the scope applies to IPv6 only")
        #expect(ones.description == "255.254.253.252")
        // A slice whose indices do not start at 0.
        let slice = ([9, 192, 0, 2, 1] as [UInt8])[1...]
        #expect(IPAddress(bytes: slice) == (try IPAddress("192.0.2.1")))
        let v6 = try #require(IPAddress(bytes: [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1], scopeID: .max))
        #expect(v6.family == .ipv6)
        #expect(v6.scopeID == UInt32.max)
        #expect(v6.description == "fe80::1%4294967295")
        #expect(try IPAddress(v6.description) == v6, "a link-local scope round-trips")
    }

    // MARK: Reachability(localAddress:remoteAddress:)

    static let mixedFamilies: [Input<(String, String)>] = [
        Input("IPv4 from, IPv6 to", ("192.0.2.1", "2001:db8::1")),
        Input("IPv6 from, IPv4 to", ("2001:db8::1", "192.0.2.1")),
        Input("IPv4-mapped from, IPv6 to", ("::ffff:192.0.2.1", "2001:db8::1")),
        Input("zoned link-local from, IPv4 to", ("fe80::1%1", "192.0.2.1")),
        Input("unspecified IPv4 from, unspecified IPv6 to", ("0.0.0.0", "::")),
    ]

    @Test("An address pair of two families throws invalidAddress naming both", arguments: mixedFamilies)
    func addressPairOfTwoFamilies(_ input: Input<(String, String)>) {
        let (local, remote) = input.value
        let error = #expect(throws: ReachabilityError.self) {
            try Reachability(localAddress: local, remoteAddress: remote)
        }
        expectReadable(error, .invalidAddress, says: "ipv4", input.name)
        expectReadable(error, .invalidAddress, says: "ipv6", input.name)
    }

    // MARK: Reachability(hostname:)

    static let badHostnames: [Input<String>] = [
        Input("empty", "", says: "empty"),
        Input("1 MB name", Huge.megabyteName, says: "limit is 253"),
        Input("100,000 labels", Huge.manyLabels, says: "limit is 253"),
        Input("64-byte label", String(repeating: "a", count: 64) + ".example", says: "limit is 63"),
        Input("254 bytes", String(repeating: "abcd.", count: 50) + "abcd", says: "254 bytes"),
        Input("root only", ".", says: "empty label"),
        Input("two dots", "..", says: "empty label"),
        Input("two trailing dots", "example.com..", says: "empty label"),
        Input("leading dot", ".example.com", says: "empty label"),
        Input("NUL inside", "a\u{0}b", says: "U+0"),
        Input("trailing NUL", "example.com\u{0}", says: "U+0"),
        Input("NUL alone", "\u{0}", says: "U+0"),
        Input("address with a trailing NUL", "10.0.0.1\u{0}", says: "U+0"),
        Input("escape sequence", "\u{1B}[31mred", says: "U+1B"),
        Input("DEL", "del\u{7F}.example", says: "U+7F"),
        Input("newline", "line\nfeed.example", says: "U+A"),
        Input("leading space", " example.com", says: "a space"),
        Input("line separator", "a\u{2028}b", says: "U+2028"),
        Input("ideographic space", "a\u{3000}b", says: "U+3000"),
        Input("next line", "a\u{85}b", says: "U+85"),
    ]

    @Test("Reachability(hostname:) throws invalidHostname for names no resolver takes", arguments: badHostnames)
    func badHostname(_ input: Input<String>) {
        let error = #expect(throws: ReachabilityError.self) { try Reachability(hostname: input.value) }
        expectReadable(error, .invalidHostname, says: input.says, input.name)
    }

    static let malformedLiterals: [Input<String>] = [
        Input("octet 256", "256.1.1.1"),
        Input("address with a trailing dot", "1.2.3.4."),
        Input("twenty digits", "99999999999999999999"),
        Input("IPv4 with a named zone", "192.0.2.1%lo", says: "link-local"),
        Input("IPv4 with an unknown zone", "192.0.2.1%eth0", says: "link-local"),
        Input("unclosed bracket", "[::1"),
        Input("empty brackets", "[]"),
        Input("bracketed unknown zone", "[fe80::1%no-such-if0]", says: "no interface"),
        Input("bracketed zone on a global address", "[2001:db8::1%1]", says: "link-local"),
        Input("URL", "http://example.com/"),
    ]

    @Test(
        "Reachability(hostname:) throws invalidAddress for text shaped like an address that isn't one",
        arguments: malformedLiterals)
    func malformedLiteralAsHostname(_ input: Input<String>) {
        let error = #expect(throws: ReachabilityError.self) { try Reachability(hostname: input.value) }
        expectReadable(error, .invalidAddress, says: input.says, input.name)
    }

    static let acceptedNames: [Input<String>] = [
        Input("single label", "a"),
        Input("trailing dot", "example.com."),
        Input("63-byte label", String(repeating: "a", count: 63) + ".example"),
        Input("253 bytes", String(repeating: "abcd.", count: 50) + "abc"),
        Input("253 bytes and the root dot", String(repeating: "abcd.", count: 50) + "abc."),
        Input("punycode", "xn--bcher-kva.example"),
        Input("IDN as UTF-8, passed to the resolver as is", "bücher.example"),
        Input("underscore", "_service.example"),
        Input("digits then a letter label", "1.2.3.example"),
    ]

    @Test("Names at the limits make a hostname target (nothing is resolved yet)", arguments: acceptedNames)
    func acceptedHostname(_ input: Input<String>) throws {
        let reachability = try Reachability(hostname: input.value)
        #expect(reachability.core.spec == .hostname(input.value))
        #expect(reachability.targetDescription == input.value)
    }

    @Test("Address literals given as hostnames are addresses; the unspecified ones mean the Internet")
    func literalsAsHostnames() throws {
        #expect(try Reachability(hostname: "[::1]").core.spec == .fixed(.address(try IPAddress("::1"))))
        #expect(try Reachability(hostname: "127.0.0.1").core.spec == .fixed(.address(try IPAddress("127.0.0.1"))))
        #expect(try Reachability(hostname: "fe80::1%lo").core.spec == .fixed(.address(try IPAddress("fe80::1%lo"))))
        for unspecified in ["0.0.0.0", "::", "[::]"] {
            #expect(try Reachability(hostname: unspecified).core.spec == .fixed(.internet), "\(unspecified)")
        }
    }

    // MARK: NetworkEnvironment, through everything that takes one

    static let badEnvironments: [Input<(NetworkEnvironment, ReachabilityError.Code)>] = [
        Input("empty namespace path", (NetworkEnvironment(networkNamespacePath: ""), .namespace)),
        Input("missing namespace file", (NetworkEnvironment(networkNamespacePath: "/nonexistent/netns"), .namespace)),
        Input("relative path", (NetworkEnvironment(networkNamespacePath: "no-such-netns"), .namespace)),
        Input("/dev/null", (NetworkEnvironment(networkNamespacePath: "/dev/null"), .namespace)),
        Input("a directory", (NetworkEnvironment(networkNamespacePath: "/"), .namespace)),
        Input("a UTS namespace", (NetworkEnvironment(networkNamespacePath: "/proc/self/ns/uts"), .namespace)),
        Input(
            "NUL after a real namespace path",
            (NetworkEnvironment(networkNamespacePath: "/proc/self/ns/net\u{0}junk"), .namespace), says: "NUL"),
        Input("NUL alone", (NetworkEnvironment(networkNamespacePath: "\u{0}"), .namespace), says: "NUL"),
        Input("1 MB path", (NetworkEnvironment(networkNamespacePath: Huge.megabytePath), .namespace)),
        Input("empty sysfs root", (NetworkEnvironment(sysfsRoot: ""), .invalidArgument), says: "sysfs"),
        Input(
            "NUL in the sysfs root", (NetworkEnvironment(sysfsRoot: "/sys\u{0}junk"), .invalidArgument), says: "NUL"),
    ]

    /// Every public way in that takes an environment.
    static func everyFactory(_ environment: NetworkEnvironment) -> [(String, () throws(ReachabilityError) -> Void)] {
        [
            ("Reachability()", { () throws(ReachabilityError) in _ = try Reachability(environment: environment) }),
            (
                "Reachability(address:)",
                { () throws(ReachabilityError) in _ = try Reachability(address: "192.0.2.1", environment: environment) }
            ),
            (
                "Reachability(hostname:)",
                { () throws(ReachabilityError) in
                    _ = try Reachability(hostname: "example.com", environment: environment)
                }
            ),
            (
                "Reachability(localAddress:remoteAddress:)",
                { () throws(ReachabilityError) in
                    _ = try Reachability(
                        localAddress: "192.0.2.1", remoteAddress: "192.0.2.2", environment: environment)
                }
            ),
            (
                "Reachability.forLinkLocal",
                { () throws(ReachabilityError) in _ = try Reachability.forLinkLocal(environment: environment) }
            ),
            ("PathMonitor()", { () throws(ReachabilityError) in _ = try PathMonitor(environment: environment) }),
            (
                "PathMonitor(requiredInterfaceType:)",
                { () throws(ReachabilityError) in
                    _ = try PathMonitor(requiredInterfaceType: .wifi, environment: environment)
                }
            ),
            (
                "PathMonitor(prohibitedInterfaceTypes:)",
                { () throws(ReachabilityError) in
                    _ = try PathMonitor(prohibitedInterfaceTypes: [.cellular], environment: environment)
                }
            ),
            (
                "NetworkInterfaces.list",
                { () throws(ReachabilityError) in _ = try NetworkInterfaces.list(environment: environment) }
            ),
        ]
    }

    @Test("A bad environment makes every initializer and NetworkInterfaces.list throw", arguments: badEnvironments)
    func badEnvironment(_ input: Input<(NetworkEnvironment, ReachabilityError.Code)>) {
        let (environment, code) = input.value
        for (factory, make) in Self.everyFactory(environment) {
            let error = #expect(throws: ReachabilityError.self, "\(factory)") { try make() }
            expectReadable(error, code, says: input.says, "\(input.name), \(factory)")
        }
    }

    @Test("A FIFO or a plain file given as the namespace throws at once (no blocking open)")
    func namespaceFileThatIsNoNamespace() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bad-ns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let plain = directory.appendingPathComponent("plain").path
        try "not a namespace".write(toFile: plain, atomically: true, encoding: .utf8)
        for path in [fifo, plain] {
            for (factory, make) in Self.everyFactory(NetworkEnvironment(networkNamespacePath: path)) {
                let error = #expect(throws: ReachabilityError.self, "\(factory)") { try make() }
                expectReadable(error, .namespace, says: nil, "\(path), \(factory)")
            }
        }
    }

    @Test("The process's own namespace file is a good environment (the checks above can pass)")
    func ownNamespaceFile() throws {
        let environment = NetworkEnvironment(networkNamespacePath: "/proc/self/ns/net")
        #expect(environment.sysfsRoot == nil, "another namespace's sysfs is skipped by default")
        _ = try Reachability(environment: environment)
        _ = try PathMonitor(environment: environment)
        _ = try Reachability(environment: NetworkEnvironment(sysfsRoot: "/nonexistent/sys"))
    }

    // MARK: PathMonitor options

    static let badResolvConfPaths: [Input<String>] = [
        Input("empty", ""),
        Input("NUL after a real path", "/etc/resolv.conf\u{0}junk"),
        Input("/dev/zero (never ends)", "/dev/zero", says: "regular file"),
        Input("/dev/null", "/dev/null", says: "regular file"),
        Input("a directory", "/", says: "regular file"),
        Input("1 MB path", Huge.megabytePath),
    ]

    @Test(
        "PathMonitor throws invalidArgument for a resolv.conf path that is no regular file",
        arguments: badResolvConfPaths)
    func badResolvConf(_ input: Input<String>) {
        let options = PathMonitor.Options(resolvConfPath: input.value)
        let error = #expect(throws: ReachabilityError.self) { try PathMonitor(options: options) }
        expectReadable(error, .invalidArgument, says: input.says, input.name)
        let typed = #expect(throws: ReachabilityError.self) {
            try PathMonitor(requiredInterfaceType: .wiredEthernet, options: options)
        }
        expectReadable(typed, .invalidArgument, says: input.says, input.name)
    }

    @Test("A FIFO as resolv.conf throws (reading it would block the monitor); a missing file means no DNS")
    func resolvConfFIFOAndMissingFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bad-resolv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let error = #expect(throws: ReachabilityError.self) {
            try PathMonitor(options: .init(resolvConfPath: fifo))
        }
        expectReadable(error, .invalidArgument, says: "regular file", "FIFO")
        // Documented: a missing file (or one under a plain file) is "no DNS configured", not an error.
        _ = try PathMonitor(options: .init(resolvConfPath: directory.appendingPathComponent("missing").path))
        let plain = directory.appendingPathComponent("resolv.conf").path
        try "nameserver 192.0.2.53\n".write(toFile: plain, atomically: true, encoding: .utf8)
        _ = try PathMonitor(options: .init(resolvConfPath: plain))
        _ = try PathMonitor(options: .init(resolvConfPath: plain + "/under-a-file"))
    }

    @Test("Odd interface names and type lists are plain values: documented results, no error")
    func oddOptionsAreValues() throws {
        let names = ["", "a\u{0}b", String(repeating: "x", count: 100_000), "eth0:1", "../../etc"]
        let options = PathMonitor.Options(
            expensiveInterfaces: Dictionary(uniqueKeysWithValues: names.map { ($0, true) }),
            constrainedInterfaces: Set(names))
        let monitor = try PathMonitor(options: options)
        #expect(monitor.prohibitedInterfaceTypes.isEmpty && monitor.requiredInterfaceType == nil)
        let everything = InterfaceType.allCases + InterfaceType.allCases
        let none = try PathMonitor(prohibitedInterfaceTypes: everything, options: options)
        #expect(none.prohibitedInterfaceTypes == everything)
        #expect(try PathMonitor(requiredInterfaceType: .loopback).requiredInterfaceType == .loopback)
    }
}
