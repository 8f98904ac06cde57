import Foundation
import TestSupport

/// Where one `ip` line of the kernel-differential test runs: the watched namespace
/// (through a `-batch` process per family, as a batch line cannot say `-6`), the
/// namespace of the far peers (whose admin state is the carrier of our links), or a
/// sysctl in the watched namespace.
enum DifferentialPlace: Sendable {
    case inet
    case inet6
    case far
    case sysctl
    /// A shell line run inside the watched namespace, `ip -n dt` in it meaning `ip`
    /// there (a script's bursts: `for …; done | ip -n dt -batch -`).
    case shell
}

/// One line for `ip -batch` (or a sysctl assignment), and how a person replays it by
/// hand with the namespaces named `dt` and `dtfar`.
struct DifferentialCommand: Sendable {
    var place: DifferentialPlace
    var line: String

    var replay: String {
        switch place {
        case .inet: "ip -n dt \(line)"
        case .inet6: "ip -n dt -6 \(line)"
        case .far: "ip -n dtfar \(line)"
        case .sysctl: "ip netns exec dt sysctl -qw \(line)"
        case .shell: line
        }
    }
}

extension DifferentialCommand {
    /// The command a replay line stands for (``replay``'s inverse; loops become
    /// `.shell`); nil for the lines that make the namespaces and links, which the test
    /// makes itself, for `watch`, and for comments.
    init?(replay: String) {
        let line = replay.trimmingCharacters(in: .whitespaces)
        let prefixes: [(String, DifferentialPlace)] = [
            ("ip -n dt -6 ", .inet6), ("ip -n dtfar ", .far), ("ip netns exec dt sysctl -qw ", .sysctl),
            ("ip -n dt ", .inet),
        ]
        guard !line.isEmpty, !line.hasPrefix("#"), !line.hasPrefix("ip netns add"), !line.contains(" type veth "),
            !line.hasSuffix("link set lo up"), !line.contains("accept_dad"), !line.contains("reachability watch")
        else { return nil }
        if line.hasPrefix("for ") || line.hasPrefix("{ ") {
            self.init(place: .shell, line: line)
            return
        }
        guard let (prefix, place) = prefixes.first(where: { line.hasPrefix($0.0) }) else { return nil }
        self.init(place: place, line: String(line.dropFirst(prefix.count)))
    }
}

/// One random step: what it runs, in order, and what a person types to replay it
/// (shorter than the lines for a burst).
struct DifferentialStep: Sendable {
    var kind: String
    var commands: [DifferentialCommand]
    var replay: [String]
    /// Seconds until an IPv6 route this step adds stops being used (`expires`).
    var expiresIn: Double?

    init(_ kind: String, _ commands: [DifferentialCommand], replay: [String]? = nil, expiresIn: Double? = nil) {
        self.kind = kind
        self.commands = commands
        self.replay = replay ?? commands.map(\.replay)
        self.expiresIn = expiresIn
    }

    /// The setup and steps of a report's command list (`# step N …` lines start
    /// steps), to run them again through the same checks, or fewer of them.
    static func parse(script: String) -> (setup: [DifferentialCommand], steps: [DifferentialStep]) {
        var setup: [DifferentialCommand] = []
        var steps: [DifferentialStep] = []
        let commands = script.components(separatedBy: "The commands so far").last ?? script
        for line in commands.split(separator: "\n").map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("# step ") {
                let kind = trimmed.split(separator: ":", maxSplits: 1).last.map(String.init) ?? "step"
                steps.append(DifferentialStep(kind.trimmingCharacters(in: .whitespaces), []))
                continue
            }
            guard let command = DifferentialCommand(replay: trimmed) else { continue }
            let expires = command.line.firstRange(of: "expires ").map { command.line[$0.upperBound...].prefix(1) }
            if steps.isEmpty {
                setup.append(command)
            } else {
                steps[steps.count - 1].commands.append(command)
                steps[steps.count - 1].replay.append(command.replay)
                if let expires, let seconds = Double(expires) { steps[steps.count - 1].expiresIn = seconds }
            }
        }
        return (setup, steps)
    }
}

