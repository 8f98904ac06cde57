@_spi(Testing) import ReachabilityBase

/// One resolution of a name, the way a hostname target resolves it: getaddrinfo
/// inside the environment's namespace (with `/etc/netns/NAME` for a named one),
/// through the environment's system calls.
/// For Connectivity's DNS-hijack check.
package enum HostLookup {
    /// The addresses of `name` (IPv4-mapped ones as IPv4), or nil when the name
    /// doesn't resolve or the resolver fails. Blocks the calling thread for as long
    /// as getaddrinfo takes (resolv.conf's timeout and attempts).
    package static func addresses(of name: String, environment: NetworkEnvironment) -> [IPAddress]? {
        guard (try? environment.validate()) != nil,
            case .success(.addresses(let list))? = try? JoinableThread.inNamespace(
                environment.networkNamespacePath, overlayEtc: true, systemCalls: environment.systemCalls,
                { () throws(ReachabilityError) -> Result<Resolution, ReachabilityError> in
                    do throws(ReachabilityError) {
                        return .success(
                            try ResolverPool.getaddrinfo(
                                Hostname.lookupName(name), systemCalls: environment.systemCalls))
                    } catch {
                        return .failure(error)
                    }
                }),
            !list.isEmpty
        else { return nil }
        return list
    }
}
