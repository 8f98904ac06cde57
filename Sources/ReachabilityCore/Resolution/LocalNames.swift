import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Which names the system resolver answers from the hosts file without asking a
/// server: nsswitch.conf's `hosts:` line lists `files` first, and the name (any
/// case) is on a line of the hosts file. Such a name resolves at once whatever
/// the DNS servers do, so the resolver pool runs it in a lane of its own
/// (``ResolverSchedule``): no number of stalled names delays it. getaddrinfo(3)
/// still gives the answer; this only decides when it is asked.
///
/// For a named namespace (`/run/netns/NAME`) the files are `/etc/netns/NAME/*`
/// where present, as the resolution thread sees them (`ip netns exec`'s overlay).
/// Each file is read again only when its identity, size or modification time
/// changes (two stat(2) calls per question), and at most 1 MiB of it: a larger
/// hosts file lists no name here (its names then take the common lane; nothing is
/// wrong, only slower behind stalled names). Without nsswitch.conf glibc asks DNS
/// first, so no name is local.
final class LocalNames: Sendable {
    private struct Cached: Sendable {
        var status: FileStatus?
        var value: Parsed
    }

    enum Parsed: Sendable, Equatable {
        case filesFirst(Bool)
        case names(Set<String>)
    }

    static let sizeLimit = 1 << 20
    private let cache = LockedValue<[String: Cached]>([:])
    /// The directory the files are read from: `/etc`, or a test's stand-in (a
    /// FIFO or an oversized file there, without touching the host's).
    private let etc: String

    init(etc: String = "/etc") {
        self.etc = etc
    }

    /// Whether `name` is answered from the hosts file, for a resolution in
    /// `namespace` (nil: the process's own) made through `systemCalls`.
    func contains(_ name: String, namespace: NetworkNamespace?, systemCalls: SystemCalls) -> Bool {
        let etc = paths(namespace, systemCalls: systemCalls)
        guard case .filesFirst(true)? = cached(etc("nsswitch.conf"), systemCalls: systemCalls, parse: Self.filesFirst)
        else { return false }
        guard case .names(let names)? = cached(etc("hosts"), systemCalls: systemCalls, parse: Self.names) else {
            return false
        }
        return names.contains(name.lowercased())
    }

    /// Where the resolution thread finds FILE of /etc (of ``etc``).
    private func paths(_ namespace: NetworkNamespace?, systemCalls: SystemCalls) -> (String) -> String {
        let etc = self.etc
        guard let name = namespace?.name else { return { "\(etc)/\($0)" } }
        return { file in
            let overlay = "\(etc)/netns/\(name)/\(file)"
            if case .success = systemCalls.stat(overlay) { return overlay }
            return "\(etc)/\(file)"
        }
    }

    private func cached(_ path: String, systemCalls: SystemCalls, parse: (String) -> Parsed) -> Parsed? {
        let status: FileStatus? =
            switch systemCalls.stat(path) {
            case .success(let status): status
            case .failure: nil
            }
        if let cached = cache.withLock({ $0[path] }), cached.status == status { return cached.value }
        let text =
            status == nil
            ? nil : readSmallFile(path, limit: Self.sizeLimit, wholeOrNothing: true, systemCalls: systemCalls)
        let value = parse(text ?? "")
        // A file that couldn't be read is read again next time (its status may not change).
        if status == nil || text != nil {
            cache.withLock { cache in
                if cache.count > 64 { cache.removeAll() }
                cache[path] = Cached(status: status, value: value)
            }
        }
        return value
    }

    /// Whether nsswitch.conf's `hosts:` line names `files` first.
    static func filesFirst(_ text: String) -> Parsed {
        for line in text.split(whereSeparator: \.isNewline) {
            let content = line.prefix { $0 != "#" }
            guard let colon = content.firstIndex(of: ":"),
                content[..<colon].trimmingWhitespace() == "hosts"
            else { continue }
            let first = content[content.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
                .first
            return .filesFirst(first == "files")
        }
        return .filesFirst(false)
    }

    /// The names (lower-cased) on the hosts file's lines: an address, then names.
    static func names(_ text: String) -> Parsed {
        var names = Set<String>()
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.prefix { $0 != "#" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count > 1, (try? IPAddress(String(fields[0]))) != nil else { continue }
            for name in fields.dropFirst() { names.insert(name.lowercased()) }
        }
        return .names(names)
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[start...end]
    }
}
