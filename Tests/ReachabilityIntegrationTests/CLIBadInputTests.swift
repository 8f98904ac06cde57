import Foundation
import Reachability
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// One malformed command line, named for the test report (a 100 kB argument
/// would otherwise be printed whole): the value is the arguments, and `says` a
/// fragment stderr must contain, when one is meaningful (the option's name).
typealias BadCommand = Input<[String]>

extension BadCommand {
    var arguments: [String] { value }
}

/// Where the bad-input cases run: one namespace with only loopback, which no case
/// changes. Even an argument that slipped through validation could reach nothing
/// but loopback (and there, port 9 refuses).
private enum Sandbox {
    static let namespace: TestNamespace? = try? TestNamespace()

    /// A directory, a FIFO with no writer and a file that is not PEM.
    static let files = ScratchFiles(directoryName: "reachability-cli-bad-input-tests")

    /// Runs the CLI in the namespace; a run that outlives `limit` seconds is killed
    /// (SIGKILL: status 137), so a hang shows up as a failed case, not a stuck suite.
    static func run(_ arguments: [String], limit: Double = 60) throws -> Command.Output {
        let namespace = try #require(namespace, "a namespace for the CLI")
        let child = try Child(["nsenter", "--net=\(namespace.path)", "--", CLI.path] + arguments, captureOutput: true)
        child.closeInput()
        let watchdog = DispatchWorkItem { if child.isRunning { child.signal(SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        let (out, err) = child.readAll()
        let status = child.wait()
        watchdog.cancel()
        return Command.Output(status: status, stdout: out, stderr: err)
    }
}

/// The hardening sweep over the CLI: every subcommand and option fed malformed
/// values — empty, huge (100 kB), out-of-range numbers (1e300, -1, nan, inf, 0
/// where forbidden), the wrong address family, bad URLs, ports and headers, a
/// trust-roots file that is missing, not PEM, a device or a FIFO — exits 2 with a
/// message on stderr, prints nothing on stdout, and is never killed by a signal.
///
/// NUL bytes can't be passed: argv entries are C strings, so execve would end
/// the argument at the NUL. The library's tests (`BadInputTests` in
/// ReachabilityTests and ConnectivityTests) cover NUL through the API instead.
/// (There is no `--netns` option; namespace paths are covered there too.)
@Suite("The CLI refuses malformed arguments with exit 2", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIBadInputTests {
    static let huge = String(repeating: "a", count: 100_000)
    static let hugeNumber = String(repeating: "9", count: 100_000)
    /// A URL that passes validation: nothing listens on the discard port.
    static let url = "http://127.0.0.1:9/"

    static let targets: [(String, String, String?)] = [
        ("empty", "", "empty"),
        ("100 kB", huge, "limit is 253"),
        ("empty label", "a..b", "empty label"),
        ("root only", ".", "empty label"),
        ("64-byte label", String(repeating: "a", count: 64) + ".example", "limit is 63"),
        ("254 bytes", String(repeating: "abcd.", count: 50) + "abcd", "254 bytes"),
        ("space", "bad host", "a space"),
        ("tab", "tab\there", "U+9"),
        ("newline", "line\nfeed", "U+A"),
        ("escape sequence", "\u{1B}[31mred", "U+1B"),
        ("DEL", "del\u{7F}", "U+7F"),
        ("octet 256", "256.1.1.1", "256.1.1.1"),
        ("three parts", "1.2.3", "1.2.3"),
        ("trailing dot on an address", "1.2.3.4.", "1.2.3.4."),
        ("twenty digits", "99999999999999999999", nil),
        ("zone on IPv4", "192.0.2.1%lo", "link-local"),
        ("zone on a global IPv6 address", "2001:db8::1%1", "link-local"),
        ("unknown zone", "fe80::1%no-such-if0", "no interface"),
        ("unclosed bracket", "[::1", nil),
        ("mapped octet 256", "::ffff:256.1.1.1", nil),
        ("three colons", ":::", nil),
        ("nine groups", "1:2:3:4:5:6:7:8:9", nil),
        ("a URL", "http://example.com/", nil),
        ("C1 CSI", "a\u{9B}31m", "U+9B"),
        ("right-to-left override", "a\u{202E}b", "U+202E"),
        // `@` is in no hostname: the Internet's name misspelt is not looked up (for a timeout).
        ("@Internet", "@Internet", "did you mean @internet?"),
        ("@internet.", "@internet.", "did you mean @internet?"),
        ("@ alone", "@", "did you mean @internet?"),
        ("an address with @", "user@example.com", "`@` is in no hostname"),
    ]

    static let seconds: [(String, [String])] = [
        ("nan", ["nan"]), ("NaN", ["NaN"]), ("inf", ["inf"]), ("-inf", ["-inf"]), ("1e300", ["1e300"]),
        ("a year and a second", ["31536001"]), ("empty", [""]), ("not a number", ["abc"]), ("0x", ["0x"]),
        ("-1 as the next argument", ["-1"]), ("100 kB of digits", [hugeNumber]), ("missing", []),
    ]

    /// (name, URL, what the message says).
    static let badURLs: [(String, String, String)] = [
        ("empty", "", "is not a URL"), ("not a URL", "not a url at all", "http or https"),
        ("ftp", "ftp://127.0.0.1/", "http or https"), ("file", "file:///etc/passwd", "http or https"),
        ("javascript", "javascript:alert(1)", "http or https"), ("no host", "http://", "has no host"),
        ("empty authority", "http:///x", "has no host"), ("NUL host", "http://%00/", "control characters"),
        ("space in the host", "http://a%20b/", "spaces"), ("port 0", "http://127.0.0.1:0/", "not 1 to 65535"),
        ("port 65536", "http://127.0.0.1:65536/", "not 1 to 65535"),
        ("port 99999", "http://127.0.0.1:99999/", "not 1 to 65535"),
        ("port 2^64+1", "http://127.0.0.1:18446744073709551617/", "not 1 to 65535"),
        ("port -1", "http://127.0.0.1:-1/", "is not a URL"), ("unclosed IPv6 bracket", "http://[::1", "is not a URL"),
        ("IPv6 port 99999", "http://[::1]:99999/", "not 1 to 65535"), ("100 kB", "http://" + huge + "/", "8192"),
        ("credentials", "http://user:SECRET@127.0.0.1/", "user name or password"),
    ]

    static let status: [BadCommand] =
        targets.map { BadCommand("status: target \($0.0)", ["status", $0.1], says: $0.2) }
        + seconds.map { BadCommand("status --timeout \($0.0)", ["status", "--timeout"] + $0.1, says: "timeout") }
        + [
            BadCommand("default subcommand: empty target", [""], says: "empty"),
            BadCommand("default subcommand: 100 kB target", [huge], says: "limit is 253"),
            BadCommand("status --timeout=-1", ["status", "--timeout=-1"], says: "timeout"),
            BadCommand("status: two targets", ["status", "127.0.0.1", "127.0.0.2"]),
            BadCommand("status --json=yes", ["status", "--json=yes"], says: "json"),
            BadCommand("status: unknown option", ["status", "--no-such-option"], says: "no-such-option"),
            BadCommand("unknown option, no subcommand", ["--no-such-option"], says: "no-such-option"),
            BadCommand("status: 100 kB unknown option", ["status", "--" + huge]),
        ]

    static let watch: [BadCommand] = [
        BadCommand("watch: empty target", ["watch", ""], says: "empty"),
        BadCommand("watch: a good target, then an empty one", ["watch", "127.0.0.1", ""], says: "empty"),
        BadCommand("watch: 100 kB target", ["watch", "::1", huge], says: "limit is 253"),
        BadCommand("watch: octet 256", ["watch", "999.1.1.1"], says: "999.1.1.1"),
        BadCommand("watch: zone on IPv4", ["watch", "192.0.2.1%lo"], says: "link-local"),
        BadCommand("watch: control character", ["watch", "a\u{1}b"], says: "U+1"),
        BadCommand("watch: @internet.", ["watch", "@internet."], says: "did you mean @internet?"),
        BadCommand("watch --json=1", ["watch", "--json=1"], says: "json"),
        BadCommand("watch: no --timeout option", ["watch", "--timeout", "1"], says: "timeout"),
        BadCommand("watch --path=1", ["watch", "--path=1"], says: "path"),
        BadCommand("watch --strict=1", ["watch", "--strict=1"], says: "strict"),
        BadCommand("watch --strict without --connectivity", ["watch", "--strict"], says: "--strict"),
        BadCommand(
            "watch --no-api-discovery without --connectivity", ["watch", "--no-api-discovery"],
            says: "--no-api-discovery"),
        BadCommand(
            "watch --discovery-root without --connectivity", ["watch", "--discovery-root", "/"],
            says: "--discovery-root"),
        BadCommand(
            "watch --fallback-url without --connectivity", ["watch", "--fallback-url", url], says: "--fallback-url"),
        BadCommand(
            "watch --fallbacks-per-check without --connectivity", ["watch", "--fallbacks-per-check", "1"],
            says: "--fallbacks-per-check"),
        BadCommand("watch --connectivity=1", ["watch", "--connectivity=1"], says: "connectivity"),
        BadCommand("watch --proxy without --connectivity", ["watch", "--proxy", "proxy:3128"], says: "--proxy"),
        BadCommand("watch --no-proxy without --connectivity", ["watch", "--no-proxy"], says: "--no-proxy"),
        BadCommand(
            "watch --proxy-credentials-file without --proxy",
            ["watch", "--connectivity", "--proxy-credentials-file", Sandbox.files.garbage], says: "applies with --proxy"
        ),
        BadCommand("watch --url without --connectivity", ["watch", "--url", url], says: "url"),
        BadCommand("watch --captive-api without --connectivity", ["watch", "--captive-api", url], says: "captive-api"),
        BadCommand("watch --https-only without --connectivity", ["watch", "--https-only"], says: "https-only"),
        BadCommand("watch --header without --url", ["watch", "--header", "X: y"], says: "header"),
        BadCommand("watch --expect-status without --url", ["watch", "--expect-status", "204"]),
        BadCommand("watch --expect-body without --url", ["watch", "--expect-body", "ok"]),
        BadCommand(
            "watch --threshold nan", ["watch", "--connectivity", "--threshold", "nan"], says: "successThreshold"),
        BadCommand(
            "watch --probe-timeout 0", ["watch", "--connectivity", "--probe-timeout", "0"], says: "probe-timeout"),
        BadCommand("watch --deadline inf", ["watch", "--connectivity", "--deadline", "inf"], says: "deadline"),
        BadCommand(
            "watch --ca-file /dev/zero", ["watch", "--connectivity", "--ca-file", "/dev/zero"], says: "regular file"),
        BadCommand("watch --connectivity --url ftp", ["watch", "--connectivity", "--url", "ftp://x.test/"]),
    ]

    /// `wait` cases carry `--timeout 1` unless the timeout is the point, so that one
    /// wrongly accepted ends with exit 1 after a second rather than 30.
    static let wait: [BadCommand] =
        seconds.map { BadCommand("wait --timeout \($0.0)", ["wait", "--timeout"] + $0.1, says: "timeout") }
        + [
            ("empty", "", "empty"), ("100 kB", huge, "limit is 253"), ("octet 256", "256.0.0.1", "256.0.0.1"),
            ("@Internet", "@Internet", "did you mean @internet?"),
        ]
        .map { BadCommand("wait: target \($0.0)", ["wait", "--timeout", "1", $0.1], says: $0.2) }
        + [
            ("empty", ""), ("a slash", "a/b"), ("16 bytes", "0123456789abcdef"), ("100 kB", huge), ("dot", "."),
            ("dot dot", ".."), ("space", "eth 0"), ("colon", "eth0:1"), ("tab", "\t"), ("newline", "a\nb"),
        ].map {
            BadCommand("wait --interface \($0.0)", ["wait", "--timeout", "1", "--interface", $0.1], says: "interface")
        }
        + [
            BadCommand("wait --timeout=-1", ["wait", "--timeout=-1"], says: "timeout"),
            BadCommand(
                "wait --interface with a bad state", ["wait", "--timeout", "1", "--interface", "lo:online"],
                says: "not a state"),
            BadCommand("wait --interface with an empty state", ["wait", "--timeout", "1", "-i", "lo:"], says: "state"),
            BadCommand("wait --any without --interface", ["wait", "--timeout", "1", "--any"], says: "--any"),
            BadCommand("wait --dns=yes", ["wait", "--timeout", "1", "--dns=yes"], says: "dns"),
            BadCommand("wait --strict=1", ["wait", "--timeout", "1", "--strict=1"], says: "strict"),
            BadCommand(
                "wait --strict without --connectivity", ["wait", "--timeout", "1", "--strict"], says: "--strict"),
            BadCommand(
                "wait --no-api-discovery without --connectivity", ["wait", "--timeout", "1", "--no-api-discovery"],
                says: "--no-api-discovery"),
            BadCommand(
                "wait --discovery-root without --connectivity", ["wait", "--timeout", "1", "--discovery-root", "/"],
                says: "--discovery-root"),
            BadCommand(
                "wait --fallback-url without --connectivity", ["wait", "--timeout", "1", "--fallback-url", url],
                says: "--fallback-url"),
            BadCommand(
                "wait --fallbacks-per-check without --connectivity",
                ["wait", "--timeout", "1", "--fallbacks-per-check", "1"], says: "--fallbacks-per-check"),
            BadCommand("wait --ignore a slash", ["wait", "--timeout", "1", "--ignore", "a/b"], says: "ignore"),
            BadCommand(
                "wait --proxy without --connectivity", ["wait", "--timeout", "1", "--proxy", "proxy:3128"],
                says: "--proxy"),
            BadCommand(
                "wait --no-proxy without --connectivity", ["wait", "--timeout", "1", "--no-proxy"], says: "--no-proxy"),
            BadCommand(
                "wait --proxy-credentials-file missing",
                [
                    "wait", "--timeout", "1", "--connectivity", "--proxy", "proxy:3128", "--proxy-credentials-file",
                    "/nonexistent/credentials",
                ], says: "not a readable regular file"),
            BadCommand(
                "wait --ignore with --interface", ["wait", "--timeout", "1", "--ignore", "lo", "-i", "lo"],
                says: "--ignore"),
            BadCommand(
                "wait --ignore with a target", ["wait", "--timeout", "1", "--ignore", "lo", "::1"], says: "::1"),
            BadCommand("wait --ipv4 --ipv6", ["wait", "--timeout", "1", "--ipv4", "--ipv6"], says: "ipv6"),
            BadCommand("wait --ipv4 with a target", ["wait", "--timeout", "1", "--ipv4", "127.0.0.1"], says: "ipv4"),
            BadCommand("wait --ipv6 with a target", ["wait", "--timeout", "1", "--ipv6", "::1"], says: "ipv6"),
            BadCommand(
                "wait --connectivity with a target", ["wait", "--timeout", "1", "--connectivity", "127.0.0.1"],
                says: "connectivity"),
            BadCommand(
                "wait --connectivity --interface", ["wait", "--timeout", "1", "--connectivity", "--interface", "lo"],
                says: "connectivity"),
            BadCommand(
                "wait --connectivity --ipv4", ["wait", "--timeout", "1", "--connectivity", "--ipv4"],
                says: "connectivity"),
            BadCommand("wait --url without --connectivity", ["wait", "--timeout", "1", "--url", url], says: "url"),
            BadCommand(
                "wait --captive-api without --connectivity", ["wait", "--timeout", "1", "--captive-api", url],
                says: "captive-api"),
            BadCommand("wait --https-only without --connectivity", ["wait", "--timeout", "1", "--https-only"]),
            BadCommand("wait --header without --url", ["wait", "--timeout", "1", "--header", "X: y"], says: "header"),
            BadCommand(
                "wait --expect-status without --url", ["wait", "--timeout", "1", "--expect-status", "204"],
                says: "apply to --url"),
            BadCommand(
                "wait --expect-body without --url", ["wait", "--timeout", "1", "--expect-body", "ok"],
                says: "apply to --url"),
            BadCommand(
                "wait --threshold nan", ["wait", "--timeout", "1", "--threshold", "nan"], says: "successThreshold"),
            BadCommand(
                "wait --connectivity --threshold 101",
                ["wait", "--timeout", "1", "--connectivity", "--threshold", "101"], says: "successThreshold"),
            BadCommand(
                "wait --connectivity --url ftp",
                ["wait", "--timeout", "1", "--connectivity", "--url", "ftp://x.test/"],
                says: "http or https"),
            BadCommand(
                "wait --connectivity --ca-file /dev/zero",
                ["wait", "--timeout", "1", "--connectivity", "--ca-file", "/dev/zero"], says: "regular file"),
            BadCommand(
                "wait --connectivity --probe-timeout 0",
                ["wait", "--timeout", "1", "--connectivity", "--probe-timeout", "0"], says: "probe-timeout"),
            BadCommand(
                "wait --connectivity --deadline inf",
                ["wait", "--timeout", "1", "--connectivity", "--deadline", "inf"],
                says: "deadline"),
        ]

    static let exporter: [BadCommand] =
        [
            ("no port", "127.0.0.1"), ("a name", "localhost:9469"), ("port 65536", "127.0.0.1:65536"),
            ("empty port", "127.0.0.1:"), ("no bracket", "[::1:9469"), ("IPv6 bare", "::1:9469"),
            ("signed port", "127.0.0.1:+80"), ("empty", ""), ("100 kB", huge),
        ].map { BadCommand("exporter --listen \($0.0)", ["exporter", "--listen", $0.1], says: "--listen") }
        + [
            BadCommand("exporter: bad target", ["exporter", "999.1.1.1"], says: "999.1.1.1"),
            BadCommand("exporter: @Internet", ["exporter", "@Internet"], says: "did you mean @internet?"),
            BadCommand("exporter: a target twice", ["exporter", "::1", "::1"], says: "twice"),
            BadCommand("exporter --url without --connectivity", ["exporter", "--url", url], says: "url"),
            BadCommand("exporter --connectivity --url ftp", ["exporter", "--connectivity", "--url", "ftp://x.test/"]),
            BadCommand("exporter --connectivity=1", ["exporter", "--connectivity=1"], says: "connectivity"),
            BadCommand("exporter: no --json option", ["exporter", "--json"], says: "json"),
            BadCommand("exporter --strict=1", ["exporter", "--strict=1"], says: "strict"),
            BadCommand("exporter --strict without --connectivity", ["exporter", "--strict"], says: "--strict"),
            BadCommand(
                "exporter --no-api-discovery without --connectivity", ["exporter", "--no-api-discovery"],
                says: "--no-api-discovery"),
            BadCommand(
                "exporter --discovery-root without --connectivity", ["exporter", "--discovery-root", "/"],
                says: "--discovery-root"),
            BadCommand(
                "exporter --fallback-url without --connectivity", ["exporter", "--fallback-url", url],
                says: "--fallback-url"),
            BadCommand(
                "exporter --fallbacks-per-check without --connectivity", ["exporter", "--fallbacks-per-check", "1"],
                says: "--fallbacks-per-check"),
            BadCommand(
                "exporter --proxy without --connectivity", ["exporter", "--proxy", "proxy:3128"], says: "--proxy"),
            BadCommand("exporter --no-proxy without --connectivity", ["exporter", "--no-proxy"], says: "--no-proxy"),
            BadCommand(
                "exporter --proxy-credentials-file a FIFO",
                [
                    "exporter", "--connectivity", "--proxy", "proxy:3128", "--proxy-credentials-file",
                    Sandbox.files.fifo,
                ],
                says: "not a readable regular file"),
            BadCommand(
                "exporter --captive-api without --connectivity", ["exporter", "--captive-api", url], says: "captive-api"
            ),
            BadCommand(
                "exporter --https-only without --connectivity", ["exporter", "--https-only"], says: "https-only"),
            BadCommand("exporter --header without --url", ["exporter", "--header", "X: y"], says: "header"),
            BadCommand("exporter --expect-status without --url", ["exporter", "--expect-status", "204"]),
            BadCommand("exporter --expect-body without --url", ["exporter", "--expect-body", "ok"]),
            BadCommand(
                "exporter --threshold nan", ["exporter", "--connectivity", "--threshold", "nan"],
                says: "successThreshold"),
            BadCommand(
                "exporter --probe-timeout 0", ["exporter", "--connectivity", "--probe-timeout", "0"],
                says: "probe-timeout"),
            BadCommand(
                "exporter --deadline inf", ["exporter", "--connectivity", "--deadline", "inf"], says: "deadline"),
            BadCommand(
                "exporter --ca-file /dev/zero", ["exporter", "--connectivity", "--ca-file", "/dev/zero"],
                says: "regular file"),
        ]

    /// `check` cases name a good `--url` unless the URL is the point, so that the
    /// default vendors' endpoints are never in play.
    static let checkURLs: [BadCommand] = badURLs.map { name, value, says in
        BadCommand("check --url \(name)", ["check", "--url", value], says: says)
    }

    static let checkCaptiveAPIs: [BadCommand] = badURLs.map { name, value, says in
        BadCommand("check --captive-api \(name)", ["check", "--url", url, "--captive-api", value], says: says)
    }

    static let checkStatuses: [BadCommand] = [
        ("0", "0", "not an HTTP status"), ("99", "99", "not an HTTP status"), ("600", "600", "not an HTTP status"),
        ("1e300", "1e300", "invalid for '--expect-status"),
        ("2^63", "9223372036854775808", "invalid for '--expect-status"),
        ("nan", "nan", "invalid for '--expect-status"), ("empty", "", "invalid for '--expect-status"),
        ("not a number", "abc", "invalid for '--expect-status"),
        ("100 kB of digits", hugeNumber, "invalid for '--expect-status"),
    ].map { name, value, says in
        BadCommand("check --expect-status \(name)", ["check", "--url", url, "--expect-status", value], says: says)
    }

    static let checkHeaders: [BadCommand] = [
        ("no colon", "no colon", "Name: value"), ("empty name", ": value", "bad header"),
        ("space in the name", "Bad Name: x", "bad header"), ("CRLF in the value", "X: a\r\nY: b", "bad header"),
        ("control character in the value", "X: \u{1}", "bad header"),
        ("DEL in the name", "X\u{7F}: y", "bad header"), ("non-ASCII name", "Ä: x", "bad header"),
        ("100 kB value", "X: " + huge, "over 8192 bytes"), ("empty", "", "Name: value"),
    ].map { name, value, says in
        BadCommand("check --header \(name)", ["check", "--url", url, "--header", value], says: says)
    }

    static let checkThresholds: [BadCommand] = [
        ("nan", "nan", "successThreshold"), ("inf", "inf", "successThreshold"),
        ("just over 100", "100.0001", "successThreshold"), ("1e300", "1e300", "successThreshold"),
        ("=-1", "=-1", "successThreshold"), ("-inf, read as an option", "-inf", "Missing value for '--threshold"),
        ("empty", "", "invalid for '--threshold"),
        ("not a number", "x", "invalid for '--threshold"),
    ].map { name, value, says in
        let arguments = value.hasPrefix("=") ? ["--threshold" + value] : ["--threshold", value]
        return BadCommand("check --threshold \(name)", ["check", "--url", url] + arguments, says: says)
    }

    static let checkDurations: [BadCommand] = ["probe-timeout", "deadline"].flatMap { option in
        [
            ("0", "0", "--\(option) 0.0 is not"), ("nan", "nan", "--\(option) nan is not"),
            ("inf", "inf", "--\(option) inf is not"), ("1e300", "1e300", "is not a duration"),
            ("=-1", "=-1", "--\(option) -1.0 is not"), ("a year and a second", "31536001", "is not a duration"),
            ("empty", "", "invalid for '--\(option)"),
        ].map { name, value, says in
            let arguments = value.hasPrefix("=") ? ["--\(option)" + value] : ["--\(option)", value]
            return BadCommand("check --\(option) \(name)", ["check", "--url", url] + arguments, says: says)
        }
    }

    static let checkCAFiles: [BadCommand] = [
        ("empty path", "", "not a file path"), ("missing file", "/nonexistent.pem", "can't be opened"),
        ("/dev/null", "/dev/null", "regular file"), ("/dev/zero", "/dev/zero", "regular file"),
        ("a directory", "/", "regular file"), ("not PEM", Sandbox.files.garbage, "not a PEM file"),
        ("a FIFO", Sandbox.files.fifo, "regular file"), ("100 kB path", "/" + huge, "can't be opened"),
    ].map { name, value, says in
        BadCommand("check --ca-file \(name)", ["check", "--url", url, "--ca-file", value], says: says)
    }

    static let checkOthers: [BadCommand] = [
        BadCommand(
            "check: a good --url, then a bad one", ["check", "--url", url, "--url", "ftp://x.test/"],
            says: "http or https"),
        BadCommand(
            "check --expect-status=-1", ["check", "--url", url, "--expect-status=-1"], says: "not an HTTP status"),
        BadCommand(
            "check --expect-status and --expect-body",
            ["check", "--url", url, "--expect-status", "204", "--expect-body", "ok"], says: "exclude each other"),
        BadCommand(
            "check --expect-status without --url", ["check", "--expect-status", "204"], says: "apply to --url"),
        BadCommand("check --expect-body without --url", ["check", "--expect-body", "ok"], says: "apply to --url"),
        BadCommand("check --header without --url", ["check", "--header", "X: y"], says: "apply to --url"),
        BadCommand(
            "check --expect-body longer than the body cap", ["check", "--url", url, "--expect-body", huge],
            says: "maximumBodySize"),
        BadCommand(
            "check --https-only with a plain-HTTP --url", ["check", "--url", url, "--https-only"],
            says: "no endpoint uses https"),
        BadCommand("check: a positional argument", ["check", "--url", url, "extra"], says: "Unexpected argument"),
        BadCommand("check --json=1", ["check", "--url", url, "--json=1"]),
        BadCommand("check --strict=1", ["check", "--url", url, "--strict=1"], says: "strict"),
        BadCommand(
            "check --no-api-discovery=1", ["check", "--url", url, "--no-api-discovery=1"], says: "no-api-discovery"),
        BadCommand(
            "check --discovery-root relative", ["check", "--url", url, "--discovery-root", "var/lib"],
            says: "not an absolute path"),
        BadCommand("check --discovery-root empty", ["check", "--url", url, "--discovery-root", ""], says: "absolute"),
        BadCommand(
            "check --discovery-root 100 kB", ["check", "--url", url, "--discovery-root", "/" + huge],
            says: "not an absolute path"),
        BadCommand("check --strict with one vendor", ["check", "--url", url, "--strict"], says: "requiresTwoVendors"),
        BadCommand(
            "check --interface with a slash", ["check", "--url", url, "--interface", "a/b"],
            says: "is not an interface name"),
        BadCommand("check --interface empty", ["check", "--url", url, "--interface", ""], says: "interface name"),
        BadCommand(
            "check --interface of 16 bytes", ["check", "--url", url, "-i", "abcdefghijklmnop"],
            says: "is not an interface name"),
        BadCommand(
            "check --interface with --each-interface", ["check", "--url", url, "-i", "lo", "--each-interface"],
            says: "exclude each other"),
        BadCommand("check --each-interface=1", ["check", "--url", url, "--each-interface=1"]),
        BadCommand("check --fallback-url not a URL", ["check", "--fallback-url", "http://a b/"], says: "fallback"),
        BadCommand(
            "check --fallback-url javascript:", ["check", "--fallback-url", "javascript:alert(1)"],
            says: "is not an http or https URL"),
        BadCommand(
            "check --fallbacks-per-check without --fallback-url", ["check", "--fallbacks-per-check", "1"],
            says: "--fallbacks-per-check applies with --fallback-url"),
        BadCommand(
            "check --proxy with --no-proxy", ["check", "--proxy", "proxy:3128", "--no-proxy"],
            says: "--proxy and --no-proxy exclude each other"),
        BadCommand(
            "check --proxy-credentials-file without --proxy",
            ["check", "--proxy-credentials-file", Sandbox.files.garbage],
            says: "--proxy-credentials-file applies with --proxy"),
        BadCommand(
            "check --proxy-credentials-file /dev/zero",
            ["check", "--proxy", "proxy:3128", "--proxy-credentials-file", "/dev/zero"],
            says: "not a readable regular file"),
        BadCommand(
            "check --proxy-credentials-file over 8 KiB",
            [
                "check", "--proxy", "proxy:3128", "--proxy-credentials-file",
                Sandbox.files.write(
                    "credentials-large", Array("user:".utf8) + Array(repeating: UInt8(ascii: "p"), count: 9000)),
            ], says: "over 8192 bytes"),
        BadCommand(
            "check --proxy-credentials-file without a user:password line (its text never shown)",
            [
                "check", "--proxy", "proxy:3128", "--proxy-credentials-file",
                Sandbox.files.write("credentials-no-colon", Array("hidden-secret\n".utf8)),
            ], says: "user:password"),
        BadCommand(
            "check --proxy with credentials and --proxy-credentials-file",
            [
                "check", "--proxy", "u:hidden@proxy:3128", "--proxy-credentials-file",
                Sandbox.files.write("credentials-good", Array("user:secret\n".utf8)),
            ], says: "--proxy has credentials, and --proxy-credentials-file too"),
        BadCommand(
            "check --proxy socks5 (credentials never shown)", ["check", "--proxy", "socks5://u:hidden@proxy:1080"],
            says: "proxy"),
        BadCommand(
            "check --fallbacks-per-check over the fallbacks",
            ["check", "--fallback-url", url, "--fallbacks-per-check", "2"], says: "fallbacksPerCheck"),
        BadCommand(
            "check --fallbacks-per-check negative", ["check", "--fallback-url", url, "--fallbacks-per-check=-1"],
            says: "fallbacksPerCheck"),
        BadCommand("check -6 with only IPv4 endpoints", ["check", "--url", url, "-6"], says: "none can be probed"),
    ]

    static let check: [BadCommand] =
        checkURLs + checkCaptiveAPIs + checkStatuses + checkHeaders + checkThresholds + checkDurations + checkCAFiles
        + checkOthers

    static let interfaces: [BadCommand] = [
        BadCommand("interfaces: a positional argument", ["interfaces", "extra"]),
        BadCommand("interfaces: a 100 kB positional argument", ["interfaces", huge]),
        BadCommand("interfaces --json=true", ["interfaces", "--json=true"], says: "json"),
        BadCommand("interfaces: no --timeout option", ["interfaces", "--timeout", "1"], says: "timeout"),
    ]

    /// `--namespace` on every subcommand: empty, missing, not a namespace file, a
    /// FIFO (a blocking open would hang), a directory, 100 kB.
    static let namespaces: [BadCommand] = ["status", "watch", "wait", "check", "interfaces", "exporter"].flatMap {
        command in
        [
            BadCommand("\(command) --namespace \"\"", [command, "--namespace", ""], says: "namespace"),
            BadCommand(
                "\(command) --namespace (no such name)", [command, "--namespace", "rtest-no-such-namespace"],
                says: "rtest-no-such-namespace"),
            BadCommand(
                "\(command) --namespace /etc/hostname", [command, "--namespace", "/etc/hostname"], says: "hostname"),
            BadCommand("\(command) --namespace (a FIFO)", [command, "--namespace", Sandbox.files.fifo], says: "fifo"),
            BadCommand(
                "\(command) --namespace (a directory)", [command, "--namespace", Sandbox.files.directory],
                says: "namespace"),
            BadCommand("\(command) --namespace (100 kB)", [command, "--namespace", huge], says: "namespace"),
        ]
    }

    /// `--all-namespaces` and `--namespace-dir` on the subcommands that have them:
    /// a directory without `--all-namespaces`, a relative, empty or over-long one,
    /// none given, `--all-namespaces` with `--namespace` (and on watch and exporter
    /// with `--connectivity`), a value given to the flag, and a bad TARGET (refused
    /// once, not per namespace).
    static let allNamespaces: [BadCommand] =
        ["status", "watch", "interfaces", "exporter"].flatMap { command in
            [
                BadCommand(
                    "\(command) --namespace-dir without --all-namespaces", [command, "--namespace-dir", "/run/netns"],
                    says: "--namespace-dir needs --all-namespaces"),
                BadCommand(
                    "\(command) --all-namespaces --namespace-dir (relative)",
                    [command, "--all-namespaces", "--namespace-dir", "run/netns"],
                    says: "is not an absolute path"),
                BadCommand(
                    "\(command) --all-namespaces --namespace-dir \"\"",
                    [command, "--all-namespaces", "--namespace-dir", ""],
                    says: "is not an absolute path"),
                BadCommand(
                    "\(command) --all-namespaces --namespace-dir (100 kB)",
                    [command, "--all-namespaces", "--namespace-dir", "/" + huge], says: "is not an absolute path"),
                BadCommand(
                    "\(command) --all-namespaces --namespace-dir (no value)",
                    [command, "--all-namespaces", "--namespace-dir"],
                    says: "namespace-dir"),
                BadCommand(
                    "\(command) --all-namespaces --namespace",
                    [command, "--all-namespaces", "--namespace", "/proc/self/ns/net"],
                    says: "--all-namespaces and --namespace exclude each other"),
                BadCommand(
                    "\(command) --all-namespaces=yes", [command, "--all-namespaces=yes"], says: "all-namespaces"),
            ]
        } + [
            BadCommand(
                "watch --all-namespaces --connectivity", ["watch", "--all-namespaces", "--connectivity"],
                says: "--connectivity and --all-namespaces exclude each other"),
            BadCommand(
                "status --all-namespaces: two targets", ["status", "--all-namespaces", "127.0.0.1", "127.0.0.2"]),
            BadCommand(
                "status --all-namespaces: a bad target", ["status", "--all-namespaces", "999.1.1.1"], says: "999.1.1.1"),
            BadCommand("watch --all-namespaces: a bad target", ["watch", "--all-namespaces", ""], says: "empty"),
            BadCommand(
                "exporter --all-namespaces --connectivity", ["exporter", "--all-namespaces", "--connectivity"],
                says: "--connectivity and --all-namespaces exclude each other"),
            BadCommand(
                "exporter --all-namespaces: a bad target", ["exporter", "--all-namespaces", "a..b"],
                says: "empty label"),
        ]

    static let all = status + watch + wait + check + interfaces + exporter + namespaces + allNamespaces

    @Test("Exit 2, a message on stderr, nothing on stdout, no signal", arguments: all)
    func refused(_ command: BadCommand) async throws {
        let output = try await offPool { try Sandbox.run(command.arguments) }
        let shownOut = String(output.stdout.prefix(300))
        let shownErr = String(output.stderr.prefix(300))
        #expect(output.status < 128, "killed by signal \(output.status - 128) (137: the watchdog): \(shownErr)")
        #expect(output.status == 2, "exit \(output.status); stdout: \(shownOut); stderr: \(shownErr)")
        #expect(!output.stderr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "a message on stderr")
        #expect(output.stdout.isEmpty, "nothing on stdout: \(shownOut)")
        #expect(!output.stderr.contains("Fatal error"), "\(shownErr)")
        #expect(!output.stderr.contains("hidden"), "a secret given as `hidden` is shown: \(shownErr)")
        // The first line is the error itself; the usage lines after it name every option.
        let message = output.stderr.prefix { $0 != "\n" }
        if let says = command.says {
            #expect(message.contains(says), "the message says \(says.debugDescription): \(message.prefix(300))")
        }
    }

    @Test("Every option of every subcommand (from its own --help) has a case here")
    func everyOptionIsCovered() async throws {
        for subcommand in ["status", "watch", "wait", "check", "interfaces", "exporter"] {
            let cases = Self.all.filter { $0.arguments.first == subcommand }
            #expect(!cases.isEmpty, "\(subcommand)")
            let covered = Set(cases.flatMap(\.arguments).map { Self.optionName($0) })
            let help = try await offPool { try Command.run([CLI.path, subcommand, "--help"]) }
            #expect(help.status == 0)
            let options = Set(help.stdout.split(whereSeparator: \.isWhitespace).map { Self.optionName($0) })
                .subtracting(["", "--help", "--version"])
            #expect(options.count >= 1, "\(subcommand) --help lists options: \(help.stdout)")
            for option in options.sorted() {
                #expect(covered.contains(option), "\(subcommand) \(option) has no bad-input case")
            }
        }
    }

    /// `"--timeout"` for `--timeout`, `--timeout=1`, `[--timeout` or `--timeout),`; "" for anything else.
    static func optionName(_ word: some StringProtocol) -> String {
        // Group titles are upper-cased in the help ("(WITH --CONNECTIVITY)").
        let trimmed = word.lowercased().drop { $0 == "[" || $0 == "(" }
        guard trimmed.hasPrefix("--"), trimmed.count > 2 else { return "" }
        return "--" + trimmed.dropFirst(2).prefix { $0.isLetter || $0.isNumber || $0 == "-" }
    }
}

/// `waitUntilReachable(timeout:)` with timeouts out of any sleep's range: a
/// deadline past `Int64.max` seconds made `Task.sleep` trap, and negative ones
/// must just answer at once. Runs against the kernel in a namespace of its own.
@Suite("waitUntilReachable with out-of-range timeouts", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct WaitTimeoutBadInputTests {
    typealias Timeout = Input<Duration>

    static let endless: [Timeout] = [
        Timeout("Int64.max seconds", .seconds(Int64.max)),
        Timeout(
            "the largest Duration", Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999)),
        Timeout("a century", .seconds(100 * 365 * 86_400)),
        Timeout("a millennium", .seconds(1000 * 365 * 86_400)),
    ]

    static let past: [Timeout] = [
        Timeout("zero", .zero),
        Timeout("-1 ns", .nanoseconds(-1)),
        Timeout("Int64.min seconds", .seconds(Int64.min)),
        Timeout(
            "the most negative Duration",
            Duration(secondsComponent: .min, attosecondsComponent: -999_999_999_999_999_999)),
    ]

    @Test("A reachable target with an endless timeout: true, no trap", .timeLimit(.minutes(2)), arguments: endless)
    func endlessTimeout(_ timeout: Timeout) async throws {
        let ns = try await offPool { try TestNamespace() }
        let loopback = try Reachability(address: "127.0.0.1", environment: ns.environment)
        #expect(await loopback.waitUntilReachable(timeout: timeout.value))
        let viaCompletion = await withCheckedContinuation { continuation in
            loopback.waitUntilReachable(timeout: timeout.value) { continuation.resume(returning: $0) }
        }
        #expect(viaCompletion)
    }

    @Test("An unreachable target with a timeout already past: false at once, no trap", arguments: past)
    func pastTimeout(_ timeout: Timeout) async throws {
        let ns = try await offPool { try TestNamespace() }
        let nowhere = try Reachability(address: "192.0.2.1", environment: ns.environment)
        #expect(await nowhere.waitUntilReachable(timeout: timeout.value) == false)
    }
}
