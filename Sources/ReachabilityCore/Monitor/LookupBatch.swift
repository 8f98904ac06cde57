@_spi(Testing) import ReachabilityBase

/// One evaluation pass's lookups, apart from their I/O: every client's plan's
/// requests de-duplicated (an identical lookup is asked once, at its first
/// place), each plan's answers out of the shared ones, and the gateways they
/// name. Pure: ``ReaderMachine`` decides which of them the kernel is asked, the
/// monitor asks and hands each plan its answers.
struct LookupBatch: Sendable, Equatable {
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
struct DistinctRequests: Sendable, Equatable {
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