/// The links of the watched namespace: `vA` (10.1.0.0/24, 2001:db8:1::/64), `vB`, `vC`,
/// each a veth whose peer `pA`… is in the far namespace. Our address on each is `.1`
/// (and sometimes `.5`); `.2` and `.3` are the gateways, whose IPv6 neighbour entries
/// are permanent.
struct DifferentialLink: Sendable {
    var number: Int
    var name: String { "v" + ["A", "B", "C"][number - 1] }
    var peer: String { "p" + ["A", "B", "C"][number - 1] }
    func v4(_ host: Int) -> String { "10.\(number).0.\(host)" }
    func v6(_ host: Int) -> String { "2001:db8:\(number)::\(host)" }
    func mac(_ host: Int) -> String { "02:00:00:00:0\(number):0\(host)" }

    static let all = (1...3).map(DifferentialLink.init(number:))
    static let gatewayHosts = [2, 3]

    /// Makes the gateways' neighbour entries permanent: IPv6 router selection
    /// (`rt6_select`) round-robins between equal routes whose gateway is not known
    /// reachable, so without them the kernel's answer would change from one lookup to
    /// the next. An admin down flushes them, so every admin up runs this again.
    var permanentNeighbours: [DifferentialCommand] {
        Self.gatewayHosts.map { host in
            DifferentialCommand(
                place: .inet6, line: "neigh replace \(v6(host)) lladdr \(mac(host)) dev \(name) nud permanent")
        }
    }
}

/// What the generator believes exists, so that most of its commands are valid. It
/// never asks the kernel: the steps of a seed depend on the seed alone, so a seed
/// replays the same commands on any machine. Being wrong only costs an error line.
private struct DifferentialModel {
    var adminUp = [true, true, true]
    var carrier = [true, true, true]
    var keepAddressOnDown = [false, false, false]
    var addresses: Set<String> = []
    /// Route identity (family, table, prefix, metric) → its delete line.
    var routes: [String: DifferentialCommand] = [:]
    /// Nexthop id → the link it uses (nil: a blackhole or a group).
    var nexthops: [Int: Int?] = [:]
    var rules: Set<String> = []
    var bigTable = false
}

/// The seeded step generator of the kernel-differential test.
struct DifferentialGenerator {
    private var random: SeededGenerator
    private var model = DifferentialModel()

    /// The step kinds (``Kind``'s names) never drawn: for a long run that looks past a
    /// known defect. A seed's steps depend on them too.
    private let excluded: Set<String>

    init(seed: UInt64, excluding excluded: Set<String> = []) {
        random = SeededGenerator(seed: seed)
        self.excluded = excluded
    }

    static let ipv4Prefixes = [
        "default", "198.18.0.0/15", "198.18.5.0/24", "198.18.5.5/32", "198.18.9.0/24", "192.0.2.0/24",
        "10.1.0.64/26",
    ]
    static let ipv6Prefixes = [
        "default", "2001:db8:1000::/48", "2001:db8:1000::/64", "2001:db8:1000::5/128", "2001:db8:2000::/48",
        "2001:db8:1::/112",
    ]
    /// Prefixes that live mostly in the policy tables.
    static let policyPrefixes: Set<String> = ["192.0.2.0/24", "2001:db8:2000::/48"]
    static let ipv4Nexthops = [1, 2, 3, 4]
    static let ipv6Nexthops = [11, 12, 13, 14]
    static let ipv4Group = 21
    static let ipv6Group = 31
    /// The /32s of the big multipath table: enough that reviving their next hops takes
    /// the kernel a while after the RTM_NEWADDR that starts it. Each has a metric of
    /// its own, so that each is a route of its own to the kernel (routes that differ
    /// only by prefix share one `fib_info`, revived at once).
    static let bigTableSize = 5000

    // MARK: Setup

