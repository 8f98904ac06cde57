@_spi(Testing) import ReachabilityBase

/// The kernel's answers of the last pass, which hold until something that can
/// move one happens: what a pass after route events alone keeps where no drained
/// prefix covers a lookup (``ReaderMachine``), and the links a link-down ends the
/// drain for (``ReaderDrain``). Owned by the reader's machine; pure.
struct KnownAnswers: Sendable {
    /// The pass's distinct requests and their answers, in the same order.
    private let asked: DistinctRequests
    private let results: [LookupResult]

    /// A pass's answers: `results[i]` answers `requests.requests[i]`.
    init(requests: DistinctRequests, results: [LookupResult]) {
        asked = requests
        self.results = results
    }

    /// Whether a known answer goes out of `link`.
    func goOut(of link: Int32) -> Bool {
        results.contains { $0.goesOut(of: link) }
    }

    /// The known answer to `request`, if there is one.
    func answer(to request: LookupRequest) -> LookupResult? {
        asked.slot(of: request).map { results[$0] }
    }
}
