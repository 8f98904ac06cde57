@_spi(Testing) import ReachabilityBase

/// What the monitor knows about one interface: its link state, its addresses,
/// and how it was classified.
@_spi(Testing) public struct InterfaceState: Sendable, Equatable {
    /// The kernel's interface index.
    public internal(set) var index: Int32
    var name: String
    var flags: UInt32
    var hardwareType: UInt16
    var operState: UInt8
    var kind: String?
    var classification: InterfaceClassification
    /// The DHCP lease says the network is metered (`ANDROID_METERED`); nil until
    /// the lease files were read for this link.
    var isMeteredByLease: Bool? = nil
    /// What nl80211 said of a Wi-Fi link (SSID, signal) at the last pass; nil when
    /// not read, not Wi-Fi, or nl80211 is unavailable.
    var wireless: WirelessStatus? = nil

    var isUp: Bool { flags & IFF.up != 0 }
    var hasCarrier: Bool { flags & IFF.lowerUp != 0 }
    /// Up with a carrier: a route out of it can carry traffic (what the flags
    /// evaluation asks of a route's link).
    var isUsable: Bool { isUp && hasCarrier }
    /// The loopback interface (IFF_LOOPBACK).
    public var isLoopback: Bool { flags & IFF.loopback != 0 }

    var publicInterface: NetworkInterface {
        NetworkInterface(name: name, index: Int(index), type: classification.type)
    }
}

/// An address on an interface, with the flags that decide whether it is usable.
struct InterfaceAddress: Sendable, Hashable {
    var address: IPAddress
    var prefixLength: UInt8
    var flags: UInt32
    var scope: UInt8

    /// Still in duplicate address detection (IPv6).
    var isTentative: Bool { flags & IFA.fTentative != 0 && flags & IFA.fOptimistic == 0 }
    /// Duplicate address detection found a conflict: never usable.
    var isDADFailed: Bool { flags & IFA.fDADFailed != 0 }
}

/// What ``InterfaceTable``'s lists are sorted and searched by: a link's index.
protocol IndexedByLink {
    var index: Int32 { get }
}

extension InterfaceState: IndexedByLink {}

/// The addresses of one link.
struct LinkAddresses: Sendable, Equatable, IndexedByLink {
    var index: Int32
    var list: [InterfaceAddress]
}

/// The link and address state of one network namespace, built from an rtnetlink
/// dump and kept current by events. A value type: the monitor hands copies to
/// evaluation, which is pure.
///
/// Links and addresses are arrays sorted by interface index, found by binary
/// search: evaluation reads them in index order without sorting, and an event
/// that changes one link runs no hashing (DESIGN §8: the event path's code).
@_spi(Testing) public struct InterfaceTable: Sendable, Equatable {
    /// The links, by ascending interface index.
    public private(set) var interfaces: [InterfaceState] = []
    /// The links that have addresses, by ascending interface index (only links in
    /// `interfaces`; never an empty list).
    private(set) var addresses: [LinkAddresses] = []
    /// The resolved link-layer address of each neighbor of links in `interfaces`,
    /// as the kernel's neighbor table has it (for the network identity): set by an
    /// entry in a valid state, kept while it is re-resolved or fails, removed when
    /// the kernel deletes the entry (it does when the link loses carrier or goes
    /// down). At most
    /// ``neighborLimit`` entries; past that, new neighbors are not kept.
    private(set) var neighbors: [NeighborKey: [UInt8]] = [:]

    /// The most neighbors kept (a router's LAN can have thousands; the identity
    /// needs only the gateways').
    static let neighborLimit = 4096

    /// A neighbor: its address on a link.
    struct NeighborKey: Sendable, Hashable {
        var index: Int32
        var address: IPAddress
    }

    /// An empty table: no links, no addresses.
    public init() {}

    subscript(index: Int32) -> InterfaceState? {
        let (found, position) = Self.search(interfaces, for: index)
        return found ? interfaces[position] : nil
    }

    func addresses(of index: Int32) -> [InterfaceAddress] {
        let (found, position) = Self.search(addresses, for: index)
        return found ? addresses[position].list : []
    }

