import Foundation
import Reachability
import Testing

@testable import Connectivity

/// ``ProbeScope``'s pure parts: the path a scope sees, which endpoints it admits,
/// its names, and the request target a scoped probe sends.
@Suite struct ProbeScopeTests {
    static let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
    static let wlan0 = NetworkInterface(name: "wlan0", index: 3, type: .wifi)
    static let both = NetworkPath(
        status: .satisfied, availableInterfaces: [eth0, wlan0], supportsIPv4: true, supportsIPv6: false,
        supportsDNS: true)

    @Test("restrict: the scope's interface alone, or unsatisfied; the family must be carried")
    func restrict() {
        #expect(ProbeScope.any.restrict(Self.both) == Self.both)
        let wlan = ProbeScope(interface: "wlan0").restrict(Self.both)
        #expect(wlan.status == .satisfied)
        #expect(wlan.availableInterfaces == [Self.wlan0])
        #expect(wlan.supportsDNS)
        let missing = ProbeScope(interface: "eth9").restrict(Self.both)
        #expect(missing.status == .unsatisfied)
        #expect(missing.availableInterfaces.isEmpty)
        #expect(ProbeScope(family: .ipv4).restrict(Self.both).status == .satisfied)
        #expect(ProbeScope(family: .ipv6).restrict(Self.both).status == .unsatisfied)
        #expect(ProbeScope(interface: "eth0", family: .ipv6).restrict(Self.both).status == .unsatisfied)
        // An unsatisfied path stays as it is.
        #expect(ProbeScope(interface: "eth0").restrict(.unsatisfied) == .unsatisfied)
    }

    @Test("admits: names always; addresses of the scope's family only")
    func admits() {
        func endpoint(_ url: String) -> ConnectivityEndpoint {
            ConnectivityEndpoint(url: URL(string: url)!, expectation: .status(204))
        }
        let v4 = endpoint("http://192.0.2.1/generate_204")
        let v6 = endpoint("http://[2001:db8::1]/generate_204")
        let name = endpoint("http://example.com/generate_204")
        #expect(ProbeScope(family: .ipv4).admits(v4) && !ProbeScope(family: .ipv4).admits(v6))
        #expect(ProbeScope(family: .ipv6).admits(v6) && !ProbeScope(family: .ipv6).admits(v4))
        #expect(ProbeScope(family: .ipv6).admits(name) && ProbeScope(family: .ipv4).admits(name))
        #expect(ProbeScope(interface: "eth0").admits(v4) && ProbeScope(interface: "eth0").admits(v6))
    }

    @Test("names: validated as the kernel takes them; described as eth0/IPv4")
    func names() {
        for good in ["eth0", "wlp3s0", "veth-a.1", "fifteen-bytes-x"] {
            #expect(throws: Never.self) { try ProbeScope(interface: good).validate() }
        }
        for bad in ["", ".", "..", "a/b", "eth0:1", "a b", "tab\there", "sixteen-bytes-xx", "nul\0"] {
            #expect(throws: ConnectivityError.self, "\(bad)") { try ProbeScope(interface: bad).validate() }
        }
        #expect(ProbeScope(interface: "eth0", family: .ipv4).description == "eth0/IPv4")
        #expect(ProbeScope(interface: "eth0").description == "eth0")
        #expect(ProbeScope(family: .ipv6).description == "IPv6")
        #expect(ProbeScope.any.isAny && !ProbeScope(family: .ipv4).isAny)
    }

    @Test("the request target keeps the path's escapes and the query; an empty path is /")
    func target() {
        #expect(ProbeTransport.target(URL(string: "http://h/")!) == "/")
        #expect(ProbeTransport.target(URL(string: "http://h")!) == "/")
        #expect(ProbeTransport.target(URL(string: "http://h/a%20b/c?x=1&y=%2F")!) == "/a%20b/c?x=1&y=%2F")
        #expect(ProbeTransport.target(URL(string: "https://h:8443/generate_204")!) == "/generate_204")
    }
}
