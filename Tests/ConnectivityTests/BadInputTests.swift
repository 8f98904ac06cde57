import Foundation
import Glibc
import Reachability
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem
import TestSupport
import Testing

@testable import Connectivity

/// One change to a good configuration.
typealias Change = @Sendable (inout ConnectivityConfiguration) -> Void

/// Files the trust-roots cases need, made once per test process: a FIFO and a
/// file that is not PEM (see `ScratchFiles`), and next to them a real certificate.
private enum Files {
    static let scratch = ScratchFiles(directoryName: "connectivity-bad-input-tests")
    static let certificate = scratch.write("root.pem", pem.utf8)

    /// A self-signed P-256 certificate (CN=bad-input-test).
    static let pem = """
        -----BEGIN CERTIFICATE-----
        MIIBiTCCAS+gAwIBAgIURxmh7R6R9MGg4Ya3z0ZGcwSre+YwCgYIKoZIzj0EAwIw
        GTEXMBUGA1UEAwwOYmFkLWlucHV0LXRlc3QwIBcNMjYxMTIyMTIyNDAxWhgPMjEy
        NjEwMjkxMjI0MDFaMBkxFzAVBgNVBAMMDmJhZC1pbnB1dC10ZXN0MFkwEwYHKoZI
        zj0CAQYIKoZIzj0DAQcDQgAEImRhmmGnUaDzDXzDTzbgO6exUaRuGsZxVPM0cybe
        lxSB1nMQe1iOcF4Jxr+Li72JKBR08wxxYefq4wrznUSVm6NTMFEwHQYDVR0OBBYE
        FNwraLkbnht8cFvmu+seJhOGB0RIMB8GA1UdIwQYMBaAFNwraLkbnht8cFvmu+se
        JhOGB0RIMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgPDcnh1KY
        KAt7yApQ0zjuH5KL/kgkZ0LMM3n5H4SqE0oCIQDTp0avQIJTL4j5wxarb0Jdpg1h
        9ljUhzya2uigOAtiUQ==
        -----END CERTIFICATE-----

        """
}

/// The hardening sweep over the `Connectivity` module's public inputs: a
/// configuration with any one malformed setting (empty, huge, NUL bytes, control
/// characters, out-of-range numbers, bad URLs, ports, headers, files) is refused
/// by `validate()` and by `Connectivity(validating:)` with a readable
/// `ConnectivityError`; the RFC 8908 parser turns garbage into nil. Nothing here
/// sends a request.
@Suite struct ConnectivityBadInputTests {
    static let good = ConnectivityEndpoint(
        url: URL(string: "http://127.0.0.1:8080/generate_204")!, expectation: .status(204))
    static let hundredKB = String(repeating: "x", count: 100_000)

    /// An endpoint like `good` with one thing changed.
    static func endpoint(
        _ url: String = "http://127.0.0.1:8080/generate_204",
        expectation: ConnectivityEndpoint.Expectation = .status(204),
        headers: [String: String] = [:], method: String = "GET"
    ) -> Change {
        { configuration in
            // URL(string:) refuses some of these; URL(fileURLWithPath:) never does, and yields a file URL.
            let parsed = URL(string: url) ?? URL(fileURLWithPath: url)
            configuration.endpoints = [
                ConnectivityEndpoint(url: parsed, expectation: expectation, headers: headers, method: method)
            ]
        }
    }

    static func api(_ text: String) -> Change {
        { $0.captivePortalAPI = URL(string: text) ?? URL(fileURLWithPath: text) }
    }

    static let badURLs: [(String, String, String?)] = [
        ("ftp scheme", "ftp://127.0.0.1/", "http or https"),
        ("file scheme", "file:///etc/passwd", "http or https"),
        ("javascript scheme", "javascript:alert(1)", "http or https"),
        ("data scheme", "data:text/plain,x", "http or https"),
        ("no scheme", "127.0.0.1/x", "http or https"),
        ("no host", "http://", "no host"),
        ("empty authority", "http:///x", "no host"),
        ("NUL host", "http://%00/", "control characters"),
        ("space in the host", "http://a%20b/", "spaces"),
        ("tab in the host", "http://a%09b/", "control characters"),
        ("port 0", "http://127.0.0.1:0/", "port"),
        ("port 65536", "http://127.0.0.1:65536/", "port"),
        ("port 99999", "http://127.0.0.1:99999/", "port"),
        ("port 2^64+1", "http://127.0.0.1:18446744073709551617/", "port"),
        ("IPv6 port 99999", "http://[::1]:99999/", "port"),
        // Probes never send a URL's credentials; the message does not repeat them.
        ("userinfo", "http://user:pass@127.0.0.1:8080/", "has a user name or password"),
        ("a user name alone", "http://user@127.0.0.1/", "has a user name or password"),
        ("9 KiB URL", "http://127.0.0.1/" + String(repeating: "a", count: 9000), "limit is 8192"),
        ("100 kB host", "http://" + String(repeating: "a", count: 100_000) + "/", "limit is 8192"),
    ]

