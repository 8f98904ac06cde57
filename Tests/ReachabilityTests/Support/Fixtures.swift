import Foundation

/// Loads the captured kernel datagrams in `Fixtures/` (made by `capture_fixtures.py`).
enum Fixture {
    struct Missing: Error, CustomStringConvertible {
        var name: String
        var description: String { "fixture \(name).bin is missing from the test bundle" }
    }

    /// RTM_GETLINK dump of the capture namespace: lo, veth1, veth0, then NLMSG_DONE.
    static let links = "links"
    /// RTM_GETADDR dump of the capture namespace, then NLMSG_DONE.
    static let addresses = "addresses"
    /// RTM_GETROUTE 8.8.8.8: unicast via 192.0.2.254 on veth0.
    static let routeGet = "route-get"
    /// RTM_GETROUTE 192.0.2.3 (a neighbour no interface owns): unicast on veth0, no gateway.
    static let routeGetOnLink = "route-get-onlink"
    /// RTM_GETROUTE 192.0.2.1: RTN_LOCAL on lo.
    static let routeGetLocal = "route-get-local"
    /// RTM_GETROUTE 2001:4860:4860::8888 with no IPv6 default route: -ENETUNREACH.
    static let routeGetError = "route-get-error"

    static let all = [links, addresses, routeGet, routeGetOnLink, routeGetLocal, routeGetError]

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "bin", subdirectory: "Fixtures") else {
            throw Missing(name: name)
        }
        return [UInt8](try Data(contentsOf: url))
    }
}
