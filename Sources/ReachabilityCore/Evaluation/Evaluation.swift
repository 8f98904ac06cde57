@_spi(Testing) import ReachabilityBase

/// Asks the kernel: the answers to `requests`, in the same order.
typealias Lookup = (_ requests: [LookupRequest]) throws(ReachabilityError) -> [LookupResult]

/// What a subscription evaluates: the lookups it needs for a table, and its state
/// from the kernel's answers. Pure, and a value: a subscription takes a snapshot of
/// its evaluation once per pass (a hostname's target with its latest addresses, a
/// path evaluator with the DNS configuration read for that pass), and the event
/// pass, the start and the synchronous getters all run it through ``evaluate(in:lookup:)``.
protocol Evaluation: Sendable, Equatable {
    associatedtype State: Sendable & Equatable
    /// The lookups this evaluation needs over `table`, in the order ``state(from:for:in:)`` reads their answers.
    func lookups(for table: InterfaceTable) -> [LookupRequest]
    /// The state from the answers to `requests` (what ``lookups(for:)`` returned for `table`).
    func state(from results: [LookupResult], for requests: [LookupRequest], in table: InterfaceTable) -> State
}

extension Evaluation {
    /// The one evaluation path: plan the lookups, ask, evaluate.
    func evaluate(in table: InterfaceTable, lookup: Lookup) throws(ReachabilityError) -> State {
        let requests = lookups(for: table)
        return state(from: try lookup(requests), for: requests, in: table)
    }
}

extension Target: Evaluation {
    func lookups(for table: InterfaceTable) -> [LookupRequest] { lookups }

    func state(from results: [LookupResult], for requests: [LookupRequest], in table: InterfaceTable)
        -> ReachabilityState
    {
        evaluate(results, in: table)
    }
}

/// A `NetworkPath` evaluation: the path evaluator with what the pass read of the
/// resolver configuration.
struct PathEvaluation: Evaluation {
    var evaluator: PathEvaluator
    /// Whether nameservers are configured (``NameserverRule``), read for this pass.
    var dnsConfigured: Bool

    func lookups(for table: InterfaceTable) -> [LookupRequest] { evaluator.lookups(for: table) }

    func state(from results: [LookupResult], for requests: [LookupRequest], in table: InterfaceTable)
        -> NetworkPath
    {
        evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: dnsConfigured)
    }
}