    static let settingCases: [Input<Change>] = [
        Input("threshold -1", { $0.successThreshold = -1 }, says: "successThreshold"),
        Input("threshold just over 100", { $0.successThreshold = 100.000_001 }, says: "successThreshold"),
        Input("threshold NaN", { $0.successThreshold = .nan }, says: "successThreshold"),
        Input("threshold signaling NaN", { $0.successThreshold = .signalingNaN }, says: "successThreshold"),
        Input("threshold +inf", { $0.successThreshold = .infinity }, says: "successThreshold"),
        Input("threshold -inf", { $0.successThreshold = -.infinity }, says: "successThreshold"),
        Input("threshold 1e300", { $0.successThreshold = 1e300 }, says: "successThreshold"),
        Input(
            "threshold tiny negative", { $0.successThreshold = -.leastNonzeroMagnitude }, says: "successThreshold"),
        Input("probeTimeout zero", { $0.probeTimeout = .zero }, says: "probeTimeout"),
        Input("probeTimeout -1 ns", { $0.probeTimeout = .nanoseconds(-1) }, says: "probeTimeout"),
        Input("probeTimeout Int64.min s", { $0.probeTimeout = .seconds(Int64.min) }, says: "probeTimeout"),
        Input("probeTimeout Int64.max s", { $0.probeTimeout = .seconds(Int64.max) }, says: "probeTimeout"),
        Input(
            "probeTimeout a week and 1 ns", { $0.probeTimeout = .seconds(7 * 86_400) + .nanoseconds(1) },
            says: "probeTimeout"),
        Input(
            "checkDeadline largest Duration",
            { $0.checkDeadline = Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999) },
            says: "checkDeadline"),
        Input("checkDeadline -1 s", { $0.checkDeadline = .seconds(-1) }, says: "checkDeadline"),
        Input("pollingInterval zero", { $0.pollingInterval = .zero }, says: "pollingInterval"),
        Input("pollingInterval Int64.max s", { $0.pollingInterval = .seconds(Int64.max) }, says: "pollingInterval"),
        Input(
            "offlineRetryInitial negative", { $0.offlineRetryInitial = .seconds(-5) }, says: "offlineRetryInitial"),
        Input("offlineRetryLimit huge", { $0.offlineRetryLimit = .seconds(Int64.max) }, says: "offlineRetryLimit"),
        Input(
            "retry initial above the limit",
            {
                $0.offlineRetryInitial = .seconds(10)
                $0.offlineRetryLimit = .seconds(1)
            }, says: "offlineRetryInitial"),
        Input("maximumBodySize -1", { $0.maximumBodySize = -1 }, says: "maximumBodySize"),
        Input("maximumBodySize Int.min", { $0.maximumBodySize = .min }, says: "maximumBodySize"),
        Input("maximumBodySize Int.max", { $0.maximumBodySize = .max }, says: "maximumBodySize"),
        Input("maximumBodySize 16 MiB + 1", { $0.maximumBodySize = (16 << 20) + 1 }, says: "maximumBodySize"),
        Input("failuresToGoOffline 0", { $0.failuresToGoOffline = 0 }, says: "failuresToGoOffline"),
        Input("failuresToGoOffline Int.min", { $0.failuresToGoOffline = .min }, says: "failuresToGoOffline"),
        Input("no endpoints", { $0.endpoints = [] }, says: "empty"),
        Input("httpsOnly with only plain HTTP", { $0.httpsOnly = true }, says: "httpsOnly"),
        Input("method empty", endpoint(method: ""), says: "HTTP method"),
        Input("method lowercase", endpoint(method: "get"), says: "HTTP method"),
        Input("method with NUL", endpoint(method: "GET\u{0}"), says: "HTTP method"),
        Input("method with spaces", endpoint(method: "G E T"), says: "HTTP method"),
        Input("method with CRLF", endpoint(method: "GET\r\nX"), says: "HTTP method"),
        Input("method non-ASCII", endpoint(method: "ÄÖ"), says: "HTTP method"),
        Input("method 100 kB", endpoint(method: String(repeating: "G", count: 100_000)), says: "HTTP method"),
        Input("header name empty", endpoint(headers: ["": "x"]), says: "bad header"),
        Input("header name with NUL", endpoint(headers: ["a\u{0}b": "x"]), says: "bad header"),
        Input("header name with space", endpoint(headers: ["Bad Name": "x"]), says: "bad header"),
        Input("header name with colon", endpoint(headers: ["X:Y": "x"]), says: "bad header"),
        Input("header name non-ASCII", endpoint(headers: ["Ä": "x"]), says: "bad header"),
        Input("header value with NUL", endpoint(headers: ["X": "a\u{0}b"]), says: "bad header"),
        Input("header value with CRLF", endpoint(headers: ["X": "a\r\nInjected: 1"]), says: "bad header"),
        Input("header value with DEL", endpoint(headers: ["X": "\u{7F}"]), says: "bad header"),
        Input("header value 100 kB", endpoint(headers: ["X": hundredKB]), says: "over 8192 bytes"),
        Input("header name 100 kB", endpoint(headers: [hundredKB: "x"]), says: "over 8192 bytes"),
        Input("status -1", endpoint(expectation: .status(-1)), says: "not an HTTP status"),
        Input("status 0", endpoint(expectation: .status(0)), says: "not an HTTP status"),
        Input("status 99", endpoint(expectation: .status(99)), says: "not an HTTP status"),
        Input("status 600", endpoint(expectation: .status(600)), says: "not an HTTP status"),
        Input("status Int.max", endpoint(expectation: .status(.max)), says: "not an HTTP status"),
        Input("status Int.min", endpoint(expectation: .status(.min)), says: "not an HTTP status"),
        Input("regex unclosed", endpoint(expectation: .bodyMatches("([unclosed")), says: "regular expression"),
        Input("regex reversed range", endpoint(expectation: .bodyMatches("[z-a]")), says: "regular expression"),
        Input("regex lone backslash", endpoint(expectation: .bodyMatches("\\")), says: "regular expression"),
        Input(
            "bodyEquals longer than the body cap", endpoint(expectation: .bodyEquals(hundredKB)),
            says: "maximumBodySize"),
        Input(
            "bodyContains longer than the body cap", endpoint(expectation: .bodyContains(hundredKB)),
            says: "maximumBodySize"),
        Input("userAgent with NUL", { $0.userAgent = "a\u{0}b" }, says: "userAgent"),
        Input("userAgent with CRLF", { $0.userAgent = "a\r\nX: y" }, says: "userAgent"),
        Input("userAgent 100 kB", { $0.userAgent = hundredKB }, says: "userAgent"),
        Input(
            "trust roots: empty path", { $0.trustedRootCertificatesPath = "" }, says: "trustedRootCertificatesPath"),
        Input(
            "trust roots: missing file", { $0.trustedRootCertificatesPath = "/nonexistent/roots.pem" },
            says: "trustedRootCertificatesPath"),
        Input(
            "trust roots: /dev/null", { $0.trustedRootCertificatesPath = "/dev/null" }, says: "regular file"),
        Input(
            "trust roots: /dev/zero (never ends)", { $0.trustedRootCertificatesPath = "/dev/zero" },
            says: "regular file"),
        Input("trust roots: a directory", { $0.trustedRootCertificatesPath = "/" }, says: "regular file"),
        Input("trust roots: a FIFO", { $0.trustedRootCertificatesPath = Files.scratch.fifo }, says: "regular file"),
        Input(
            "trust roots: not PEM", { $0.trustedRootCertificatesPath = Files.scratch.garbage }, says: "not a PEM file"),
        Input(
            "trust roots: NUL after a real file", { $0.trustedRootCertificatesPath = Files.certificate + "\u{0}x" },
            says: "trustedRootCertificatesPath"),
        Input(
            "trust roots: 100 kB path", { $0.trustedRootCertificatesPath = "/" + hundredKB },
            says: "trustedRootCertificatesPath"),
        Input(
            "environment: NUL in the namespace path",
            { $0.environment = NetworkEnvironment(networkNamespacePath: "/proc/self/ns/net\u{0}x") }, says: "NUL"),
        Input(
            "environment: empty sysfs root", { $0.environment = NetworkEnvironment(sysfsRoot: "") }, says: "sysfs"),
    ]

    static let endpointURLCases: [Input<Change>] = badURLs.map { name, url, says in
        Input("endpoint URL: \(name)", endpoint(url), says: says)
    }

    static let captiveAPICases: [Input<Change>] = badURLs.map { name, url, says in
        Input("captive API URL: \(name)", api(url), says: says)
    }

    static let badConfigurations: [Input<Change>] = settingCases + endpointURLCases + captiveAPICases

    @Test(
        "validate() and Connectivity(validating:) refuse a malformed setting, naming it",
        arguments: badConfigurations)
    func badConfiguration(_ input: Input<Change>) {
        var configuration = ConnectivityConfiguration(endpoints: [Self.good])
        input.value(&configuration)
        let validated = #expect(throws: ConnectivityError.self) { try configuration.validate() }
        let made = #expect(throws: ConnectivityError.self) { try Connectivity(validating: configuration) }
        for error in [validated, made].compactMap({ $0 }) {
            #expect(!error.message.isEmpty)
            #expect(error.description.utf8.count < 10_000, "a bounded message: \(error.description.prefix(200))")
            if let says = input.says {
                #expect(error.message.contains(says), "\(error.message.prefix(300))")
            }
        }
    }

    @Test("A trust-roots file over 16 MiB is refused by its size, unread; one of exactly 16 MiB is read whole")
    func trustRootsOver16MiB() throws {
        let limit = ConnectivityConfiguration.trustRootsLimit
        #expect(limit == 16 << 20)
        // Sparse: a certificate, then zeros to the size (no disk space taken).
        let over = ScratchFiles.sparse(
            at: Files.scratch.directory + "/over.pem", size: limit + 1, startingWith: Array(Files.pem.utf8))
        let exact = ScratchFiles.sparse(at: Files.scratch.directory + "/exact.pem", size: limit)
        let faults = SystemCallFaults()
        var configuration = ConnectivityConfiguration(endpoints: [Self.good])
        configuration.environment.systemCalls = SystemCalls(faults: faults)
        configuration.trustedRootCertificatesPath = over
        // A read of it would fail: the rule counts any.
        let reads = faults.inject(.read, errno: EIO, count: .always, matching: .path(over))
        let refused = #expect(throws: ConnectivityError.self) { try configuration.validate() }
        #expect(refused?.code == .invalidConfiguration)
        #expect(
            refused?.message.contains("has \(limit + 1) bytes, the limit is \(limit)") == true,
            "\(refused?.message ?? "")")
        #expect(faults.fired(reads) == 0, "refused by its size: not a byte read")
        configuration.trustedRootCertificatesPath = exact
        let read = #expect(throws: ConnectivityError.self) { try configuration.validate() }
        #expect(read?.message.contains("is not a PEM file") == true, "read whole: \(read?.message ?? "")")
    }

    @Test("No descriptor left to open the trust-roots file: an error naming the file and the cause, not a crash")
    func trustRootsWithoutDescriptors() throws {
        let faults = SystemCallFaults()
        var configuration = ConnectivityConfiguration(endpoints: [Self.good])
        configuration.environment.systemCalls = SystemCalls(faults: faults)
        configuration.trustedRootCertificatesPath = Files.certificate
        try configuration.validate()
        for errno in [EMFILE, ENFILE] {
            let rule = faults.inject(.open, errno: errno, count: .always, matching: .path(Files.certificate))
            let cause = String(cString: strerror(errno))
            let validated = #expect(throws: ConnectivityError.self) { try configuration.validate() }
            let made = #expect(throws: ConnectivityError.self) { try Connectivity(validating: configuration) }
            let notifier = Connectivity(configuration: configuration).lastError
            for error in [validated, made, notifier] {
                #expect(error?.message.contains("trustedRootCertificatesPath") == true)
                #expect(error?.message.contains(Files.certificate) == true)
                #expect(error?.message.contains("can't be opened: \(cause)") == true, "\(error?.message ?? "none")")
            }
            #expect(faults.fired(rule) > 0)
            faults.remove(rule)
        }
        try configuration.validate()
    }

    static let goodConfigurations: [Input<Change>] = [
        Input("threshold 0", { $0.successThreshold = 0 }),
        Input("threshold 100", { $0.successThreshold = 100 }),
        Input("maximumBodySize 0", { $0.maximumBodySize = 0 }),
        Input("probeTimeout exactly a week", { $0.probeTimeout = .seconds(7 * 86_400) }),
        Input("probeTimeout 1 ns", { $0.probeTimeout = .nanoseconds(1) }),
        Input("failuresToGoOffline Int.max", { $0.failuresToGoOffline = .max }),
        Input("port 65535", endpoint("http://127.0.0.1:65535/")),
        Input("port 1", endpoint("http://127.0.0.1:1/")),
        Input("empty port (the default)", endpoint("http://127.0.0.1:/")),
        Input("bracketed IPv6 with a port", endpoint("https://[::1]:8443/x?y=1#z")),
        Input("header value with obs-text and a tab", endpoint(headers: ["X-Name": "é\tü"])),
        Input("empty header value", endpoint(headers: ["X-Empty": ""])),
        Input("method with a dash", endpoint(method: "M-SEARCH")),
        Input("empty expected body", endpoint(expectation: .bodyEquals(""))),
        Input(
            "expected body exactly the cap", endpoint(expectation: .bodyContains(String(repeating: "x", count: 65_536)))
        ),
        Input("trust roots: a PEM certificate", { $0.trustedRootCertificatesPath = Files.certificate }),
        Input("URL exactly 8 KiB", endpoint("http://127.0.0.1/" + String(repeating: "a", count: 8192 - 17))),
    ]

    @Test("Values at the documented limits are accepted (the checks above can pass)", arguments: goodConfigurations)
    func goodConfiguration(_ input: Input<Change>) throws {
        var configuration = ConnectivityConfiguration(endpoints: [Self.good])
        input.value(&configuration)
        try configuration.validate()
        _ = try Connectivity(validating: configuration)
    }

    // MARK: The RFC 8908 parser

    static let garbageJSON: [Input<[UInt8]>] = [
        Input("empty", []),
        Input("NUL", [0]),
        Input("invalid UTF-8", [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x74, 0x7D]),
        Input("a lone surrogate escape", Array(#"{"captive": true, "\uD800": 1}"#.utf8)),
        Input("captive null", Array(#"{"captive": null}"#.utf8)),
        Input("captive as a string", Array(#"{"captive": "true"}"#.utf8)),
        Input("captive as 1", Array(#"{"captive": 1}"#.utf8)),
        Input("top-level array", Array(#"[{"captive": true}]"#.utf8)),
        Input("trailing garbage", Array(#"{"captive": true} x"#.utf8)),
        Input("1 MB of spaces", [UInt8](repeating: 0x20, count: 1 << 20)),
        Input(
            "100,000 nested arrays inside an object",
            Array(#"{"captive": true, "x": "#.utf8) + [UInt8](repeating: 0x5B, count: 100_000)
                + [UInt8](repeating: 0x5D, count: 100_000) + [0x7D]),
        Input(
            "100,000 nested objects",
            Array(String(repeating: #"{"a":"#, count: 100_000).utf8) + Array(#"{"captive": true}"#.utf8)
                + [UInt8](repeating: 0x7D, count: 100_000)),
        Input("100,000 unclosed braces", [UInt8](repeating: 0x7B, count: 100_000)),
    ]

    @Test("CaptivePortalAPIResponse(json:) is nil for garbage, never a crash", arguments: garbageJSON)
    func garbageJSONIsNil(_ input: Input<[UInt8]>) {
        #expect(CaptivePortalAPIResponse(json: input.value) == nil)
    }

    @Test("CaptivePortalAPIResponse(json:): 300 random byte strings (seeded) are nil")
    func randomBytesAreNil() {
        var state: UInt64 = 0x5EED_BAD1_4B07
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for round in 0..<300 {
            let count = Int(next() % 2048)
            // Half of them start like the real thing, so the parser gets past the first byte.
            let prefix = round.isMultiple(of: 2) ? Array(#"{"captive": "#.utf8) : []
            let bytes = prefix + (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
            #expect(CaptivePortalAPIResponse(json: bytes) == nil, "round \(round)")
        }
    }

    @Test("Odd but well-formed fields: ignored URLs and numbers, the object still parsed")
    func oddFields() throws {
        func parse(_ text: String) throws -> CaptivePortalAPIResponse {
            try #require(CaptivePortalAPIResponse(json: Array(text.utf8)))
        }
        let nul = try parse(#"{"captive": true, "user-portal-url": "http://a\u0000b/", "seconds-remaining": -5}"#)
        #expect(nul.captive && nul.userPortalURL == nil, "a URL with NUL is no URL")
        #expect(nul.secondsRemaining == nil, "a negative count of seconds is ignored")
        let huge = try parse(
            #"{"captive": true, "user-portal-url": "http://x.test/"# + String(repeating: "a", count: 1 << 20)
                + #"", "seconds-remaining": 1e400}"#)
        #expect(huge.userPortalURL == nil, "a 1 MB URL is ignored")
        #expect(huge.secondsRemaining == nil)
        let fractional = try parse(#"{"captive": false, "seconds-remaining": 2.5, "venue-info-url": 7}"#)
        #expect(fractional.secondsRemaining == nil && fractional.venueInfoURL == nil)
        let overflow = try parse(#"{"captive": false, "seconds-remaining": 9223372036854775808}"#)
        #expect(overflow.secondsRemaining == nil)
        let maximum = try parse(#"{"captive": false, "seconds-remaining": 9223372036854775807}"#)
        #expect(maximum.secondsRemaining == Int.max)
        #expect(try parse(#"{"captive": true, "captive": true}"#).captive)
        // RFC 8259 forbids raw control characters in strings; the decoder takes them, harmlessly.
        #expect(try parse("{\"captive\": true, \"x\": \"a\u{1}b\"}").captive)
        let escaped = try parse(#"{"captive": true, "user-portal-url": "https:\/\/login.test\/p?a=1&b=%20"}"#)
        #expect(escaped.userPortalURL == URL(string: "https://login.test/p?a=1&b=%20"))
    }

    // MARK: Plain values

    @Test("EndpointResult.milliseconds saturates instead of overflowing")
    func millisecondsSaturate() {
        func millis(_ duration: Duration) -> Int {
            EndpointResult(url: Self.good.url, isValid: false, duration: duration, attempts: 1).milliseconds
        }
        #expect(millis(.milliseconds(1500)) == 1500)
        #expect(millis(.seconds(Int64.max)) == Int.max)
        #expect(millis(Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999)) == Int.max)
        #expect(millis(.seconds(-1)) == 0)
        #expect(millis(.seconds(Int64.min)) == 0)
    }

    @Test("Probe responses with out-of-range statuses, odd headers and invalid UTF-8 are judged, not trapped on")
    func oddResponses() {
        let url = Self.good.url
        for status in [Int.min, -1, 0, 99, 600, Int.max] {
            let response = ProbeResponse(url: url, status: status)
            #expect(!response.isSuccess)
            #expect(ConnectivityEndpoint.Expectation.status(204).check(response) != nil)
            #expect(ConnectivityEndpoint.Expectation.bodyContains("").check(response) != nil, "needs a 2xx")
        }
        let odd = ProbeResponse(
            url: url, status: 200,
            headers: [.init(name: "", value: "empty name"), .init(name: "X\u{0}Y", value: "\u{0}")],
            body: [0xFF, 0xFE, 0x6F, 0x6B, 0xC3])
        #expect(odd.header("") == "empty name")
        #expect(odd.header("x\u{0}y") == "\u{0}")
        #expect(odd.header("missing") == nil)
        #expect(odd.bodyText.contains("ok") && odd.bodyText.contains("\u{FFFD}"), "invalid bytes are replaced")
        #expect(ConnectivityEndpoint.Expectation.bodyContains("ok").check(odd) == nil)
        #expect(ConnectivityEndpoint.Expectation.bodyMatches("(").check(odd) != nil, "a bad pattern fails, no trap")
        #expect(ConnectivityEndpoint.Expectation.header(name: "", value: "empty name").check(odd) == nil)
    }
}