    /// The seed's starting network, after the links exist: sysctls, addresses,
    /// neighbours, default routes, a policy rule per family and its table.
    mutating func setup() -> [DifferentialCommand] {
        var commands: [DifferentialCommand] = []
        for link in DifferentialLink.all {
            let index = link.number - 1
            model.keepAddressOnDown[index] = Bool.random(using: &random)
            let mode = Bool.random(using: &random) ? 1 : 0
            commands.append(
                DifferentialCommand(
                    place: .sysctl,
                    line:
                        "net.ipv6.conf.\(link.name).keep_addr_on_down=\(model.keepAddressOnDown[index] ? 1 : 0) net.ipv6.conf.\(link.name).addr_gen_mode=\(mode)"
                ))
            commands.append(DifferentialCommand(place: .far, line: "link set \(link.peer) up"))
            commands.append(DifferentialCommand(place: .inet, line: "link set \(link.name) up"))
            commands.append(DifferentialCommand(place: .inet, line: "addr add \(link.v4(1))/24 dev \(link.name)"))
            commands.append(DifferentialCommand(place: .inet6, line: "addr add \(link.v6(1))/64 dev \(link.name)"))
            model.addresses.formUnion(["\(link.v4(1))/24 \(link.name)", "\(link.v6(1))/64 \(link.name)"])
            commands += link.permanentNeighbours
        }
        let first = DifferentialLink.all[Int.random(in: 0..<3, using: &random)]
        let second = DifferentialLink.all[Int.random(in: 0..<3, using: &random)]
        commands += [
            add(.inet, "default", table: nil, metric: 10, "via \(first.v4(2)) dev \(first.name)"),
            add(.inet6, "default", table: nil, metric: 10, "via \(second.v6(2)) dev \(second.name)"),
            add(.inet, "192.0.2.0/24", table: 100, metric: 10, "via \(second.v4(3)) dev \(second.name)"),
            add(.inet6, "2001:db8:2000::/48", table: 100, metric: 10, "via \(first.v6(3)) dev \(first.name)"),
            DifferentialCommand(place: .inet, line: "rule add to 192.0.2.0/24 table 100 pref 100"),
            DifferentialCommand(place: .inet6, line: "rule add to 2001:db8:2000::/48 table 100 pref 100"),
        ]
        model.rules.formUnion(["4 192.0.2.0/24 100 100", "6 2001:db8:2000::/48 100 100"])
        return commands
    }

    // MARK: Steps

    enum Kind: String, CaseIterable {
        case admin, carrier, address, addressFlap, route, multipath, nexthop, nexthopDelete, rule, special, expiring
        case burst, bigTable, addressGeneration, keepAddress

        var weight: Int {
            switch self {
            case .admin: 10
            case .carrier: 8
            case .address: 10
            case .addressFlap: 3
            case .route: 18
            case .multipath: 10
            case .nexthop: 11
            case .nexthopDelete: 3
            case .rule: 5
            case .special: 5
            case .expiring: 6
            case .burst: 2
            case .bigTable: 1
            case .addressGeneration: 2
            case .keepAddress: 1
            }
        }
    }

    mutating func next() -> DifferentialStep {
        let kinds = Kind.allCases.filter { !excluded.contains($0.rawValue) }
        let total = kinds.reduce(0) { $0 + $1.weight }
        var pick = Int.random(in: 0..<total, using: &random)
        let kind = kinds.first { kind in
            defer { pick -= kind.weight }
            return pick < kind.weight
        }!
        switch kind {
        case .admin: return admin()
        case .carrier: return carrier()
        case .address: return address()
        case .addressFlap: return addressFlap()
        case .route: return route()
        case .multipath: return multipath()
        case .nexthop: return nexthop()
        case .nexthopDelete: return nexthopDelete()
        case .rule: return rule()
        case .special: return special()
        case .expiring: return expiring()
        case .burst: return burst()
        case .bigTable: return bigTable()
        case .addressGeneration: return addressGeneration()
        case .keepAddress: return keepAddress()
        }
    }

    private mutating func anyLink() -> DifferentialLink { DifferentialLink.all[Int.random(in: 0..<3, using: &random)] }

