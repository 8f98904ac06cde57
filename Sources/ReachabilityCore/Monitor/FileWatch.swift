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
    private let watches = LockedValue<[Int32: [Entry]]>([:])

    /// One owner's interest in a name (every name when empty) of a watched directory.
    private struct Entry: Equatable {
        var owner: UInt64
        var name: String
        var subject: Subject
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
                let entry = Entry(owner: owner, name: name, subject: subject)
                if !(watches[wd] ?? []).contains(entry) { watches[wd, default: []].append(entry) }
            }
        }
        return true
    }

    /// Drops `owner`'s watches; a directory no one watches any more is left.
    func remove(owner: UInt64) {
        let unwatched = watches.withLock { watches -> [Int32] in
            var unwatched: [Int32] = []
            for (wd, entries) in watches {
                let kept = entries.filter { $0.owner != owner }
                watches[wd] = kept.isEmpty ? nil : kept
                if kept.isEmpty { unwatched.append(wd) }
            }
            return unwatched
        }
        for wd in unwatched { system.unwatch(fd, wd) }
    }

    /// Whether anything is watched at all.
    var isEmpty: Bool { watches.withLock { $0.isEmpty } }

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
                    for entry in watches.values.joined() { touched[entry.owner, default: []].insert(entry.subject) }
                    continue
                }
                if name.isEmpty, let entries = watches[wd] {
                    // The directory itself moved or went away: its owners look at everything.
                    let owners = Set(entries.map(\.owner))
                    for entry in watches.values.joined() where owners.contains(entry.owner) {
                        touched[entry.owner, default: []].insert(entry.subject)
                    }
                    continue
                }
                for entry in watches[wd] ?? []
                where entry.name == name
                    || (entry.name.isEmpty && (entry.subject != .leases || LeaseFiles.isLeaseFileName(name)))
                {
                    touched[entry.owner, default: []].insert(entry.subject)
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
