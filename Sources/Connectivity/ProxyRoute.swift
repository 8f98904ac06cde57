public import Foundation
import Reachability

/// Whether probes go through an HTTP proxy, as URLSession's do through the
/// system's: ``ConnectivityConfiguration/proxy``.
///
/// `Sendable`: a plain value.
public enum ProxySetting: Sendable, Hashable, CustomStringConvertible {
    /// The process's environment, as curl reads it: `http_proxy` for `http://` URLs
    /// (the lower-case name only: `HTTP_PROXY` can be set by a CGI request's
    /// `Proxy:` header), `https_proxy` or `HTTPS_PROXY` for `https://` ones, else
    /// `all_proxy` or `ALL_PROXY`; `no_proxy` or `NO_PROXY` lists the hosts reached
    /// directly. An empty value counts as unset. The default.
    case environment
    /// Never through a proxy.
    case direct
    /// Every probe through the proxy at `url` (`http://[user:password@]host[:port]`),
    /// but for the hosts `noProxy` lists (as `no_proxy` does).
    case server(URL, noProxy: [String] = [])

    /// `environment`, `direct`, or the proxy's address without its credentials.
    public var description: String {
        switch self {
        case .environment: "environment"
        case .direct: "direct"
        case .server(let url, let noProxy):
            (ProxyServer.parse(url.absoluteString).map { "\($0)" } ?? "an invalid proxy URL")
                + (noProxy.isEmpty ? "" : " (not for \(noProxy.joined(separator: ",")))")
        }
    }
}

/// An HTTP proxy: where it listens and the credentials sent to it, if any.
/// ``description`` never shows the credentials.
struct ProxyServer: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int
    var username: String?
    var password: String?

    /// curl's default proxy port.
    static let defaultPort = 1080

    /// `Basic base64(user:password)` for `Proxy-Authorization`, with credentials
    /// (a password alone goes with an empty user name, as curl sends it).
    var authorization: String? {
        guard let username else { return nil }
        return "Basic " + Data("\(username):\(password ?? "")".utf8).base64EncodedString()
    }

    /// `http://host:port`, without credentials.
    var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "http://\(shownHost):\(port)" + (username == nil ? "" : " (with credentials)")
    }

    /// A proxy written as curl takes one: `[http://][user[:password]@]host[:port][/]`.
    /// Nil for anything else: another scheme (`https://`, `socks5://`: not
    /// supported), no host, a bad port, a path, a query, control characters.
    static func parse(_ text: String) -> ProxyServer? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 8192,
            !trimmed.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
        else { return nil }
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: withScheme),
            components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty,
            components.path.isEmpty || components.path == "/",
            components.query == nil, components.fragment == nil
        else { return nil }
        var port = defaultPort
        if let explicit = components.port {
            guard (1...65535).contains(explicit) else { return nil }
            port = explicit
        }
        var bare = host
        if host.hasPrefix("[") {
            // Brackets hold an IPv6 address, nothing else (`[zz]` is no host).
            bare = String(host.dropFirst().dropLast())
            guard host.hasSuffix("]"), (try? IPAddress(bare))?.family == .ipv6 else { return nil }
        }
        let password = components.password
        let user = components.user ?? ""
        return ProxyServer(
            host: bare, port: port, username: user.isEmpty && (password ?? "").isEmpty ? nil : user,
            password: password)
    }
}

/// How one URL is fetched: directly, or through a proxy.
enum ProxyRoute: Sendable, Hashable {
    case direct
    case proxy(ProxyServer)
}

/// A ``ProxySetting`` read once: the proxy for each scheme and the hosts reached
/// directly. Pure: the environment comes in as a dictionary.
struct ProxyRules: Sendable, Hashable {
    var http: ProxyServer?
    var https: ProxyServer?
    var noProxy: [String]

    static let direct = ProxyRules(http: nil, https: nil, noProxy: [])