    /// Where `index` is in `list` (sorted by index), or where it would go.
    static func search<Element: IndexedByLink>(_ list: [Element], for index: Int32) -> (found: Bool, position: Int) {
        var low = 0
        var high = list.count
        while low < high {
            let middle = (low + high) / 2
            let value = list[middle].index
            if value == index { return (true, middle) }
            if value < index { low = middle + 1 } else { high = middle }
        }
        return (false, low)
    }

    /// The link-layer address last resolved for `address` on link `index`, if any.
    func linkLayerAddress(of address: IPAddress, on index: Int32) -> [UInt8]? {
        neighbors[NeighborKey(index: index, address: address.withoutZone)]
    }

    /// The interface and address that own `address`, if any interface does. A
    /// zoned address (`fe80::1%3`) is owned only by the interface its zone names.
    func owner(of address: IPAddress) -> (index: Int32, address: InterfaceAddress)? {
        for entry in addresses where address.scopeID == 0 || UInt32(bitPattern: entry.index) == address.scopeID {
            if let match = entry.list.first(where: { $0.address.sameAddress(as: address) }) {
                return (entry.index, match)
            }
        }
        return nil
    }

    /// Applies one message. Returns true when anything the evaluation reads changed.
    /// `classify` is called only for links that are new or renamed or changed kind.
    @discardableResult
    public mutating func apply(_ message: NetlinkMessage, classify: (LinkMessage) -> InterfaceClassification) -> Bool {
        switch message {
        case .newLink(let link):
            return applyLink(link, classify: classify)
        case .deletedLink(let link):
            let known = Self.search(interfaces, for: link.index)
            if known.found { interfaces.remove(at: known.position) }
            let listed = Self.search(addresses, for: link.index)
            if listed.found { addresses.remove(at: listed.position) }
            forgetNeighbors(of: link.index)
            return known.found || listed.found
        case .newAddress(let message):
            // Links are dumped before addresses, and the kernel announces a link before
            // its addresses: an address of an unknown link is stale or forged, and
            // keeping it would let such messages grow the table without bound.
            guard Self.search(interfaces, for: message.index).found else { return false }
            let entry = InterfaceAddress(
                address: message.address, prefixLength: message.prefixLength, flags: message.flags,
                scope: message.scope)
            let listed = Self.search(addresses, for: message.index)
            guard listed.found else {
                addresses.insert(LinkAddresses(index: message.index, list: [entry]), at: listed.position)
                return true
            }
            if let position = addresses[listed.position].list.firstIndex(where: {
                $0.address == entry.address && $0.prefixLength == entry.prefixLength
            }) {
                guard addresses[listed.position].list[position] != entry else { return false }
                addresses[listed.position].list[position] = entry
            } else {
                addresses[listed.position].list.append(entry)
            }
            return true
        case .deletedAddress(let message):
            let listed = Self.search(addresses, for: message.index)
            guard listed.found,
                let position = addresses[listed.position].list.firstIndex(where: {
                    $0.address == message.address && $0.prefixLength == message.prefixLength
                })
            else { return false }
            if addresses[listed.position].list.count == 1 {
                addresses.remove(at: listed.position)
            } else {
                addresses[listed.position].list.remove(at: position)
            }
            return true
        case .neighbor(let message, let deleted):
            let key = NeighborKey(index: message.index, address: message.address.withoutZone)
            guard !deleted else { return neighbors.removeValue(forKey: key) != nil }
            // INCOMPLETE, FAILED and the like: being resolved again, or a router that
            // missed a few probes; the network is the same until another address
            // answers or the kernel deletes the entry (it does at carrier loss).
            guard let linkLayer = message.resolvedLinkLayerAddress,
                Self.search(interfaces, for: message.index).found
            else {
                return false
            }
            guard neighbors[key] != linkLayer else { return false }
            guard neighbors[key] != nil || neighbors.count < Self.neighborLimit else { return false }
            neighbors[key] = linkLayer
            return true
        case .route, .rule, .netconf, .nexthop, .error, .done, .overrun, .ignored:
            return false
        }
    }