    private mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    private mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    private mutating func admin() -> DifferentialStep {
        let link = anyLink()
        let index = link.number - 1
        model.adminUp[index].toggle()
        guard model.adminUp[index] else {
            // An admin down flushes the link's nexthop objects (and the groups lose them),
            // and its IPv6 addresses unless keep_addr_on_down.
            model.nexthops = model.nexthops.filter { $0.value != link.number }
            if !model.keepAddressOnDown[index] {
                model.addresses = model.addresses.filter { !($0.hasSuffix(" \(link.name)") && $0.contains(":")) }
            }
            return DifferentialStep(
                "admin down", [DifferentialCommand(place: .inet, line: "link set \(link.name) down")])
        }
        return DifferentialStep(
            "admin up", [DifferentialCommand(place: .inet, line: "link set \(link.name) up")] + link.permanentNeighbours
        )
    }

    private mutating func carrier() -> DifferentialStep {
        let link = anyLink()
        let index = link.number - 1
        model.carrier[index].toggle()
        let state = model.carrier[index] ? "up" : "down"
        return DifferentialStep(
            "carrier \(state)", [DifferentialCommand(place: .far, line: "link set \(link.peer) \(state)")])
    }

    private mutating func address() -> DifferentialStep {
        let link = anyLink()
        let host = chance(70) ? 1 : 5
        let ipv6 = chance(50)
        let address = ipv6 ? "\(link.v6(host))/64" : "\(link.v4(host))/24"
        let key = "\(address) \(link.name)"
        let place: DifferentialPlace = ipv6 ? .inet6 : .inet
        if model.addresses.contains(key) {
            model.addresses.remove(key)
            if !ipv6 && host == 1 { model.addresses.remove("\(link.v4(5))/24 \(link.name)") }
            return DifferentialStep(
                "address del", [DifferentialCommand(place: place, line: "addr del \(address) dev \(link.name)")])
        }
        model.addresses.insert(key)
        let extra = ipv6 && chance(20) ? " noprefixroute" : ""
        return DifferentialStep(
            "address add", [DifferentialCommand(place: place, line: "addr add \(address) dev \(link.name)\(extra)")])
    }

    /// A link's global addresses of one family removed and ours added back in one
    /// batch, as a DHCP client that restarts does.
    private mutating func addressFlap() -> DifferentialStep {
        let link = anyLink()
        let ipv6 = chance(40)
        let place: DifferentialPlace = ipv6 ? .inet6 : .inet
        let (primary, secondary) =
            ipv6 ? ("\(link.v6(1))/64", "\(link.v6(5))/64") : ("\(link.v4(1))/24", "\(link.v4(5))/24")
        model.addresses.remove("\(secondary) \(link.name)")
        model.addresses.insert("\(primary) \(link.name)")
        return DifferentialStep(
            "address flap",
            [
                DifferentialCommand(place: place, line: "addr del \(secondary) dev \(link.name)"),
                DifferentialCommand(place: place, line: "addr del \(primary) dev \(link.name)"),
                DifferentialCommand(place: place, line: "addr add \(primary) dev \(link.name)"),
            ])
    }

    /// `route add` of a route the model doesn't have, else a replace or a delete of it.
    /// `type` is blackhole, unreachable or prohibit (then `body` is empty).
    private mutating func routeChange(
        _ place: DifferentialPlace, _ prefix: String, table: Int?, metric: Int, _ body: String, type: String? = nil,
        kind: String
    ) -> DifferentialStep {
        let key = routeKey(place, prefix, table: table, metric: metric)
        if let delete = model.routes[key], chance(40) {
            model.routes[key] = nil
            return DifferentialStep("\(kind) del", [delete])
        }
        let verb = model.routes[key] == nil && chance(70) ? "add" : "replace"
        return DifferentialStep(
            "\(kind) \(verb)", [record(place, verb, prefix, table: table, metric: metric, body, type: type)])
    }

    private func routeKey(_ place: DifferentialPlace, _ prefix: String, table: Int?, metric: Int) -> String {
        "\(place == .inet6 ? 6 : 4) \(table ?? 254) \(prefix) \(metric)"
    }

    private mutating func add(
        _ place: DifferentialPlace, _ prefix: String, table: Int?, metric: Int, _ body: String
    ) -> DifferentialCommand {
        record(place, "add", prefix, table: table, metric: metric, body)
    }

