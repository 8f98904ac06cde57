/// One evaluation pass's lookups, apart from their I/O: every client's plan's
/// requests de-duplicated (an identical lookup is asked once, at its first
/// place), whether the pass reuses the answers known to hold after a carrier
/// change alone instead of asking the kernel, which it keeps after route events
/// alone (DESIGN §4.2), each plan's answers
/// out of the shared ones, and the gateways they name. Pure: the monitor asks
/// the kernel, records the ``Outcome`` under its lock
/// (``NetlinkMonitor/Shared/record(_:of:at:settled:)``) and hands each plan its answers.
struct LookupBatch: Sendable {
    /// The distinct requests, in the order the plans first ask them: what the
    /// kernel is asked, and the order of the answers.
    private(set) var distinct = DistinctRequests()
    /// Every plan's requests' slots, plan after plan (one array for all plans).
    private var planSlots: [Int] = []
    /// Where each plan's slots end in `planSlots`.
    private var planEnds: [Int] = []

    /// The batch of `plans`, each given as its requests, in the order the plans
    /// are later answered in.
    init(_ plans: some Collection<[LookupRequest]>) {
        // One allocation per array: the usual pass has one plan of two requests.
        var total = 0
        for plan in plans { total += plan.count }
        distinct = DistinctRequests(reservingCapacity: total)
        planSlots.reserveCapacity(total)
        planEnds.reserveCapacity(plans.count)
        for plan in plans {
            for request in plan { planSlots.append(distinct.insert(request)) }
            planEnds.append(planSlots.count)
        }
    }

    /// The batch of `plans`, or `previous` itself when the plans ask exactly what
    /// they asked in it (the same requests, plan by plan, in the same order): then
    /// one comparison per request replaces de-duplicating them again (a hash each
    /// past ``DistinctRequests/linearLimit``), the usual case of a pass after a
    /// change that moved no target's lookups.
    init(_ plans: some Collection<[LookupRequest]>, unlessSameAs previous: LookupBatch?) {
        if let previous, previous.asksTheSame(as: plans) {
            self = previous
        } else {
            self.init(plans)
        }
    }

    /// Whether `plans` ask exactly the requests of this batch's plans, in order.
    private func asksTheSame(as plans: some Collection<[LookupRequest]>) -> Bool {
        guard plans.count == planEnds.count else { return false }
        var start = 0
        for (plan, end) in zip(plans, planEnds) {
            guard plan.count == end - start else { return false }
            for (request, slot) in zip(plan, planSlots[start..<end]) where request != distinct.requests[slot] {
                return false
            }
            start = end
        }
        return true
    }

    /// The distinct requests, in order: what the kernel is asked.
    var requests: [LookupRequest] { distinct.requests }

    /// Each distinct request's index in ``requests``.
    var slots: [LookupRequest: Int] {
        Dictionary(uniqueKeysWithValues: requests.enumerated().map { ($1, $0) })
    }

    /// How many plans the batch holds.
    var planCount: Int { planEnds.count }

    /// Plan `plan`'s slots: the index of each of its requests in ``requests``, in its order.
    func slots(ofPlan plan: Int) -> ArraySlice<Int> {
        planSlots[(plan == 0 ? 0 : planEnds[plan - 1])..<planEnds[plan]]
    }

    /// Plan `plan`'s answers out of `answers` (one per request of ``requests``),
    /// in the order of its requests.
    func answers(forPlan plan: Int, in answers: [LookupResult]) -> [LookupResult] {
        slots(ofPlan: plan).map { answers[$0] }
    }

    /// The address families the requests ask about (`AF_INET`, `AF_INET6`).
    var families: Set<UInt8> {
        var families = Set<UInt8>()
        for request in requests {
            families.insert(request.destination.family == .ipv4 ? AddressFamily.inet : AddressFamily.inet6)
            if families.count == 2 { break }
        }
        return families
    }

    /// The answers a pass for `cause` may take without asking the kernel: the
    /// answers `known` to hold, when only the carrier of links that stayed up
    /// changed (``PassCause/carrierOnlyLinks``), every request's answer is known,
    /// and `linkdownRoutesMayBeIgnored(links, families)` (asked last, at most
    /// once: a netconf round trip) says the kernel keeps using routes over those
    /// links without their carrier for the requests' ``families``. Nil: look up.
    func reuse(
        cause: PassCause, known: KnownAnswers?,
        linkdownRoutesMayBeIgnored: (_ links: Set<Int32>, _ families: Set<UInt8>) -> Bool
    ) -> Outcome? {
        guard let links = cause.carrierOnlyLinks, let answers = known?.answers(for: requests),
            !linkdownRoutesMayBeIgnored(links, families)
        else { return nil }
        return .reused(answers, gateways: Self.gateways(requests, answers))
    }

