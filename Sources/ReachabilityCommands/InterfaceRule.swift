package import ReachabilityCore

/// One `--interface IF[:STATE]`: the minimum state, in systemd-networkd's terms.
package struct InterfaceCondition: Sendable, Equatable {
    package enum State: String, Sendable, CaseIterable, Comparable {
        /// Administratively up, with carrier.
        case carrier
        /// Carrier and a usable address (not tentative, not failed DAD).
        case degraded
        /// Carrier, a usable global address and a default route out of the interface.
        case routable

        package static func < (lhs: Self, rhs: Self) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    package var name: String
    package var state: State

    /// `name` at least in `state`.
    package init(name: String, state: State) {
        self.name = name
        self.state = state
    }

    /// The kernel's rules (dev_valid_name): 1 to 15 bytes, not "." or "..", no '/',
    /// ':' or whitespace. Any other name could never match, and wait would sit out
    /// the whole timeout.
    package static func isValidName(_ name: String) -> Bool {
        !(name.isEmpty || name.utf8.count > 15 || name == "." || name == ".."
            || name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace })
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }))
    }

    /// The state `details` is in (nil: not even carrier), counting only `family`'s
    /// addresses and routes when given.
    package static func state(of details: InterfaceDetails, family: IPAddress.Family?) -> State? {
        guard details.isUp, details.hasCarrier else { return nil }
        let usable = details.addresses.filter {
            !$0.isTentative && !$0.isDADFailed && (family == nil || $0.address.family == family)
        }
        guard !usable.isEmpty else { return .carrier }
        let global = usable.contains { !$0.address.isLinkLocal && !$0.address.isLoopback }
        let routes = details.defaultRouteFamilies.filter { family == nil || $0 == family }
        // The default route must be of a family the interface has a global address of.
        let routed = routes.contains { route in
            usable.contains { $0.address.family == route && !$0.address.isLinkLocal && !$0.address.isLoopback }
        }
        return global && routed ? .routable : .degraded
    }
}

extension InterfaceCondition {
    /// Parses `IF[:STATE]` (STATE defaults to routable); the error names what is wrong.
    package init(parsing argument: String) throws(UsageError) {
        let parts = argument.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0])
        guard Self.isValidName(name) else {
            throw UsageError("--interface \(quotedForMessage(argument)) is not an interface name")
        }
        self.name = name
        if parts.count == 2 {
            guard let state = State(rawValue: String(parts[1])) else {
                throw UsageError(
                    "--interface \(quotedForMessage(argument)): \(quotedForMessage(String(parts[1]))) is not a state "
                        + "(carrier, degraded or routable)")
            }
            self.state = state
        } else {
            state = .routable
        }
    }
}

/// What `wait` checks against each interface list.
package struct InterfaceRule: Sendable {
    package var conditions: [InterfaceCondition]
    package var any: Bool
    package var ignored: Set<String>
    package var family: IPAddress.Family?

    /// All of (or, with `any`, one of) `conditions`; without conditions, some
    /// interface but loopback and the `ignored` ones routable. Only `family` counts
    /// when given.
    package init(conditions: [InterfaceCondition], any: Bool, ignored: Set<String>, family: IPAddress.Family?) {
        self.conditions = conditions
        self.any = any
        self.ignored = ignored
        self.family = family
    }

    /// Whether `list` (one interface snapshot) meets the rule.
    package func holds(for list: [InterfaceDetails]) -> Bool {
        if conditions.isEmpty {
            // --ignore: some other interface (not loopback) is routable.
            return list.contains { details in
                details.interface.type != .loopback && !ignored.contains(details.interface.name)
                    && InterfaceCondition.state(of: details, family: family) == .routable
            }
        }
        let met = conditions.map { condition in
            guard let details = list.first(where: { $0.interface.name == condition.name }),
                let state = InterfaceCondition.state(of: details, family: family)
            else { return false }
            return state >= condition.state
        }
        return any ? met.contains(true) : !met.contains(false)
    }

    /// The named interfaces `list` doesn't have, in the order given.
    package func absentNames(in list: [InterfaceDetails]) -> [String] {
        conditions.map(\.name).filter { name in !list.contains { $0.interface.name == name } }
    }

    /// Why the rule doesn't hold over `list`, one phrase per unmet condition:
    /// `eth9 does not exist`, `eth0 is degraded (routable wanted)`, `eth1 has no
    /// carrier`; without conditions, that no other interface is routable.
    package func missing(in list: [InterfaceDetails]) -> [String] {
        guard !holds(for: list) else { return [] }
        let over = family.map { $0 == .ipv4 ? " over IPv4" : " over IPv6" } ?? ""
        if conditions.isEmpty {
            return [
                "no interface" + (ignored.isEmpty ? "" : " but \(ignored.sorted().joined(separator: ", "))")
                    + " is routable\(over)"
            ]
        }
        return conditions.compactMap { condition in
            guard let details = list.first(where: { $0.interface.name == condition.name }) else {
                return "\(condition.name) does not exist"
            }
            guard let state = InterfaceCondition.state(of: details, family: family) else {
                return details.isUp ? "\(condition.name) has no carrier" : "\(condition.name) is down"
            }
            guard state < condition.state else { return nil }
            return "\(condition.name) is \(state.rawValue)\(over) (\(condition.state.rawValue) wanted)"
        }
    }
}
