import ArgumentParser
import Connectivity
import Foundation
import Reachability
import ReachabilityCommands
@_spi(Testing) import ReachabilitySystem

/// The probe options shared by `check` and `wait --connectivity`.
struct ProbeOptions: ParsableArguments {
    @Option(name: .customLong("url"), help: "A check endpoint (repeatable); replaces the default vendors' endpoints.")
    var urls: [String] = []

    @Option(help: "With --url: a healthy answer has this status (the default: 204).")
    var expectStatus: Int?

    @Option(help: "With --url: a healthy answer is a 2xx whose body, trimmed, equals this.")
    var expectBody: String?

    @Option(help: "A request header for the --url endpoints, \"Name: value\" (repeatable).")
    var header: [String] = []

    @Option(help: "Percentage of endpoints that must pass (0-100).")
    var threshold: Double = 50

    @Option(help: "Each probe's time limit in seconds.")
    var probeTimeout: Double = 5

    @Option(help: "The whole check's time limit in seconds.")
    var deadline: Double = 10

    @Flag(help: "Use only the HTTPS endpoints.")
    var httpsOnly = false

    @Option(help: "An RFC 8908 captive-portal API URL; its \"captive\": true is authoritative.")
    var captiveAPI: String?

    @Option(help: "A PEM file of root certificates to trust for HTTPS endpoints.")
    var caFile: String?

    @Flag(help: "Strict: online also needs two vendors' endpoints (domains) to answer as expected.")
    var strict = false

    @Flag(help: "Don't look for the captive-portal API the network announced (DHCP option 114, RA option 37).")
    var noAPIDiscovery = false

    @Option(help: "Look for the announced API's lease and state files under this directory instead of /.")
    var discoveryRoot: String?

    @Option(
        name: .customLong("fallback-url"),
        help: "A fallback endpoint (repeatable), drawn at random per check on top of the others; healthy: 204.")
    var fallbackURLs: [String] = []

    @Option(help: "With --fallback-url: how many fallbacks each check adds (default 1).")
    var fallbacksPerCheck: Int?

    @Option(
        help: ArgumentHelp(
            "Send the checks through this HTTP proxy: [http://][user:password@]host[:port] (port 1080 by default).",
            discussion: "Without it, http_proxy, https_proxy, all_proxy and no_proxy say, as curl reads them.",
            valueName: "url"))
    var proxy: String?

    @Option(
        help: ArgumentHelp(
            "A file holding the --proxy's credentials, user:password on its first line.",
            discussion: "Unlike credentials in --proxy's URL, these are not shown to other users in the process list.",
            valueName: "file"))
    var proxyCredentialsFile: String?

    @Flag(help: "Send the checks directly, whatever http_proxy, https_proxy and all_proxy say.")
    var noProxy = false

    func validate() throws {
        if expectStatus != nil && expectBody != nil {
            throw ValidationError("--expect-status and --expect-body exclude each other")
        }
        if proxy != nil && noProxy { throw ValidationError("--proxy and --no-proxy exclude each other") }
        if proxyCredentialsFile != nil && proxy == nil {
            throw ValidationError("--proxy-credentials-file applies with --proxy")
        }
        if (expectStatus != nil || expectBody != nil || !header.isEmpty) && urls.isEmpty {
            throw ValidationError("--expect-status, --expect-body and --header apply to --url endpoints")
        }
        try usage(Seconds.check(probeTimeout, "--probe-timeout", allowZero: false))
        try usage(Seconds.check(deadline, "--deadline", allowZero: false))
        _ = try configuration()
    }