    /// What a pass for `cause` may keep of `known`: when route events are all that
    /// changed (``PassCause/routesOnly``), and every request's answer is known and
    /// ``KnownAnswers/settled`` (looked up well after the last change that may move
    /// routes without a message), those answers, and the indexes of the requests a
    /// drained prefix covers, which the kernel is asked again (a route is an answer
    /// only for destinations its prefix covers: a route event covering none of a
    /// request's can't have moved its answer). Nil when nothing may be kept: the
    /// kernel is asked everything.
    func unmoved(cause: PassCause, known: KnownAnswers?) -> (answers: [LookupResult], moved: [Int])? {
        guard let prefixes = cause.routesOnly, let known, known.settled, let answers = known.answers(for: requests)
        else { return nil }
        var moved: [Int] = []
        for (index, request) in requests.enumerated() {
            if prefixes.contains(where: { $0.covers(request.destination) }) { moved.append(index) }
        }
        return moved.count < requests.count ? (answers, moved) : nil
    }

    /// The outcome of the kernel's `answers` to the requests at `moved` (in order),
    /// the other requests keeping their answers in `kept` (``unmoved(cause:known:)``).
    func lookedUp(_ answers: [LookupResult], at moved: [Int], keeping kept: [LookupResult]) -> Outcome {
        var all = kept
        for (index, answer) in zip(moved, answers) { all[index] = answer }
        return lookedUp(all)
    }

    /// How a pass's lookups ended, with what its answers leave for later passes.
    enum Outcome: Sendable, Equatable {
        /// The known answers were reused; `gateways` are those they name.
        case reused(_ answers: [LookupResult], gateways: Set<InterfaceTable.NeighborKey>)
        /// The kernel answered; `gateways` are those its answers name.
        case lookedUp(_ answers: [LookupResult], gateways: Set<InterfaceTable.NeighborKey>)
        /// The lookups failed (the pass is retried).
        case failed

        /// The answers, one per request of the batch; nil when the lookups failed.
        var answers: [LookupResult]? {
            switch self {
            case .reused(let answers, _), .lookedUp(let answers, _): answers
            case .failed: nil
            }
        }
    }

    /// The outcome of the kernel's `answers` to ``requests``.
    func lookedUp(_ answers: [LookupResult]) -> Outcome {
        .lookedUp(answers, gateways: Self.gateways(requests, answers))
    }

    /// Whether `results` may be about to move: a route among them goes out of a link
    /// that `table` has down (not administratively up) or doesn't have, which the
    /// kernel answers only while it is still taking that link down, before it
    /// deletes (IPv6) or retires (IPv4) its routes; and another link (not loopback)
    /// is usable, so the answer after that may be a route over it. With no other
    /// usable link, any later answer is as unreachable as this one.
    static func mayMove(_ results: [LookupResult], in table: InterfaceTable) -> Bool {
        var downLinks: [Int32] = []
        for case .route(let route) in results {
            route.forEachOutputLink { if table[$0]?.isUp != true { downLinks.append($0) } }
        }
        guard !downLinks.isEmpty else { return false }
        return table.interfaces.contains { $0.isUsable && !$0.isLoopback && !downLinks.contains($0.index) }
    }

    /// The gateways `results` name, on their links: for each route answer, the
    /// gateway out of the interface the request named and out of the route's own
    /// (a multipath route's next hop there, else its gateway). These are the
    /// neighbors whose link-layer address is part of a network identity.
    static func gateways(_ requests: [LookupRequest], _ results: [LookupResult]) -> Set<InterfaceTable.NeighborKey> {
        var gateways: Set<InterfaceTable.NeighborKey> = []
        for (request, result) in zip(requests, results) {
            guard case .route(let route) = result else { continue }
            if let index = request.outputInterface, let gateway = route.gateway(via: index) {
                gateways.insert(InterfaceTable.NeighborKey(index: index, address: gateway.withoutZone))
            }
            if let index = route.outputInterface, let gateway = route.gateway(via: index) {
                gateways.insert(InterfaceTable.NeighborKey(index: index, address: gateway.withoutZone))
            }
        }
        return gateways
    }
}

/// Distinct lookup requests in the order they were first inserted, each found by
/// a search while there are at most ``linearLimit`` (the usual pass asks two:
/// cheaper than hashing), by a dictionary built once there are more.
struct DistinctRequests: Sendable {
    /// Requests up to which a search beats hashing.
    static let linearLimit = 16
    /// The requests, each once.
    private(set) var requests: [LookupRequest] = []
    /// Each request's index in `requests`, once there are more than ``linearLimit``.
    private var slots: [LookupRequest: Int] = [:]

    init() {}

    /// Room for `capacity` requests.
    init(reservingCapacity capacity: Int) { requests.reserveCapacity(capacity) }

    /// `list`'s requests, each once.
    init(_ list: [LookupRequest]) {
        for request in list { _ = insert(request) }
    }

    /// The index of `request`, if it is here.
    func slot(of request: LookupRequest) -> Int? {
        requests.count <= Self.linearLimit ? requests.firstIndex(of: request) : slots[request]
    }

    /// The index of `request`, appended if it is not here yet.
    mutating func insert(_ request: LookupRequest) -> Int {
        if let slot = slot(of: request) { return slot }
        requests.append(request)
        if requests.count == Self.linearLimit + 1 {
            for (slot, request) in requests.enumerated() { slots[request] = slot }
        } else if requests.count > Self.linearLimit {
            slots[request] = requests.count - 1
        }
        return requests.count - 1
    }
}