    /// `route VERB [TYPE] PREFIX metric M [table T] BODY` (`ip` takes the words in any
    /// order after the type), and the model learns how to delete it.
    private mutating func record(
        _ place: DifferentialPlace, _ verb: String, _ prefix: String, table: Int?, metric: Int, _ body: String,
        type: String? = nil
    ) -> DifferentialCommand {
        let route = "\(prefix) metric \(metric)\(table.map { " table \($0)" } ?? "")"
        model.routes[routeKey(place, prefix, table: table, metric: metric)] = DifferentialCommand(
            place: place, line: "route del \(route)")
        let typed = type.map { "\($0) \(route)" } ?? route
        return DifferentialCommand(place: place, line: "route \(verb) \(typed)\(body.isEmpty ? "" : " " + body)")
    }

    private mutating func placeAndPrefix() -> (DifferentialPlace, String, Int?, Int) {
        let ipv6 = chance(50)
        let prefix = pick(ipv6 ? Self.ipv6Prefixes : Self.ipv4Prefixes)
        let policy = Self.policyPrefixes.contains(prefix)
        let table: Int? = chance(policy ? 80 : 15) ? pick([100, 200]) : nil
        let metric = pick(ipv6 ? [10, 50, 1024] : [0, 10, 50])
        return (ipv6 ? .inet6 : .inet, prefix, table, metric)
    }

    private mutating func gateway(_ place: DifferentialPlace, on link: DifferentialLink) -> String {
        let host = pick(DifferentialLink.gatewayHosts)
        return place == .inet6 ? link.v6(host) : link.v4(host)
    }

    private mutating func route() -> DifferentialStep {
        let (place, prefix, table, metric) = placeAndPrefix()
        let link = anyLink()
        let body = chance(75) ? "via \(gateway(place, on: link)) dev \(link.name)" : "dev \(link.name)"
        return routeChange(place, prefix, table: table, metric: metric, body, kind: "route")
    }

    private mutating func nexthopList(_ place: DifferentialPlace) -> String {
        var links = DifferentialLink.all.shuffled(using: &random)
        links.removeLast(chance(70) ? 1 : 0)
        return links.map { link in
            let weight = chance(30) ? " weight \(Int.random(in: 1...3, using: &random))" : ""
            return "nexthop via \(gateway(place, on: link)) dev \(link.name)\(weight)"
        }.joined(separator: " ")
    }

    private mutating func multipath() -> DifferentialStep {
        let (place, prefix, table, metric) = placeAndPrefix()
        return routeChange(place, prefix, table: table, metric: metric, nexthopList(place), kind: "multipath")
    }

    private mutating func nexthop() -> DifferentialStep {
        let ipv6 = chance(50)
        let place: DifferentialPlace = ipv6 ? .inet6 : .inet
        let singles = ipv6 ? Self.ipv6Nexthops : Self.ipv4Nexthops
        let group = ipv6 ? Self.ipv6Group : Self.ipv4Group
        let existing = (singles + [group]).filter { model.nexthops[$0] != nil }
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 40 || existing.isEmpty {
            // Add (or replace) a single nexthop.
            let id = pick(singles)
            let link = anyLink()
            let verb = model.nexthops[id] == nil ? "add" : "replace"
            if chance(10) {
                model.nexthops[id] = .some(nil)
                return DifferentialStep(
                    "nexthop \(verb)", [DifferentialCommand(place: place, line: "nexthop \(verb) id \(id) blackhole")])
            }
            model.nexthops[id] = link.number
            let via = chance(85) ? "via \(gateway(place, on: link)) " : ""
            return DifferentialStep(
                "nexthop \(verb)",
                [DifferentialCommand(place: place, line: "nexthop \(verb) id \(id) \(via)dev \(link.name)")])
        }
        if roll < 55, singles.contains(where: { model.nexthops[$0] != nil }) {
            let members = singles.filter { model.nexthops[$0] != nil }.shuffled(using: &random).prefix(
                chance(50) ? 2 : 3)
            let spec = members.map { chance(30) ? "\($0),\(Int.random(in: 1...3, using: &random))" : "\($0)" }
            let verb = model.nexthops[group] == nil ? "add" : "replace"
            model.nexthops[group] = .some(nil)
            return DifferentialStep(
                "nexthop group",
                [
                    DifferentialCommand(
                        place: place, line: "nexthop \(verb) id \(group) group \(spec.joined(separator: "/"))")
                ])
        }
        // A route through a nexthop object.
        let id = pick(existing)
        let prefix = pick(ipv6 ? Self.ipv6Prefixes : Self.ipv4Prefixes)
        let table: Int? = chance(Self.policyPrefixes.contains(prefix) ? 80 : 15) ? pick([100, 200]) : nil
        let metric = pick(ipv6 ? [10, 50, 1024] : [0, 10, 50])
        return routeChange(place, prefix, table: table, metric: metric, "nhid \(id)", kind: "nhid route")
    }

