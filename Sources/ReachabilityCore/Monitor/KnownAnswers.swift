/// The kernel's lookup answers known to hold as of one generation of the table:
/// the last full pass's, plus those that starts looked up since at that same
/// generation. A pass after a carrier change alone takes its answers from here,
/// when every lookup it needs is known, instead of asking the kernel again; a pass
/// after route events alone keeps those no route covers, when they are
/// ``settled`` (DESIGN §4.2). Kept by the monitor under its lock; pure.
struct KnownAnswers: Sendable {
    /// The table generation the answers hold at.
    private(set) var generation: UInt64
    /// A full pass's distinct requests and their answers, in the same order.
    private var asked: DistinctRequests
    private var results: [LookupResult]
    /// Answers that starts looked up at `generation`.
    private var added: [LookupRequest: LookupResult] = [:]
    /// Every answer was looked up outside the time after a change in which the
    /// kernel may still move routes without a message
    /// (``NetlinkMonitor/Shared/answersSettled(at:)``).
    private(set) var settled: Bool

    /// A full pass's answers: `results[i]` answers `requests.requests[i]`.
    init(requests: DistinctRequests, results: [LookupResult], generation: UInt64, settled: Bool) {
        self.asked = requests
        self.results = results
        self.generation = generation
        self.settled = settled
    }

    /// A full pass's answers: `slots` maps each request to its answer's index in
    /// `results` (every index once).
    init(slots: [LookupRequest: Int], results: [LookupResult], generation: UInt64, settled: Bool = true) {
        let requests = DistinctRequests(slots.sorted { $0.value < $1.value }.map(\.key))
        self.init(requests: requests, results: results, generation: generation, settled: settled)
    }

    /// No answers yet, as of `generation`.
    init(generation: UInt64) {
        self.init(requests: DistinctRequests(), results: [], generation: generation, settled: true)
    }

    /// Adds answers asked at `generation` (the table's when the lookups began);
    /// ignored when the table has changed since the known ones. Unsettled answers
    /// (`settled` false) make the whole set unsettled.
    mutating func add(
        _ requests: [LookupRequest], _ answers: [LookupResult], askedAt generation: UInt64, settled: Bool
    ) {
        guard generation == self.generation, requests.count == answers.count else { return }
        self.settled = self.settled && settled
        for (request, answer) in zip(requests, answers) where asked.slot(of: request) == nil {
            added[request] = answer
        }
    }

    /// Whether a known answer goes out of `link`.
    func goOut(of link: Int32) -> Bool {
        results.contains { $0.goesOut(of: link) } || added.values.contains { $0.goesOut(of: link) }
    }

    /// The known answers to `requests`, in order; nil unless every one is known.
    func answers(for requests: [LookupRequest]) -> [LookupResult]? {
        // The usual case, a pass asking what the last full pass asked: no search.
        if requests == asked.requests { return results }
        var found: [LookupResult] = []
        found.reserveCapacity(requests.count)
        for request in requests {
            guard let answer = answer(to: request) else { return nil }
            found.append(answer)
        }
        return found
    }

    /// The known answer to `request`, if there is one.
    func answer(to request: LookupRequest) -> LookupResult? {
        if let slot = asked.slot(of: request) { return results[slot] }
        return added[request]
    }

    /// A pass at `generation` reused these answers: they still hold there.
    mutating func stillHold(at generation: UInt64) {
        self.generation = generation
    }
}
