@_spi(Testing) import ReachabilityBase

/// A snapshot of the namespace's interfaces, for tools like `reachability interfaces`.
public enum NetworkInterfaces {
    /// Every interface with its state and addresses, by index. Default routes are
    /// found with per-interface `fibmatch` lookups, not by dumping the routing table.
    /// Throws ``ReachabilityError`` for an environment whose namespace can't be
    /// entered or whose paths are malformed (see ``NetworkEnvironment``), and when
    /// the netlink socket fails.
    public static func list(environment: NetworkEnvironment = .default) throws(ReachabilityError)
        -> [InterfaceDetails]
    {
        try environment.validate()
        return try OneShotEvaluator.run(environment: environment) { table, lookup throws(ReachabilityError) in
            try InterfacesEvaluation().evaluate(in: table, lookup: lookup)
        }
    }
}