    /// Applies an RTM_NEWLINK; returns whether the link changed.
    mutating func applyLink(_ link: LinkMessage, classify: (LinkMessage) -> InterfaceClassification) -> Bool {
        let (found, position) = Self.search(interfaces, for: link.index)
        let old = found ? interfaces[position] : nil
        let name = link.name ?? old?.name ?? "if\(link.index)"
        var merged = link
        merged.name = name
        let kind = link.kind ?? old?.kind
        merged.kind = kind
        let classification: InterfaceClassification
        if let old, old.name == name, old.kind == kind, old.hardwareType == link.hardwareType {
            classification = old.classification
        } else {
            classification = classify(merged)
        }
        let state = InterfaceState(
            index: link.index, name: name, flags: link.flags, hardwareType: link.hardwareType,
            operState: link.operState ?? old?.operState ?? IFOper.unknown, kind: kind,
            classification: classification, isMeteredByLease: old?.name == name ? old?.isMeteredByLease : nil,
            wireless: old?.name == name ? old?.wireless : nil)
        guard let old else {
            interfaces.insert(state, at: position)
            return true
        }
        guard state != old else { return false }
        interfaces[position] = state
        return true
    }

    /// Gives the table's link and address lists storage of their own (a copy of the
    /// lists, not of their elements' strings) when another copy of the table shares
    /// them. The reader calls it after a pass published the table, so that the next
    /// event's change doesn't copy them on the way to its line. (Not the neighbours:
    /// `Dictionary.reserveCapacity` runs unspecialized, and a gateway's neighbour
    /// entry changes far less often than links.)
    mutating func separate() {
        // reserveCapacity moves a shared buffer to one of its own, and is nothing otherwise.
        interfaces.reserveCapacity(interfaces.count)
        addresses.reserveCapacity(addresses.count)
    }

    /// Reads whether the links' leases say metered (`metered` gives the indices of
    /// those that do, for all the links it is asked about at once), for every link
    /// when `all`, else for the links not read yet. Returns whether a value changed.
    mutating func updateMeteredByLease(
        all: Bool, _ metered: ([(name: String, index: Int32)]) -> Set<Int32>
    ) -> Bool {
        let positions = interfaces.indices.filter { all || interfaces[$0].isMeteredByLease == nil }
        guard !positions.isEmpty else { return false }
        let answer = metered(positions.map { (interfaces[$0].name, interfaces[$0].index) })
        var changed = false
        for position in positions {
            let before = interfaces[position].isMeteredByLease
            let metered = answer.contains(interfaces[position].index)
            if before != metered {
                if before != nil { changed = true }
                interfaces[position].isMeteredByLease = metered
                changed = changed || metered
            }
        }
        return changed
    }

    /// Sets what nl80211 said of link `index`. Returns whether it changed.
    mutating func setWireless(_ status: WirelessStatus?, of index: Int32) -> Bool {
        let (found, position) = Self.search(interfaces, for: index)
        guard found, interfaces[position].wireless != status else { return false }
        interfaces[position].wireless = status
        return true
    }

    /// The links classified Wi-Fi that are administratively up: those whose nl80211
    /// status is read.
    var upWirelessLinks: [Int32] {
        var links: [Int32] = []
        for link in interfaces where link.classification.type == .wifi && link.isUp { links.append(link.index) }
        return links
    }

    /// Applies nl80211 reads: each link's status, or none (no nl80211, or not a
    /// wireless device). A read that failed (a busy driver, a timeout) says nothing
    /// new: the last status stands, so the identity's SSID doesn't flap. Returns
    /// whether any changed.
    mutating func apply(_ reads: [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>]) -> Bool {
        var changed = false
        for (index, read) in reads {
            switch read {
            case .success(let status): changed = setWireless(status, of: index) || changed
            case .failure(.noNL80211), .failure(.notWireless): changed = setWireless(nil, of: index) || changed
            case .failure(.failed): break
            }
        }
        return changed
    }

    /// Drops the neighbors of link `index`.
    private mutating func forgetNeighbors(of index: Int32) {
        guard neighbors.keys.contains(where: { $0.index == index }) else { return }
        neighbors = neighbors.filter { $0.key.index != index }
    }
}
