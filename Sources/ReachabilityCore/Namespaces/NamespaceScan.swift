import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// One look at every network namespace the process can see: the named ones in
/// the directories given (`/run/netns`…) and, with `processes`, those held by a
/// process (`/proc/PID/ns/net`), keyed by namespace (device and inode of its nsfs
/// file). No descriptor is kept: a file is stat(2)ed, and only an entry of a named
/// directory never seen before is opened, to check that it is a network namespace.
struct NamespaceScan {
    /// What one scan found, and whether it saw everything it looked at.
    struct Outcome {
        var namespaces: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo]
        /// Every pid holding each namespace (the infos keep the first few).
        var holders: [NetworkNamespaceInfo.ID: [Int32]]
        /// False when the process ran out of descriptors or memory on the way: what
        /// was not seen is not gone (the caller keeps what it knew).
        var complete: Bool
        /// Named entries that are not network namespaces, and resource failures:
        /// each worth a word once.
        var problems: [String]
    }

    /// The namespaces one scan keeps, at most: far beyond any host (10,000 is the
    /// tested load), and bounds the tables an adversary's churn could grow.
    static let namespaceLimit = 65_536
    /// The entries read from one named directory, at most.
    static let directoryEntryLimit = 65_536
    /// The holders an info names (the lowest pids: a container's init first).
    static let holderLimit = 4
    /// `/proc/PID/comm` is at most 16 bytes; `/proc/PID/cgroup`'s first 4 KiB name
    /// the container.
    static let commLimit = 64
    static let cgroupLimit = 4096

    let directories: [String]
    let processes: Bool
    let systemCalls: SystemCalls
    /// Where `/proc` is (a test's fake tree; `/proc` in use).
    var procRoot = "/proc"

    /// Looks once. `previous`: the last outcome's namespaces, whose holders' names,
    /// container ids and checked named entries are reused instead of read again.
    /// `unchanged`: directories whose entries are the previous outcome's (inotify
    /// and the mount table said nothing of them), not listed again.
    func scan(previous: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo], unchanged: Set<String> = [])
        -> Outcome
    {
        var outcome = Outcome(namespaces: [:], holders: [:], complete: true, problems: [])
        let own = systemCalls.stat("\(procRoot)/self/ns/net")
        let nsfs = (try? own.get())?.identity.device
        var names: [NetworkNamespaceInfo.ID: [String]] = [:]
        if !unchanged.isEmpty {
            for (id, info) in previous {
                for name in info.names where unchanged.contains(Self.directory(of: name)) {
                    names[id, default: []].append(name)
                }
            }
        }
        for directory in directories where !unchanged.contains(directory) {
            let entries: [String]
            switch systemCalls.directoryEntries(directory, limit: Self.directoryEntryLimit + 2) {
            case .success(let found): entries = found
            case .failure(let failure):
                // A directory that doesn't exist (yet) is empty; no descriptor is a blind spot.
                if SystemError.resourceErrors.contains(failure.errno) {
                    outcome.complete = false
                    outcome.problems.append("cannot list \(directory): \(failure.reachabilityError)")
                }
                continue
            }
            for entry in entries.sorted() where entry != "." && entry != ".." {
                let path = directory == "/" ? "/\(entry)" : "\(directory)/\(entry)"
                switch identify(named: path, nsfs: nsfs, previous: previous) {
                case .namespace(let id): names[id, default: []].append(path)
                case .notANamespace(let why): outcome.problems.append("\(path) is not a network namespace: \(why)")
                case .unknown(let failure):
                    outcome.complete = false
                    outcome.problems.append("cannot look at \(path): \(failure.reachabilityError)")
                }
            }
        }
        var holders: [NetworkNamespaceInfo.ID: [Int32]] = [:]
        if processes {
            switch systemCalls.directoryEntries(procRoot) {
            case .success(let entries):
                for entry in entries {
                    guard let pid = Int32(entry), pid > 0 else { continue }
                    // EACCES (another user's process), ENOENT (it exited): not visible.
                    switch systemCalls.stat("\(procRoot)/\(pid)/ns/net") {
                    case .success(let status):
                        holders[NetworkNamespaceInfo.ID(status.identity), default: []].append(pid)
                    case .failure(let failure) where SystemError.resourceErrors.contains(failure.errno):
                        outcome.complete = false
                    case .failure:
                        continue
                    }
                }
            case .failure(let failure):
                outcome.complete = false
                outcome.problems.append("cannot list \(procRoot): \(failure.reachabilityError)")
            }
        }
        let ownID = (try? own.get()).map { NetworkNamespaceInfo.ID($0.identity) }
        for id in Set(names.keys).union(holders.keys).sorted() {
            guard outcome.namespaces.count < Self.namespaceLimit else {
                outcome.problems.append("over \(Self.namespaceLimit) network namespaces: the rest are not watched")
                break
            }
            let pids = (holders[id] ?? []).sorted()
            let known = previous[id]
            let kept = pids.prefix(Self.holderLimit).map { pid in
                known?.holders.first { $0.pid == pid } ?? holder(pid)
            }
            outcome.namespaces[id] = NetworkNamespaceInfo(
                id: id, names: names[id] ?? [], holders: kept, holderCount: pids.count, isCurrent: id == ownID)
            outcome.holders[id] = pids
        }
        return outcome
    }

    /// The directory part of `path` (`/` for `/NAME`).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private enum Identified {
        case namespace(NetworkNamespaceInfo.ID)
        case notANamespace(String)
        case unknown(SystemError)
    }

    /// What the entry at `path` is: a stat(2), and for an entry not seen before a
    /// check that the nsfs file is a network namespace (not a mount or user one).
    private func identify(named path: String, nsfs: UInt64?, previous: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo])
        -> Identified
    {
        let status: FileStatus
        switch systemCalls.stat(path) {
        case .success(let found): status = found
        case .failure(let failure) where SystemError.resourceErrors.contains(failure.errno): return .unknown(failure)
        case .failure(let failure): return .notANamespace("\(failure.reachabilityError)")
        }
        let id = NetworkNamespaceInfo.ID(status.identity)
        // `ip netns add` makes an empty file, then binds the namespace over it: a
        // file of another file system is no namespace (yet, or any more).
        if let nsfs, status.identity.device != nsfs { return .notANamespace("not a namespace file (nsfs)") }
        if previous[id]?.names.contains(path) == true { return .namespace(id) }
        switch systemCalls.openNetworkNamespace(path) {
        case .success(let fd):
            systemCalls.close(fd)
            return .namespace(id)
        case .failure(let failure) where SystemError.resourceErrors.contains(failure.errno):
            return .unknown(failure)
        case .failure(let failure):
            return .notANamespace("\(failure.reachabilityError)")
        }
    }

    /// A holder's command name and container id, read now (it may have exited:
    /// then empty, and the next scan drops it).
    private func holder(_ pid: Int32) -> NetworkNamespaceHolder {
        let comm = readSmallFile("\(procRoot)/\(pid)/comm", limit: Self.commLimit, systemCalls: systemCalls)
        let cgroup = readSmallFile("\(procRoot)/\(pid)/cgroup", limit: Self.cgroupLimit, systemCalls: systemCalls)
        return NetworkNamespaceHolder(
            pid: pid, command: String((comm ?? "").prefix { $0 != "\n" }),
            containerID: cgroup.flatMap(Self.containerID(inCgroup:)))
    }

    /// The container id in a `/proc/PID/cgroup` text: the last run of 64 hex digits
    /// (Docker's `docker-ID.scope` and `/docker/ID`, containerd's `cri-containerd-ID`,
    /// CRI-O's `crio-ID`, podman's `libpod-ID`), lowercase; nil when there is none.
    static func containerID(inCgroup text: String) -> String? {
        var found: Substring.UTF8View?
        var run = 0
        let bytes = text.utf8
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            let isHex = (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)
            run = isHex ? run + 1 : 0
            let next = bytes.index(after: index)
            // Exactly 64: a longer run is something else.
            if run == 64, next == bytes.endIndex || !Self.isHex(bytes[next]) {
                found = text[bytes.index(index, offsetBy: -63)..<next].utf8
            }
            index = next
        }
        return found.map { String(decoding: $0, as: UTF8.self).lowercased() }
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)
    }

    /// The events that turn `old` into `new`: a namespace seen only before has
    /// disappeared, one seen only now has appeared, and one whose names or kept
    /// holders differ has changed. An id the kernel gave again to a new namespace
    /// (it reuses a freed inode number) is a disappearance and an appearance: none
    /// of its names and none of its holders carried over. The order: disappearances,
    /// then appearances and changes, each by id.
    static func events(
        from old: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo], oldHolders: [NetworkNamespaceInfo.ID: [Int32]],
        to new: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo], newHolders: [NetworkNamespaceInfo.ID: [Int32]]
    ) -> [NetworkNamespaceEvent] {
        var gone: [NetworkNamespaceEvent] = []
        var came: [NetworkNamespaceEvent] = []
        for id in old.keys.sorted() where new[id] == nil { gone.append(.disappeared(old[id]!)) }
        for id in new.keys.sorted() {
            let now = new[id]!
            guard let before = old[id] else {
                came.append(.appeared(now))
                continue
            }
            if before.names == now.names && before.holders == now.holders { continue }
            let sameName = !Set(before.names).isDisjoint(with: now.names)
            let sameHolder = !Set(oldHolders[id] ?? []).isDisjoint(with: newHolders[id] ?? [])
            if !sameName && !sameHolder {
                gone.append(.disappeared(before))
                came.append(.appeared(now))
            } else if before.names != now.names || before.holders != now.holders {
                came.append(.changed(now))
            }
        }
        return gone.sorted { $0.namespace.id < $1.namespace.id } + came
    }
}