    /// For the commands where these options ride on `--connectivity`: refuses the
    /// ones that would otherwise be silently ignored.
    func requireConnectivity(_ connectivity: Bool) throws {
        if !connectivity && (!urls.isEmpty || captiveAPI != nil || httpsOnly || strict) {
            throw ValidationError("--url, --captive-api, --https-only and --strict apply with --connectivity")
        }
        if !connectivity && (noAPIDiscovery || discoveryRoot != nil) {
            throw ValidationError("--no-api-discovery and --discovery-root apply with --connectivity")
        }
        if !connectivity && (proxy != nil || noProxy) {
            throw ValidationError("--proxy and --no-proxy apply with --connectivity")
        }
        if !connectivity && (!fallbackURLs.isEmpty || fallbacksPerCheck != nil) {
            throw ValidationError("--fallback-url and --fallbacks-per-check apply with --connectivity")
        }
    }

    /// The longest credentials file taken.
    static let credentialsLimit = 8192

    /// `user:password` from the first line of `path`, a regular file of at most
    /// ``credentialsLimit`` bytes; the error never repeats the file's contents.
    static func credentials(_ path: String) throws -> (user: String, password: String) {
        let bytes: [UInt8]
        switch SystemCalls.live.readFile(path, limit: credentialsLimit) {
        case .success(let read): bytes = read.bytes
        case .failure(.tooLarge):
            throw ValidationError("--proxy-credentials-file is over \(credentialsLimit) bytes")
        case .failure:
            throw ValidationError("--proxy-credentials-file \(quotedForMessage(path)) is not a readable regular file")
        }
        let line = String(decoding: bytes.prefix { $0 != 10 && $0 != 13 }, as: UTF8.self)
        guard let colon = line.firstIndex(of: ":"),
            !line.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw ValidationError("--proxy-credentials-file does not start with a user:password line")
        }
        return (String(line[..<colon]), String(line[line.index(after: colon)...]))
    }

    /// The configuration these options describe; throws a ValidationError naming
    /// the bad value.
    func configuration() throws -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration.recommended
        if !urls.isEmpty {
            var headers: [String: String] = [:]
            for line in header {
                guard let colon = line.firstIndex(of: ":") else {
                    throw ValidationError("--header \(quotedForMessage(line)) is not \"Name: value\"")
                }
                headers[String(line[..<colon])] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
            let expectation: ConnectivityEndpoint.Expectation =
                expectBody.map { .bodyEquals($0) } ?? .status(expectStatus ?? 204)
            configuration.endpoints = try urls.map { text in
                guard let url = URL(string: text) else {
                    throw ValidationError("--url \(quotedForMessage(text)) is not a URL")
                }
                return ConnectivityEndpoint(url: url, expectation: expectation, headers: headers)
            }
        }
        if fallbacksPerCheck != nil && fallbackURLs.isEmpty {
            throw ValidationError("--fallbacks-per-check applies with --fallback-url")
        }
        configuration.fallbackEndpoints = try fallbackURLs.map { text in
            guard let url = URL(string: text) else {
                throw ValidationError("--fallback-url \(quotedForMessage(text)) is not a URL")
            }
            return ConnectivityEndpoint(url: url, expectation: .status(204))
        }
        if let fallbacksPerCheck { configuration.fallbacksPerCheck = fallbacksPerCheck }
        configuration.successThreshold = threshold
        configuration.probeTimeout = Seconds.duration(probeTimeout)
        configuration.checkDeadline = Seconds.duration(deadline)
        configuration.httpsOnly = httpsOnly
        configuration.requiresTwoVendors = strict
        if let captiveAPI {
            guard let url = URL(string: captiveAPI) else {
                throw ValidationError("--captive-api \(quotedForMessage(captiveAPI)) is not a URL")
            }
            configuration.captivePortalAPI = url
        }
        configuration.trustedRootCertificatesPath = caFile
        configuration.discoversCaptivePortalAPI = !noAPIDiscovery
        if let discoveryRoot { configuration.captivePortalDiscovery.root = discoveryRoot }
        if noProxy { configuration.proxy = .direct }
        if let proxy {
            // curl takes host:port alone; the value is never repeated (credentials).
            let text = proxy.contains("://") ? proxy : "http://" + proxy
            guard var components = URLComponents(string: text), let url = components.url else {
                throw ValidationError("--proxy is not a proxy URL ([http://][user:password@]host[:port])")
            }
            configuration.proxy = .server(url)
            if let proxyCredentialsFile {
                guard components.user == nil && components.password == nil else {
                    throw ValidationError("--proxy has credentials, and --proxy-credentials-file too")
                }
                (components.user, components.password) = try Self.credentials(proxyCredentialsFile)
                configuration.proxy = .server(components.url ?? url)
            }
        }
        do throws(ConnectivityError) {
            try configuration.validate()
        } catch {
            throw ValidationError(error.message)
        }
        return configuration
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check whether the Internet is really there, or a captive portal, or nothing.",
        discussion: """
            Fetches the check endpoints concurrently (by default several vendors' public \
            ones: Google, Apple, Microsoft, GNOME, over HTTP and HTTPS), without following \
            redirects, and prints the verdict: online, captivePortal (with the login URL), \
            noInternet, limited (e.g. HTTPS blocked), notConnected (no usable path; no \
            probe is sent) or proxyFailed (the proxy of http_proxy, https_proxy or \
            all_proxy wants credentials, refused, or can't be reached). Exits 0 only when \
            online, 1 otherwise, 2 for bad options.

            Per interface and family (NetworkManager's per-device checks): --interface \
            IF (repeatable) probes over that interface only (the socket bound to it, \
            whatever the routing table prefers), --each-interface over every interface \
            with carrier and a default route, once per family it has one for; -4 and -6 \
            restrict the probes to that family (both: one verdict each). Each scope gets \
            its own verdict ("online over eth0/IPv4, captivePortal over wlan0/IPv4"); the \
            exit status is 0 when any of them is online. The text then starts with a summary \
            line, "online over eth0/IPv4, captivePortal over wlan0/IPv4", then each scope's \
            block.

            Checks go through the proxy the environment names, as curl reads it: http_proxy \
            for http:// endpoints (lower case only), https_proxy or HTTPS_PROXY for https:// \
            ones, else all_proxy or ALL_PROXY; no_proxy or NO_PROXY lists the hosts reached \
            directly. --proxy and --no-proxy override it.

            With no --captive-api, a check asks the RFC 8908 API the network announced (DHCP \
            option 114, RA option 37), as systemd-networkd, dhclient or NetworkManager's \
            dhclient recorded it; the text then has the lines "api:     URI (FORMAT FILE, \
            INTERFACE)", then "captive:", "portal:", "venue:", "seconds:", "bytes:" and \
            "extend:" for the fields the API gave.

            With --json, one object: {"verdict", "loginURL" (a string only for \
            captivePortal), "status" (a Connectivity status, e.g. \
            connectedViaEthernetWithoutInternet), "endpoints": [{"url", "ok", "httpStatus", \
            "error", "millis"}], "captivePortalAPI", "captivePortalAPISource"}; per interface or \
            family: {"verdict": BEST, "scopes": [{"scope", "interface", "family", ...}]}, BEST the \
            best verdict of the scopes (online, limited, captivePortal, proxyFailed, \
            noInternet, notConnected in that order). docs/CLI.md in the repository has every \
            key.
            """)

    @OptionGroup var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    @Option(
        name: [.customShort("i"), .customLong("interface")],
        help: "Probe over this interface only (repeatable: one verdict each).")
    var interfaces: [String] = []

    @Flag(help: "Probe over every interface with carrier and a default route, per family.")
    var eachInterface = false

    @Flag(name: .customShort("4"), help: "Probe over IPv4 only (with -6: one verdict per family).")
    var ipv4 = false

    @Flag(name: .customShort("6"), help: "Probe over IPv6 only (with -4: one verdict per family).")
    var ipv6 = false

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        if eachInterface && !interfaces.isEmpty {
            throw ValidationError("--interface and --each-interface exclude each other")
        }
        for scope in scopes {
            var configuration = try probes.configuration()
            configuration.scope = scope
            do throws(ConnectivityError) {
                try configuration.validate()
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    /// The families asked for with -4/-6, in that order.
    var families: [IPAddress.Family] { (ipv4 ? [.ipv4] : []) + (ipv6 ? [.ipv6] : []) }

    /// The scopes --interface and -4/-6 name (empty: an ordinary check, or --each-interface).
    var scopes: [ProbeScope] {
        let families: [IPAddress.Family?] = self.families.isEmpty ? [nil] : self.families
        if interfaces.isEmpty {
            return self.families.map { ProbeScope(family: $0) }
        }
        return interfaces.flatMap { name in families.map { ProbeScope(interface: name, family: $0) } }
    }

    func run() async throws {
        var configuration = try probes.configuration()
        configuration.environment = namespace.environment
        if eachInterface && families.count == 1 { configuration.scope = ProbeScope(family: families[0]) }
        let connectivity = try Connectivity(validating: configuration)
        if !eachInterface && scopes.isEmpty {
            let result = try await connectivity.checkConnectivity()
            Output.emit(json ? Self.json(result) : Self.text(result))
            throw ExitCode(result.verdict == .online ? 0 : 1)
        }
        var results =
            eachInterface
            ? try await connectivity.checkEachInterface() : try await connectivity.checkConnectivity(over: scopes)
        if eachInterface && families.count == 2 {
            results.sort { ($0.scope.family == .ipv6 ? 1 : 0) < ($1.scope.family == .ipv6 ? 1 : 0) }
        }
        Output.emit(json ? Self.json(scoped: results) : Self.text(scoped: results))
        throw ExitCode(results.contains { $0.verdict == .online } ? 0 : 1)
    }

    /// `{"verdict": …, "loginURL": …, "status": …, "endpoints": [{"url", "ok", "httpStatus", "error", "millis"}]}`.
    static func json(_ result: ConnectivityResult) -> String {
        "{" + fields(result) + "}"
    }

    /// The keys of one result, without braces.
    static func fields(_ result: ConnectivityResult) -> String {
        let endpoints = result.endpoints.map { endpoint in
            "{\"url\": \(Output.quote(endpoint.url.absoluteString)), \"ok\": \(endpoint.isValid), "
                + "\"httpStatus\": \(endpoint.httpStatus.map(String.init) ?? "null"), "
                + "\"error\": \(endpoint.error.map(Output.quote) ?? "null"), \"millis\": \(endpoint.milliseconds)}"
        }
        return "\"verdict\": \(Output.quote(result.verdict.name)), "
            + "\"loginURL\": \(loginURL(result).map { Output.quote($0.absoluteString) } ?? "null"), "
            + "\"status\": \(Output.quote(result.status.rawValue)), "
            + "\"endpoints\": [\(endpoints.joined(separator: ", "))], "
            + "\"captivePortalAPI\": \(apiJSON(result.captivePortalAPI)), "
            + "\"captivePortalAPISource\": \(sourceJSON(result.captivePortalAPISource))"
    }

    /// The RFC 8908 answer's fields (`null` for those it left out), or `null`.
    static func apiJSON(_ api: CaptivePortalAPIResponse?) -> String {
        guard let api else { return "null" }
        func text(_ value: String?) -> String { value.map(Output.quote) ?? "null" }
        return "{\"captive\": \(api.captive), \"userPortalURL\": \(text(api.userPortalURL?.absoluteString)), "
            + "\"venueInfoURL\": \(text(api.venueInfoURL?.absoluteString)), "
            + "\"secondsRemaining\": \(api.secondsRemaining.map(String.init) ?? "null"), "
            + "\"bytesRemaining\": \(api.bytesRemaining.map(String.init) ?? "null"), "
            + "\"canExtendSession\": \(api.canExtendSession.map(String.init) ?? "null")}"
    }

    /// `{"uri", "format", "path", "interface"}` of the API's source, or `null`.
    static func sourceJSON(_ source: CaptivePortalAPISource?) -> String {
        guard let source else { return "null" }
        return
            "{\"uri\": \(Output.quote(source.uri.description)), \"format\": \(Output.quote(source.format.rawValue)), "
            + "\"path\": \(source.path.map(Output.quote) ?? "null"), "
            + "\"interface\": \(source.interface.map(Output.quote) ?? "null")}"
    }

    /// The verdicts' order of merit: the best one is the host's.
    static func rank(_ verdict: Verdict) -> Int {
        switch verdict {
        case .online: 0
        case .limited: 1
        case .captivePortal: 2
        case .proxyFailed: 3
        case .noInternet: 4
        case .notConnected: 5
        }
    }

    /// The best of the scopes' verdicts (notConnected when there are none).
    static func best(_ results: [ConnectivityResult]) -> Verdict {
        results.min { rank($0.verdict) < rank($1.verdict) }?.verdict ?? .notConnected
    }

    /// `{"verdict": best, "scopes": [{"scope", "interface", "family", …one result's keys}]}`.
    static func json(scoped results: [ConnectivityResult]) -> String {
        let scopes = results.map { result in
            "{\"scope\": \(Output.quote(result.scope.description)), "
                + "\"interface\": \(result.scope.interface.map(Output.quote) ?? "null"), "
                + "\"family\": \(result.scope.family.map { Output.quote($0.rawValue) } ?? "null"), "
                + fields(result) + "}"
        }
        return "{\"verdict\": \(Output.quote(best(results).name)), \"scopes\": [\(scopes.joined(separator: ", "))]}"
    }

    /// A summary line (`online over eth0/IPv4, captivePortal over wlan0/IPv4`),
    /// then each scope's block.
    static func text(scoped results: [ConnectivityResult]) -> String {
        guard !results.isEmpty else { return "verdict: notConnected (no interface with carrier and a default route)" }
        let summary = results.map { "\($0.verdict.name) over \($0.scope)" }.joined(separator: ", ")
        return ([summary] + results.map { "\n[\($0.scope)]\n" + text($0) }).joined(separator: "\n")
    }

    static func loginURL(_ result: ConnectivityResult) -> URL? {
        if case .captivePortal(let url) = result.verdict { return url }
        return nil
    }

    /// The verdict, then one aligned line per endpoint.
    static func text(_ result: ConnectivityResult) -> String {
        var lines = ["verdict: \(result.verdict)", "status:  \(result.status.rawValue)"]
        if let url = loginURL(result) { lines.append("login:   \(url.absoluteString)") }
        if let interface = result.interface { lines.append("via:     \(interface)") }
        lines += apiLines(result)
        let width = result.endpoints.map(\.url.absoluteString.count).max() ?? 0
        for endpoint in result.endpoints {
            let url = endpoint.url.absoluteString
            let status = endpoint.httpStatus.map(String.init) ?? "-"
            let millis = "\(endpoint.milliseconds) ms"
            lines.append(
                "  \(endpoint.isValid ? "ok  " : "FAIL")  \(url.padding(toLength: width, withPad: " ", startingAt: 0))  "
                    + "\(status.padding(toLength: 3, withPad: " ", startingAt: 0))  "
                    + "\(millis.padding(toLength: 8, withPad: " ", startingAt: 0))\(endpoint.error ?? "")")
        }
        return lines.joined(separator: "\n")
    }

    /// The API asked and where it came from, then what it said, one field a line.
    static func apiLines(_ result: ConnectivityResult) -> [String] {
        var lines: [String] = []
        if let source = result.captivePortalAPISource { lines.append("api:     \(source)") }
        guard let api = result.captivePortalAPI else { return lines }
        lines.append("captive: \(api.captive)")
        if let url = api.userPortalURL { lines.append("portal:  \(url.absoluteString)") }
        if let url = api.venueInfoURL { lines.append("venue:   \(url.absoluteString)") }
        if let seconds = api.secondsRemaining { lines.append("seconds: \(seconds) remaining") }
        if let bytes = api.bytesRemaining { lines.append("bytes:   \(bytes) remaining") }
        if let extend = api.canExtendSession { lines.append("extend:  \(extend ? "yes" : "no")") }
        return lines
    }
}
