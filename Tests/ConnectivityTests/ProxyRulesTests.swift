import Foundation
import NIOCore
import NIOEmbedded
import ReachabilitySystem
import Testing

@testable import Connectivity

/// Which proxy a probe goes through: the environment as curl reads it, proxy URLs,
/// and `no_proxy` matching.
@Suite struct ProxyRulesTests {
    static func url(_ text: String) -> URL { URL(string: text)! }

    static func rules(_ environment: [String: String]) throws -> ProxyRules {
        try ProxyRules.make(.environment, environment: environment)
    }

    @Test(
        "curl's precedence: http_proxy (lower case only), https_proxy then HTTPS_PROXY, else all_proxy then ALL_PROXY")
    func precedence() throws {
        let http = try Self.rules(["http_proxy": "http://h:1", "HTTP_PROXY": "http://upper:2"])
        #expect(http.route(Self.url("http://a.test/")) == .proxy(ProxyServer(host: "h", port: 1)))
        #expect(http.route(Self.url("https://a.test/")) == .direct)
        // HTTP_PROXY alone is ignored (httpoxy: a CGI request's Proxy: header sets it).
        #expect(try Self.rules(["HTTP_PROXY": "http://upper:2"]).route(Self.url("http://a.test/")) == .direct)
        let https = try Self.rules(["https_proxy": "http://lower:3", "HTTPS_PROXY": "http://upper:4"])
        #expect(https.route(Self.url("https://a.test/")) == .proxy(ProxyServer(host: "lower", port: 3)))
        #expect(
            try Self.rules(["HTTPS_PROXY": "http://upper:4"]).route(Self.url("https://a.test/"))
                == .proxy(ProxyServer(host: "upper", port: 4)))
        let all = try Self.rules(["ALL_PROXY": "http://all:5", "https_proxy": "http://s:6"])
        #expect(all.route(Self.url("http://a.test/")) == .proxy(ProxyServer(host: "all", port: 5)))
        #expect(all.route(Self.url("https://a.test/")) == .proxy(ProxyServer(host: "s", port: 6)))
        #expect(
            try Self.rules(["all_proxy": "http://lower:7", "ALL_PROXY": "http://upper:8"]).route(
                Self.url("http://a.test/")) == .proxy(ProxyServer(host: "lower", port: 7)))
        // Empty means unset.
        #expect(try Self.rules(["http_proxy": "", "all_proxy": "http://all:9"]).http?.host == "all")
        #expect(try Self.rules([:]) == .direct)
    }

    @Test("proxy URLs as curl takes them: scheme optional, port 1080 by default, credentials decoded")
    func proxyURLs() {
        #expect(ProxyServer.parse("proxy.test") == ProxyServer(host: "proxy.test", port: 1080))
        #expect(ProxyServer.parse("proxy.test:3128") == ProxyServer(host: "proxy.test", port: 3128))
        #expect(ProxyServer.parse("http://10.0.0.1:8888/") == ProxyServer(host: "10.0.0.1", port: 8888))
        #expect(ProxyServer.parse("HTTP://[fd00::1]:8080") == ProxyServer(host: "fd00::1", port: 8080))
        #expect(
            ProxyServer.parse("http://us%65r:p%40ss@p.test:1")
                == ProxyServer(host: "p.test", port: 1, username: "user", password: "p@ss"))
        for bad in [
            "", " ", "https://p.test:443", "socks5://p.test:1080", "http://", "http://p.test:0", "http://p.test:65536",
            "http://p.test:8080/path", "http://p.test:1?q", "http://p\u{1}.test", "ftp://p.test",
        ] {
            #expect(ProxyServer.parse(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test("a proxy's description never shows its credentials")
    func descriptionHidesCredentials() throws {
        let server = try #require(ProxyServer.parse("http://alice:s3cret@p.test:3128"))
        #expect("\(server)" == "http://p.test:3128 (with credentials)")
        let setting = ProxySetting.server(Self.url("http://alice:s3cret@p.test:3128"), noProxy: ["local"])
        #expect(!"\(setting)".contains("s3cret") && !"\(setting)".contains("alice"))
    }

    @Test("a proxy that can't be used is an error naming the variable, never its value")
    func unusableProxy() {
        for (name, value) in [
            ("https_proxy", "socks5://u:pw@p.test:1080"), ("http_proxy", "https://u:pw@p.test"),
            ("all_proxy", "http://p.test:99999"),
        ] {
            do throws(ConnectivityError) {
                _ = try ProxyRules.make(.environment, environment: [name: value])
                Issue.record("\(name)=\(value) accepted")
            } catch {
                #expect(error.message.contains(name))
                #expect(!error.message.contains("pw"), "the value may hold a password")
            }
        }
        #expect(throws: ConnectivityError.self) {
            try ProxyRules.make(.server(Self.url("socks5://p.test:1080")), environment: [:])
        }
    }

    @Test("no_proxy as curl matches it: *, names and their subdomains, addresses and prefixes")
    func noProxy() throws {
        let rules = try Self.rules([
            "http_proxy": "http://p:1", "https_proxy": "http://p:1",
            "no_proxy": "localhost, .internal.test,example.com 10.0.0.0/8,192.0.2.7,[fd00::]/16,::1",
        ])
        let direct: [String] = [
            "http://localhost/", "http://LOCALHOST./", "http://a.internal.test/", "http://internal.test/",
            "http://example.com/", "https://www.example.com/", "http://10.1.2.3/", "http://192.0.2.7:8080/",
            "http://[fd00::5]/", "http://[::1]/",
        ]
        for url in direct { #expect(rules.route(Self.url(url)) == .direct, "\(url)") }
        let proxied: [String] = [
            "http://notexample.com/", "http://example.com.evil.test/", "http://192.0.2.8/", "http://11.0.0.1/",
            "http://[fe80::1]/", "http://localhost.test/", "https://internal.test.evil/",
        ]
        for url in proxied { #expect(rules.route(Self.url(url)) != .direct, "\(url)") }
        let everything = try Self.rules(["http_proxy": "http://p:1", "NO_PROXY": "*"])
        #expect(everything.route(Self.url("http://anything.test/")) == .direct)
        // no_proxy wins over NO_PROXY; a name entry never matches an address.
        let lower = try Self.rules(["http_proxy": "http://p:1", "no_proxy": "a.test", "NO_PROXY": "*"])
        #expect(lower.route(Self.url("http://b.test/")) != .direct)
        #expect(ProxyRules.bypasses(host: "10.0.0.1", ["10.0.0.1.example"]) == false)
        #expect(ProxyRules.bypasses(host: "10.0.0.1", ["10.0.0.0/33"]) == false, "a prefix that can't be")
    }

    @Test("an explicit proxy: every scheme through it, but for its noProxy hosts")
    func explicitProxy() throws {
        let rules = try ProxyRules.make(
            .server(Self.url("http://p.test:3128"), noProxy: ["local.test"]), environment: ["http_proxy": "http://x:1"])
        #expect(rules.route(Self.url("http://a.test/")) == .proxy(ProxyServer(host: "p.test", port: 3128)))
        #expect(rules.route(Self.url("https://a.test/")) == .proxy(ProxyServer(host: "p.test", port: 3128)))
        #expect(rules.route(Self.url("https://x.local.test/")) == .direct)
        #expect(try ProxyRules.make(.direct, environment: ["http_proxy": "http://x:1"]) == .direct)
    }

    @Test("a password without a user name is sent as curl sends it; brackets hold an IPv6 address or nothing")
    func oddProxyURLs() throws {
        let passwordOnly = try #require(ProxyServer.parse("http://:pw@proxy.test:3128"))
        #expect(passwordOnly.authorization == "Basic " + Data(":pw".utf8).base64EncodedString())
        #expect(ProxyServer.parse("http://@proxy.test:3128")?.authorization == nil)
        #expect(ProxyServer.parse("http://[zz]:3128") == nil)
        #expect(ProxyServer.parse("[zz]") == nil)
        #expect(ProxyServer.parse("http://[192.0.2.1]:3128") == nil)
        #expect(ProxyServer.parse("http://[2001:db8::1]:3128")?.host == "2001:db8::1")
    }

    @Test(
        "401 through a proxy is the proxy's only for a plain-HTTP request sent its credentials and none of the endpoint's"
    )
    func unauthorizedThroughAProxy() throws {
        let response = ProbeResponse(url: URL(string: "http://x.test/")!, status: 401)
        let withCredentials = ProxyRoute.proxy(try #require(ProxyServer.parse("http://u:p@proxy.test:3128")))
        let without = ProxyRoute.proxy(try #require(ProxyServer.parse("http://proxy.test:3128")))
        #expect(ProbeRunner.proxyRefusal(response, route: withCredentials, isHTTPS: false) == .authenticationRequired)
        #expect(
            ProbeRunner.proxyRefusal(response, route: withCredentials, isHTTPS: false, sentAuthorization: true) == nil)
        #expect(ProbeRunner.proxyRefusal(response, route: without, isHTTPS: false) == nil)
        #expect(ProbeRunner.proxyRefusal(response, route: .direct, isHTTPS: false) == nil)
    }

    @Test("interim answers to CONNECT (100 Continue) are not the answer, and count toward the head limit")
    func interimAnswersToConnect() throws {
        func run(_ answer: String) throws -> (opened: Bool, failure: ProbeFailure?) {
            let channel = EmbeddedChannel()
            let promise = channel.eventLoop.makePromise(of: ProbeResponse.self)
            let opened = LockedValue(false)
            let tunnel = ProxyTunnel(
                authority: "x.test:443", proxy: try #require(ProxyServer.parse("http://proxy.test:3128")))
            try channel.pipeline.syncOperations.addHandler(
                ProxyTunnelHandler(tunnel: tunnel, promise: promise, tunnelOpen: opened) { _ in })
            let failure = LockedValue<ProbeFailure?>(nil)
            promise.futureResult.whenFailure { error in
                failure.withLock { $0 = (error as? ProxyTunnelHandler.Refusal)?.failure }
            }
            try channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 3128)).wait()
            try channel.writeInbound(channel.allocator.buffer(string: answer))
            promise.fail(CancellationError())  // Unless the handler failed it first.
            return (opened.withLock { $0 }, failure.withLock { $0 })
        }
        let continued = try run("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection established\r\n\r\n")
        #expect(continued.opened && continued.failure == nil, "\(String(describing: continued.failure))")
        let endless = try run(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 1000))
        #expect(!endless.opened)
        #expect(endless.failure == .connectionFailed("the proxy's answer to CONNECT is over 16384 bytes"))
    }
}
