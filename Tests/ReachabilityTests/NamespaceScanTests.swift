import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The pure parts of the namespace scan: the container id read from a
/// `/proc/PID/cgroup` text, and the events that turn one scan's namespaces into
/// the next one's.
@Suite struct NamespaceScanTests {
    /// 64 hex digits, lowercase: a container id.
    static let id = "4f3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b"
    static let other = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    struct CgroupCase: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var expected: String?
        var testDescription: String { name }
    }

    static let cgroups: [CgroupCase] = [
        CgroupCase(
            name: "Docker, cgroup v2 (systemd driver)", text: "0::/system.slice/docker-\(id).scope\n", expected: id),
        CgroupCase(
            name: "Docker, cgroup v1 (cgroupfs driver)",
            text: "12:memory:/docker/\(id)\n11:cpu,cpuacct:/docker/\(id)\n1:name=systemd:/docker/\(id)\n",
            expected: id),
        CgroupCase(
            name: "containerd (kubepods, systemd driver)",
            text: "0::/kubepods.slice/kubepods-besteffort.slice/"
                + "kubepods-besteffort-pod0a1b2c3d_4e5f_6a7b_8c9d_0e1f2a3b4c5d.slice/cri-containerd-\(id).scope\n",
            expected: id),
        CgroupCase(
            name: "CRI-O",
            text: "0::/kubepods.slice/kubepods-burstable.slice/"
                + "kubepods-burstable-pod11112222_3333_4444_5555_666677778888.slice/crio-\(id).scope\n",
            expected: id),
        CgroupCase(
            name: "podman", text: "0::/machine.slice/libpod-\(id).scope/container\n", expected: id),
        CgroupCase(
            name: "uppercase hex digits give the id in lowercase",
            text: "0::/system.slice/docker-\(id.uppercased()).scope\n", expected: id),
        CgroupCase(
            name: "63 hex digits: none", text: "0::/system.slice/docker-\(id.dropLast()).scope\n", expected: nil),
        CgroupCase(name: "65 hex digits: none", text: "0::/system.slice/docker-\(id)a.scope\n", expected: nil),
        CgroupCase(name: "128 hex digits: none", text: "0::/x/\(id)\(other)\n", expected: nil),
        CgroupCase(name: "no id", text: "0::/user.slice/user-0.slice/session-3.scope\n", expected: nil),
        CgroupCase(name: "empty", text: "", expected: nil),
        CgroupCase(
            name: "a 32-digit hex run (a systemd or job cgroup): none",
            text: "4:memory:/process_api/72c423817384f5e66cafbcd367707e15\n0::/\n", expected: nil),
        CgroupCase(
            name: "the id at the very end, no newline", text: "0::/docker/\(id)", expected: id),
        CgroupCase(
            name: "several lines: the last id",
            text: "12:memory:/docker/\(other)\n0::/system.slice/docker-\(id).scope\n", expected: id),
        CgroupCase(
            name: "two ids on one line: the last",
            text: "0::/docker/\(other)/docker-\(id).scope\n", expected: id),
        CgroupCase(
            name: "an id then a longer run: the id",
            text: "0::/docker/\(id)\n1:x:/\(other)\(other)\n", expected: id),
    ]

    @Test("containerID(inCgroup:)", arguments: cgroups)
    func containerID(_ example: CgroupCase) {
        #expect(NamespaceScan.containerID(inCgroup: example.text) == example.expected)
    }

    // MARK: events(from:oldHolders:to:newHolders:)

    typealias ID = NetworkNamespaceInfo.ID
    static let a = ID(device: 4, inode: 4_026_532_001)
    static let b = ID(device: 4, inode: 4_026_532_002)
    static let c = ID(device: 4, inode: 4_026_532_003)

    static func info(_ id: ID, names: [String] = [], pids: [Int32] = []) -> NetworkNamespaceInfo {
        NetworkNamespaceInfo(
            id: id, names: names,
            holders: pids.prefix(4).map { NetworkNamespaceHolder(pid: $0, command: "p\($0)", containerID: nil) },
            holderCount: pids.count, isCurrent: false)
    }

    /// The events from `old` to `new`, each info's holder pids as its holder table.
    static func events(_ old: [NetworkNamespaceInfo], _ new: [NetworkNamespaceInfo]) -> [NetworkNamespaceEvent] {
        func table(_ infos: [NetworkNamespaceInfo]) -> ([ID: NetworkNamespaceInfo], [ID: [Int32]]) {
            (
                Dictionary(uniqueKeysWithValues: infos.map { ($0.id, $0) }),
                Dictionary(uniqueKeysWithValues: infos.map { ($0.id, $0.holders.map(\.pid)) })
            )
        }
        let (from, oldHolders) = table(old)
        let (to, newHolders) = table(new)
        return NamespaceScan.events(from: from, oldHolders: oldHolders, to: to, newHolders: newHolders)
    }

    @Test("Nothing before, two now: both appear, by id")
    func appear() {
        let (one, two) = (Self.info(Self.b, names: ["/run/netns/b"]), Self.info(Self.a, pids: [7]))
        #expect(Self.events([], [one, two]) == [.appeared(two), .appeared(one)])
    }

    @Test("Gone: it disappears, with what was known of it")
    func disappear() {
        let gone = Self.info(Self.a, names: ["/run/netns/a"], pids: [9])
        let kept = Self.info(Self.b, names: ["/run/netns/b"])
        #expect(Self.events([gone, kept], [kept]) == [.disappeared(gone)])
    }

    @Test("Nothing changed: no event")
    func unchanged() {
        let infos = [Self.info(Self.a, names: ["/run/netns/a"]), Self.info(Self.b, pids: [3, 4])]
        #expect(Self.events(infos, infos).isEmpty)
        #expect(Self.events([], []).isEmpty)
    }

    @Test("A name added or removed (ip netns attach, a second name): changed")
    func namesChanged() {
        let before = Self.info(Self.a, names: ["/run/netns/a"])
        let more = Self.info(Self.a, names: ["/run/netns/a", "/run/netns/a2"])
        #expect(Self.events([before], [more]) == [.changed(more)])
        #expect(Self.events([more], [before]) == [.changed(before)])
        // A name given to a namespace held by a process: the holder carries over.
        let held = Self.info(Self.b, pids: [10])
        let named = Self.info(Self.b, names: ["/run/netns/b"], pids: [10])
        #expect(Self.events([held], [named]) == [.changed(named)])
    }

    @Test("A holder exited while another holds it: changed (a new first holder)")
    func holdersChanged() {
        let before = Self.info(Self.a, pids: [10, 11])
        let after = Self.info(Self.a, pids: [11])
        #expect(Self.events([before], [after]) == [.changed(after)])
        let joined = Self.info(Self.a, pids: [10, 11, 12])
        #expect(Self.events([before], [joined]) == [.changed(joined)])
    }

    @Test("Holders beyond the kept ones change: no event (only the count differs)")
    func holdersBeyondTheKeptOnes() {
        let before = Self.info(Self.a, pids: [1, 2, 3, 4, 5])
        let after = Self.info(Self.a, pids: [1, 2, 3, 4, 6, 7])
        #expect(Self.events([before], [after]).isEmpty)
    }

    @Test("An id reused by a new namespace (no common name, no common holder): disappeared, then appeared")
    func idReused() {
        let old = Self.info(Self.a, names: ["/run/netns/old"], pids: [10])
        let new = Self.info(Self.a, names: ["/run/netns/new"], pids: [20])
        #expect(Self.events([old], [new]) == [.disappeared(old), .appeared(new)])
        let oldHeld = Self.info(Self.b, pids: [30])
        let newHeld = Self.info(Self.b, pids: [31])
        #expect(Self.events([oldHeld], [newHeld]) == [.disappeared(oldHeld), .appeared(newHeld)])
    }

    @Test("The same id with a name in common, or a holder in common: the same namespace, changed")
    func idKeptByAName() {
        let before = Self.info(Self.a, names: ["/run/netns/x"], pids: [10])
        let sameName = Self.info(Self.a, names: ["/run/netns/x"], pids: [20])
        #expect(Self.events([before], [sameName]) == [.changed(sameName)])
        let sameHolder = Self.info(Self.a, names: ["/run/netns/y"], pids: [10])
        #expect(Self.events([before], [sameHolder]) == [.changed(sameHolder)])
    }

    @Test("Order: every disappearance first (by id), then appearances and changes by id")
    func order() {
        let a1 = Self.info(Self.a, names: ["/run/netns/a"])
        let b1 = Self.info(Self.b, pids: [5, 6])
        let c1 = Self.info(Self.c, names: ["/run/netns/c"])
        // a: appears; b: changed; c: disappears.
        let b2 = Self.info(Self.b, pids: [6])
        #expect(Self.events([b1, c1], [a1, b2]) == [.disappeared(c1), .appeared(a1), .changed(b2)])
        // a's id reused, c gone, b new: both disappearances before anything else.
        let a2 = Self.info(Self.a, names: ["/run/netns/other"])
        let events = Self.events([a1, c1], [a2, b1])
        #expect(Set(events.prefix(2)) == [.disappeared(a1), .disappeared(c1)], "\(events)")
        #expect(Array(events.dropFirst(2)) == [.appeared(a2), .appeared(b1)], "\(events)")
    }

    @Test("Disappearances by id, a reused id's among them (as events(from:…)'s documentation says)")
    func disappearancesByID() {
        // a (the lowest id) is reused by a new namespace, c is gone: the documentation
        // says "disappearances, then appearances and changes, each by id".
        let a1 = Self.info(Self.a, names: ["/run/netns/a"])
        let c1 = Self.info(Self.c, names: ["/run/netns/c"])
        let a2 = Self.info(Self.a, names: ["/run/netns/other"])
        #expect(Self.events([a1, c1], [a2]) == [.disappeared(a1), .disappeared(c1), .appeared(a2)])
    }
}
