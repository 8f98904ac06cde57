import ArgumentParser
import Connectivity
import Foundation
import Reachability

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

    func validate() throws {
        if expectStatus != nil && expectBody != nil {
            throw ValidationError("--expect-status and --expect-body exclude each other")
        }
        if (expectStatus != nil || expectBody != nil || !header.isEmpty) && urls.isEmpty {
            throw ValidationError("--expect-status, --expect-body and --header apply to --url endpoints")
        }
        try Seconds.check(probeTimeout, "--probe-timeout", allowZero: false)
        try Seconds.check(deadline, "--deadline", allowZero: false)
        _ = try configuration()
    }

    /// For the commands where these options ride on `--connectivity`: refuses the
    /// ones that would otherwise be silently ignored.
    func requireConnectivity(_ connectivity: Bool) throws {
        if !connectivity && (!urls.isEmpty || captiveAPI != nil || httpsOnly || strict) {
            throw ValidationError("--url, --captive-api, --https-only and --strict apply with --connectivity")
        }
    }

    /// The configuration these options describe; throws a ValidationError naming
    /// the bad value.
    func configuration() throws -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration()
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
            noInternet, limited (e.g. HTTPS blocked) or notConnected (no usable path; no \
            probe is sent). Exits 0 only when online, 1 otherwise, 2 for bad options.
            """)

    @OptionGroup var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        var configuration = try probes.configuration()
        configuration.environment = namespace.environment
        let connectivity = try Connectivity(validating: configuration)
        let result = try await connectivity.checkConnectivity()
        Output.emit(json ? Self.json(result) : Self.text(result))
        throw ExitCode(result.verdict == .online ? 0 : 1)
    }

    /// `{"verdict": …, "loginURL": …, "status": …, "endpoints": [{"url", "ok", "httpStatus", "error", "millis"}]}`.
    static func json(_ result: ConnectivityResult) -> String {
        let endpoints = result.endpoints.map { endpoint in
            "{\"url\": \(Output.quote(endpoint.url.absoluteString)), \"ok\": \(endpoint.isValid), "
                + "\"httpStatus\": \(endpoint.httpStatus.map(String.init) ?? "null"), "
                + "\"error\": \(endpoint.error.map(Output.quote) ?? "null"), \"millis\": \(endpoint.milliseconds)}"
        }
        return "{\"verdict\": \(Output.quote(result.verdict.name)), "
            + "\"loginURL\": \(loginURL(result).map { Output.quote($0.absoluteString) } ?? "null"), "
            + "\"status\": \(Output.quote(result.status.rawValue)), "
            + "\"endpoints\": [\(endpoints.joined(separator: ", "))]}"
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
}