    /// The rules `setting` describes; the environment is only read for
    /// ``ProxySetting/environment``. Throws ``ConnectivityError`` naming the variable
    /// (never its value: it may hold a password) when a proxy can't be used.
    static func make(_ setting: ProxySetting, environment: [String: String]) throws(ConnectivityError) -> ProxyRules {
        switch setting {
        case .direct:
            return .direct
        case .server(let url, let noProxy):
            guard let server = ProxyServer.parse(url.absoluteString) else {
                throw ConnectivityError(
                    "proxy: only an http:// proxy with a host and a port from 1 to 65535 is supported")
            }
            return ProxyRules(http: server, https: server, noProxy: noProxy.flatMap(entries))
        case .environment:
            func value(_ names: [String]) -> (name: String, value: String)? {
                for name in names {
                    if let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty {
                        return (name, value)
                    }
                }
                return nil
            }
            func server(_ names: [String]) throws(ConnectivityError) -> ProxyServer? {
                guard let (name, text) = value(names) else { return nil }
                guard let server = ProxyServer.parse(text) else {
                    throw ConnectivityError(
                        "the environment's \(name) is not an http:// proxy URL (https://, socks and other schemes "
                            + "are not supported)")
                }
                return server
            }
            let all = try server(["all_proxy", "ALL_PROXY"])
            return ProxyRules(
                http: try server(["http_proxy"]) ?? all, https: try server(["https_proxy", "HTTPS_PROXY"]) ?? all,
                noProxy: value(["no_proxy", "NO_PROXY"]).map { entries($0.value) } ?? [])
        }
    }

    /// The entries of a `no_proxy` value: separated by commas or white space.
    static func entries(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
    }

    /// How `url` is fetched.
    func route(_ url: URL) -> ProxyRoute {
        let scheme = url.scheme?.lowercased()
        guard let server = scheme == "https" ? https : scheme == "http" ? http : nil else { return .direct }
        guard let host = url.host, !Self.bypasses(host: host, noProxy) else { return .direct }
        return .proxy(server)
    }

    /// Whether `host` is reached directly under `noProxy`, as curl matches
    /// `no_proxy`: `*` matches every host; an address (IPv4, or IPv6 with or without
    /// brackets), optionally with a `/prefix`, matches addresses in it; a name
    /// matches itself and every name under it (`example.com` and `.example.com`
    /// both match `www.example.com`), without regard to case or a trailing dot.
    static func bypasses(host: String, _ noProxy: [String]) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let name = bare.lowercased().trimmingSuffix(".")
        let address = try? IPAddress(bare)
        for raw in noProxy {
            var entry = raw.trimmingCharacters(in: .whitespaces).lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix("[") {
                entry = entry.replacingOccurrences(of: "[", with: "").replacingOccurrences(of: "]", with: "")
            }
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            if let network = parts.first.flatMap({ try? IPAddress($0) }) {
                guard let address, address.family == network.family else { continue }
                let width = network.bytes.count * 8
                let prefix = parts.count == 2 ? Int(parts[1]) : width
                guard let prefix, (0...width).contains(prefix) else { continue }
                if Self.prefix(address.bytes, network.bytes, prefix) { return true }
                continue
            }
            guard address == nil else { continue }
            let domain = entry.trimmingPrefix(".").trimmingSuffix(".")
            if !domain.isEmpty && (name == domain || name.hasSuffix("." + domain)) { return true }
        }
        return false
    }

    /// Whether `a` and `b` share their first `bits` bits.
    private static func prefix(_ a: [UInt8], _ b: [UInt8], _ bits: Int) -> Bool {
        for index in 0..<(bits / 8) where a[index] != b[index] { return false }
        let rest = bits % 8
        guard rest > 0 else { return true }
        let mask = UInt8(0xFF) << (8 - rest)
        return a[bits / 8] & mask == b[bits / 8] & mask
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }

    fileprivate func trimmingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