    /// `ip nexthop del`: the kernel removes the IPv4 routes that use it without a
    /// message for them.
    private mutating func nexthopDelete() -> DifferentialStep {
        let ipv6 = chance(50)
        let ids = (ipv6 ? Self.ipv6Nexthops + [Self.ipv6Group] : Self.ipv4Nexthops + [Self.ipv4Group])
        let existing = ids.filter { model.nexthops[$0] != nil }
        let id = existing.isEmpty ? pick(ids) : pick(existing)
        model.nexthops[id] = nil
        return DifferentialStep(
            "nexthop del", [DifferentialCommand(place: ipv6 ? .inet6 : .inet, line: "nexthop del id \(id)")])
    }

    private mutating func rule() -> DifferentialStep {
        let ipv6 = chance(50)
        let to = ipv6 ? pick(["2001:db8:2000::/48", "2001:db8:1000::/64"]) : pick(["192.0.2.0/24", "198.18.5.0/24"])
        let table = pick([100, 200])
        let pref = pick([100, 200])
        let key = "\(ipv6 ? 6 : 4) \(to) \(table) \(pref)"
        let verb = model.rules.contains(key) ? "del" : "add"
        if verb == "del" { model.rules.remove(key) } else { model.rules.insert(key) }
        return DifferentialStep(
            "rule \(verb)",
            [
                DifferentialCommand(
                    place: ipv6 ? .inet6 : .inet, line: "rule \(verb) to \(to) table \(table) pref \(pref)")
            ])
    }

    private mutating func special() -> DifferentialStep {
        let (place, prefix, table, metric) = placeAndPrefix()
        return routeChange(
            place, prefix, table: table, metric: metric, "", type: pick(["blackhole", "unreachable", "prohibit"]),
            kind: "special")
    }

    private mutating func expiring() -> DifferentialStep {
        let prefix = pick(Self.ipv6Prefixes)
        let table: Int? = chance(Self.policyPrefixes.contains(prefix) ? 80 : 10) ? pick([100, 200]) : nil
        let metric = pick([10, 50, 1024])
        let seconds = Int.random(in: 1...3, using: &random)
        let link = anyLink()
        let body =
            chance(75)
            ? "via \(gateway(.inet6, on: link)) dev \(link.name) expires \(seconds)"
            : "expires \(seconds) \(nexthopList(.inet6))"
        let command = record(.inet6, "replace", prefix, table: table, metric: metric, body)
        return DifferentialStep("expiring route", [command], expiresIn: Double(seconds))
    }

    private mutating func burst() -> DifferentialStep {
        let count = Int.random(in: 100...400, using: &random)
        let up = (0..<3).filter { model.adminUp[$0] }
        let ipv6 = chance(40)
        let via: String
        if let index = up.first {
            via = "dev \(DifferentialLink.all[index].name)"
        } else {
            via = "blackhole"
        }
        let place: DifferentialPlace = ipv6 ? .inet6 : .inet
        func line(_ i: Int) -> String {
            let destination = ipv6 ? "2001:db8:64::\(String(i, radix: 16))/128" : "100.64.\(i / 256).\(i % 256)/32"
            return via == "blackhole" ? "route add blackhole \(destination)" : "route add \(destination) \(via)"
        }
        let flush = ipv6 ? "route flush 2001:db8:64::/48" : "route flush 100.64.0.0/16"
        let family = ipv6 ? " -6" : ""
        let pattern =
            ipv6
            ? (via == "blackhole"
                ? "route add blackhole 2001:db8:64::$(printf %x $i)/128"
                : "route add 2001:db8:64::$(printf %x $i)/128 \(via)")
            : (via == "blackhole"
                ? "route add blackhole 100.64.$((i/256)).$((i%256))/32"
                : "route add 100.64.$((i/256)).$((i%256))/32 \(via)")
        let replay =
            "{ for i in $(seq 0 \(count - 1)); do echo \"\(pattern)\"; done; echo \"\(flush)\"; } | ip -n dt\(family) -force -batch -"
        return DifferentialStep(
            "burst of \(count)",
            (0..<count).map { DifferentialCommand(place: place, line: line($0)) }
                + [DifferentialCommand(place: place, line: flush)],
            replay: [replay])
    }

