import CNetlink
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Watches directories with inotify for changes to the files of interest in them,
/// for every monitor of the reader thread (one instance for them all, whatever the
/// number of namespaces: `fs.inotify.max_user_instances` is 128 by default): the
/// resolver's configuration, the file a watched namespace is bound to, lease
/// directories. Each watch belongs to an owner (a monitor's token), and a drain
/// says which owners' subjects changed. Read by the reader thread (its descriptor
/// is in the epoll set); a watch may be added from any thread (a `PathMonitor`'s
/// own resolv.conf).
///
/// `@unchecked Sendable`: the descriptor is read on the reader thread only, the
/// watches are behind a lock, and it is closed with the reader thread.
final class FileWatch: @unchecked Sendable {
    enum Subject: Hashable, Sendable {
        /// resolv.conf, hosts, nsswitch.conf (for the process, or `/etc/netns/NAME`).
        case resolverConfiguration
        /// The file a watched namespace is bound to (`/run/netns/NAME`).
        case namespaceFile
        /// Any file in a directory of DHCP leases (``LeaseFiles``).
        case leases
    }

    let fd: Int32
    private let system: SystemCalls
    private let watches = LockedValue(Watches())

    /// Who watches what, indexed both ways, so that an event, an add and an owner's
    /// removal cost what they concern and not the number of owners (one per
    /// namespace: thousands share `/etc` and `/run/netns`).
    private struct Watches {
        /// By watch descriptor, then file name ("": every name): each owner's subjects.
        var byDirectory: [Int32: [String: [UInt64: Set<Subject>]]] = [:]
        /// Each owner's (watch descriptor, name) pairs, for its removal.
        var byOwner: [UInt64: Set<Key>] = [:]

        struct Key: Hashable {
            var wd: Int32
            var name: String
        }

        /// Every subject of every owner in `owners` (nil: every owner).
        func everything(of owners: Set<UInt64>?) -> [UInt64: Set<Subject>] {
            var touched: [UInt64: Set<Subject>] = [:]
            for names in byDirectory.values {
                for interests in names.values {
                    for (owner, subjects) in interests where owners?.contains(owner) ?? true {
                        touched[owner, default: []].formUnion(subjects)
                    }
                }
            }
            return touched
        }
    }

    /// A new inotify instance, made (and later read and closed) through `systemCalls`.
    init(systemCalls: SystemCalls) throws(ReachabilityError) {
        system = systemCalls
        switch systemCalls.inotify() {
        case .success(let fd): self.fd = fd
        case .failure(let failure): throw failure.reachabilityError
        }
    }

    deinit {
        system.close(fd)
    }

    /// Watches `names` in `directory` (every name when empty) for `subject` of
    /// `owner`, once; returns false, watching nothing, when the directory can't be
    /// watched (it does not exist, or inotify's limits are reached).
    @discardableResult
    func add(directory: String, names: [String], subject: Subject, owner: UInt64) -> Bool {
        guard case .success(let wd) = system.watchDirectory(fd, directory, writes: subject == .leases) else {
            return false
        }
        watches.withLock { watches in
            for name in names.isEmpty ? [""] : names {
                watches.byDirectory[wd, default: [:]][name, default: [:]][owner, default: []].insert(subject)
                watches.byOwner[owner, default: []].insert(Watches.Key(wd: wd, name: name))
            }
        }
        return true
    }

    /// Drops `owner`'s watches; a directory no one watches any more is left.
    func remove(owner: UInt64) {
        let unwatched = watches.withLock { watches -> [Int32] in
            var unwatched: [Int32] = []
            for key in watches.byOwner.removeValue(forKey: owner) ?? [] {
                watches.byDirectory[key.wd]?[key.name]?[owner] = nil
                if watches.byDirectory[key.wd]?[key.name]?.isEmpty == true {
                    watches.byDirectory[key.wd]?[key.name] = nil
                }
                if watches.byDirectory[key.wd]?.isEmpty == true {
                    watches.byDirectory[key.wd] = nil
                    unwatched.append(key.wd)
                }
            }
            return unwatched
        }
        for wd in unwatched { system.unwatch(fd, wd) }
    }

    /// Reads every pending event; returns, by owner, the subjects whose files
    /// changed (every owner's, all of them, when the kernel dropped events or a
    /// watched directory went away).
    func drain() -> [UInt64: Set<Subject>] {
        var touched: [UInt64: Set<Subject>] = [:]
        var buffer = [UInt8](repeating: 0, count: 8192)
        let header = 16  // wd, mask, cookie, len: four 32-bit fields
        while true {
            // Nothing left (EAGAIN) ends the drain (SystemCalls retries EINTR).
            let outcome = buffer.withUnsafeMutableBytes { system.read(fd, into: $0, subject: .inotify) }
            guard case .success(let count) = outcome, count > 0 else { break }
            // Read after the events: a watch added meanwhile is in it.
            let watches = watches.withLock { $0 }
            var offset = 0
            while offset + header <= count {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw in
                    (
                        raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                        raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let end = min(count, offset + header + length)
                let name = String(decoding: buffer[(offset + header)..<end].prefix { $0 != 0 }, as: UTF8.self)
                offset = end
                if mask & cnl_inotify_overflow() != 0 {
                    // Lost events: everything may have changed.
                    for (owner, subjects) in watches.everything(of: nil) {
                        touched[owner, default: []].formUnion(subjects)
                    }
                    continue
                }
                guard let names = watches.byDirectory[wd] else { continue }
                if name.isEmpty {
                    // The directory itself moved or went away: its owners look at everything.
                    let owners = Set(names.values.flatMap(\.keys))
                    for (owner, subjects) in watches.everything(of: owners) {
                        touched[owner, default: []].formUnion(subjects)
                    }
                    continue
                }
                for (owner, subjects) in names[name] ?? [:] { touched[owner, default: []].formUnion(subjects) }
                for (owner, subjects) in names[""] ?? [:] {
                    // A lease directory's other files are no lease.
                    let relevant = LeaseFiles.isLeaseFileName(name) ? subjects : subjects.subtracting([.leases])
                    if !relevant.isEmpty { touched[owner, default: []].formUnion(relevant) }
                }
            }
        }
        return touched
    }

    /// The directories and file names whose changes change what the system
    /// resolver answers in `namespace` (nil: the process's own): `/etc`'s
    /// resolv.conf, hosts, nsswitch.conf and gai.conf, where a symbolic
    /// resolv.conf points (systemd-resolved's stub), systemd-resolved's upstream
    /// list, and for `/run/netns/NAME` the files of `/etc/netns/NAME`.
    static func resolverFiles(for namespace: NetworkNamespace?, systemCalls: SystemCalls) -> [(
        directory: String, names: [String]
    )] {
        var list: [(directory: String, names: [String])] = [
            ("/etc", ["resolv.conf", "hosts", "nsswitch.conf", "gai.conf", "host.conf"]),
            ("/run/systemd/resolve", ["resolv.conf", "stub-resolv.conf"]),
        ]
        if case .success(let resolved) = systemCalls.realpath("/etc/resolv.conf") {
            if let slash = resolved.lastIndex(of: "/"), resolved != "/etc/resolv.conf" {
                let directory = String(resolved[..<slash])
                let name = String(resolved[resolved.index(after: slash)...])
                if !directory.isEmpty && !list.contains(where: { $0.directory == directory && $0.names.contains(name) })
                {
                    list.append((directory, [name]))
                }
            }
        }
        if let name = namespace?.name {
            list.append(("/etc/netns/\(name)", ["resolv.conf", "hosts", "nsswitch.conf", "gai.conf"]))
        }
        return list
    }
}
