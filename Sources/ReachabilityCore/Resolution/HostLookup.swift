@_spi(Testing) import ReachabilityBase
import ReachabilitySystem

/// One resolution of a name, the way a hostname target resolves it: getaddrinfo
/// inside the environment's namespace (with `/etc/netns/NAME` for a named one),
/// through the environment's system calls.
/// For Connectivity's DNS-hijack check.
package enum HostLookup {
    /// The addresses of `name` (IPv4-mapped ones as IPv4), or nil when the name
    /// doesn't resolve or the resolver fails. Throws when the process or the host is
    /// out of descriptors or memory (`SystemError.resourceErrors`) for the lookup,
    /// its thread or the namespace: that says nothing about the name. Blocks the
    /// calling thread for as long as getaddrinfo takes (resolv.conf's timeout and attempts).
    package static func addresses(of name: String, environment: NetworkEnvironment) throws(ReachabilityError)
        -> [IPAddress]?
    {
        guard (try? environment.validate()) != nil else { return nil }
        let outcome: Result<Resolution, ReachabilityError>
        do throws(ReachabilityError) {
            outcome = try JoinableThread.inNamespace(
                environment, overlayEtc: true,
                { () throws(ReachabilityError) -> Result<Resolution, ReachabilityError> in
                    do throws(ReachabilityError) {
                        return .success(
                            try ResolverPool.getaddrinfo(
                                Hostname.lookupName(name), systemCalls: environment.systemCalls))
                    } catch {
                        return .failure(error)
                    }
                })
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(.addresses(let list)) where !list.isEmpty: return list
        case .failure(let error) where error.errno.map(SystemError.resourceErrors.contains) == true: throw error
        default: return nil
        }
    }
}