    private mutating func bigTable() -> DifferentialStep {
        if model.bigTable {
            model.bigTable = false
            return DifferentialStep(
                "big table flush", [DifferentialCommand(place: .inet, line: "route flush 100.65.0.0/16")])
        }
        // Both links must be up, or each line is an error; `onlink` spares the gateway
        // check, so the links' addresses don't matter.
        guard model.adminUp[0], model.adminUp[1] else { return admin() }
        model.bigTable = true
        let (a, b) = (DifferentialLink.all[0], DifferentialLink.all[1])
        let nexthops = "nexthop via \(a.v4(2)) dev \(a.name) onlink nexthop via \(b.v4(2)) dev \(b.name) onlink"
        let lines = (0..<Self.bigTableSize).map { i in
            DifferentialCommand(
                place: .inet, line: "route add 100.65.\(i / 256).\(i % 256)/32 metric \(i + 1) \(nexthops)")
        }
        let replay =
            "for i in $(seq 0 \(Self.bigTableSize - 1)); do echo \"route add 100.65.$((i/256)).$((i%256))/32 metric $((i+1)) \(nexthops)\"; done | ip -n dt -force -batch -"
        return DifferentialStep("big multipath table", lines, replay: [replay])
    }

    private mutating func addressGeneration() -> DifferentialStep {
        let link = anyLink()
        let mode = pick(["none", "eui64"])
        return DifferentialStep(
            "addrgenmode \(mode)",
            [DifferentialCommand(place: .inet, line: "link set dev \(link.name) addrgenmode \(mode)")])
    }

    private mutating func keepAddress() -> DifferentialStep {
        let link = anyLink()
        let index = link.number - 1
        model.keepAddressOnDown[index].toggle()
        return DifferentialStep(
            "keep_addr_on_down",
            [
                DifferentialCommand(
                    place: .sysctl,
                    line: "net.ipv6.conf.\(link.name).keep_addr_on_down=\(model.keepAddressOnDown[index] ? 1 : 0)")
            ])
    }
}

/// A long-lived `ip -o -force -batch -` in a namespace, so that a step costs no fork.
/// After a step's lines it is sent `link show dev lo`, whose `1: lo: …` line says that
/// the kernel has done every line before it; the other lines it prints are errors
/// (`-force` goes on after them).
final class IPBatch {
    private let child: Child

    /// `options`: `-6` for the IPv6 batch, which makes `rule` and `neigh` lines IPv6.
    init(in namespace: TestNamespace, options: String = "") throws {
        child = try namespace.spawn(
            ["sh", "-c", "exec 2>&1; exec stdbuf -oL ip \(options) -o -force -batch -"], captureOutput: true)
    }

    deinit {
        child.closeInput()
        child.wait()
    }

    /// Runs `lines` and returns what `ip` said about them (its errors).
    func run(_ lines: [String]) throws -> [String] {
        let text = (lines + ["link show dev lo"]).joined(separator: "\n") + "\n"
        let written = DispatchSemaphore(value: 0)
        // Written from another thread: the error lines of a long batch would fill the
        // pipe that this thread reads while it was still writing.
        Thread.detachNewThread { [child] in
            child.write(text)
            written.signal()
        }
        defer { written.wait() }
        var said: [String] = []
        while let line = child.nextLine(timeout: 120) {
            if line.hasPrefix("1: lo:") { return said }
            said.append(line)
        }
        throw CommandFailed(command: "ip -batch", status: -1, stderr: "no end marker; it said \(said.suffix(5))")
    }
}
