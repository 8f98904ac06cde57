package import Dispatch
package import Glibc
package import ReachabilityCore

/// The documented JSON line and the aligned text form of one state.
package enum Output {
    /// The wall-clock time now (CLOCK_REALTIME).
    package static func now() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return time
    }

    /// `2026-11-22T08:42:21.438Z`: UTC, milliseconds. Formatted by hand from
    /// clock_gettime, because this runs once per printed line on the event path.
    package static func timestamp(_ time: timespec = now()) -> String {
        var out = ""
        appendTimestamp(time, to: &out)
        return out
    }

    /// Appends ``timestamp(_:)``'s text to `out`, digit by digit (no intermediate strings).
    package static func appendTimestamp(_ time: timespec, to out: inout String) {
        var whole = time.tv_sec
        let millis = min(999, Int(time.tv_nsec / 1_000_000))
        var parts = tm()
        gmtime_r(&whole, &parts)
        func digits(_ value: Int, _ width: Int) {
            // Years beyond 9999 (or before 0) keep all their digits, as before.
            let text = String(value)
            for _ in 0..<max(0, width - text.utf8.count) { out.append("0") }
            out.append(text)
        }
        func two(_ value: Int32) {
            let value = Int(value)
            guard (0..<100).contains(value) else { return digits(value, 2) }
            out.unicodeScalars.append(Unicode.Scalar(UInt8(48 + value / 10)))
            out.unicodeScalars.append(Unicode.Scalar(UInt8(48 + value % 10)))
        }
        let year = Int(parts.tm_year) + 1900
        if (1000..<10000).contains(year) {
            two(Int32(year / 100))
            two(Int32(year % 100))
        } else {
            digits(year, 4)
        }
        out.append("-")
        two(parts.tm_mon + 1)
        out.append("-")
        two(parts.tm_mday)
        out.append("T")
        two(parts.tm_hour)
        out.append(":")
        two(parts.tm_min)
        out.append(":")
        two(parts.tm_sec)
        out.append(".")
        out.unicodeScalars.append(Unicode.Scalar(UInt8(48 + millis / 100)))
        two(Int32(millis % 100))
        out.append("Z")
    }

    /// A JSON string literal (RFC 8259 escaping: quote, backslash, control characters).
    package static func quote(_ text: String) -> String {
        var out = ""
        appendQuoted(text, to: &out)
        return out
    }

    /// Appends ``quote(_:)``'s literal to `out`; text with nothing to escape (the
    /// usual case) in one append.
    package static func appendQuoted(_ text: String, to out: inout String) {
        out.append("\"")
        defer { out.append("\"") }
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
        else { return out.append(text) }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
    }

    package static func interfaceJSON(_ interface: NetworkInterface?) -> String {
        var out = ""
        appendInterfaceJSON(interface, to: &out)
        return out
    }

    private static func appendInterfaceJSON(_ interface: NetworkInterface?, to out: inout String) {
        guard let interface else { return out.append("null") }
        out.append("{\"name\": ")
        appendQuoted(interface.name, to: &out)
        out.append(", \"index\": ")
        out.append(String(interface.index))
        out.append(", \"type\": ")
        appendQuoted(interface.type.rawValue, to: &out)
        out.append("}")
    }

    /// `{"time": …, "target": …, "status": …, "reachable": …, "connectionRequired": …,
    /// "flags": […], "rawFlags": …, "interface": {…} | null}`, keys in that order.
    /// Written into one string reserved up front: this runs once per line on the
    /// event path, between the kernel's answer and the write.
    package static func json(
        target: String, state: ReachabilityState, time: timespec = now(), extra: String = ""
    ) -> String {
        var out = ""
        out.reserveCapacity(256 + target.utf8.count + extra.utf8.count)
        out.append("{\"time\": \"")
        appendTimestamp(time, to: &out)
        out.append("\", \"target\": ")
        appendQuoted(target, to: &out)
        out.append(", \"status\": ")
        appendQuoted(state.status.rawValue, to: &out)
        out.append(state.isReachable ? ", \"reachable\": true" : ", \"reachable\": false")
        out.append(state.connectionRequired ? ", \"connectionRequired\": true" : ", \"connectionRequired\": false")
        out.append(", \"flags\": [")
        for (offset, name) in state.flags.names.enumerated() {
            if offset > 0 { out.append(", ") }
            appendQuoted(name, to: &out)
        }
        out.append("], \"rawFlags\": ")
        out.append(String(state.flags.rawValue))
        out.append(", \"interface\": ")
        appendInterfaceJSON(state.interface, to: &out)
        out.append(extra)
        out.append("}")
        return out
    }

    /// `{"status": …, "interfaces": [{…}], "gateways": […], "supportsIPv4": …,
    /// "supportsIPv6": …, "supportsDNS": …, "isExpensive": …, "linkQuality": …, "networkIdentity": …}`,
    /// keys in that order (`status`'s `"path"`, `watch --path`, the exporter's `/status`).
    package static func pathJSON(_ path: NetworkPath) -> String {
        let interfaces = path.availableInterfaces.map { interfaceJSON($0) }.joined(separator: ", ")
        let gateways = path.gateways.map { quote($0.description) }.joined(separator: ", ")
        return "{\"status\": \(quote(path.status.rawValue)), \"interfaces\": [\(interfaces)], "
            + "\"gateways\": [\(gateways)], \"supportsIPv4\": \(path.supportsIPv4), "
            + "\"supportsIPv6\": \(path.supportsIPv6), \"supportsDNS\": \(path.supportsDNS), "
            + "\"isExpensive\": \(path.isExpensive), \"linkQuality\": \(quote(path.linkQuality.rawValue)), "
            + "\"networkIdentity\": \(path.networkIdentity.map(identityJSON) ?? "null")}"
    }

    /// `{"id": …, "interface": …, "gateways": [{"address": …, "hardwareAddress": …}], "prefixes": […], "ssid": …}`.
    package static func identityJSON(_ identity: NetworkIdentity) -> String {
        let gateways = identity.gateways.map { gateway in
            "{\"address\": \(quote(gateway.address.description)), "
                + "\"hardwareAddress\": \(gateway.hardwareAddress.map(quote) ?? "null")}"
        }
        return "{\"id\": \(quote(identity.id)), \"interface\": \(quote(identity.interface)), "
            + "\"gateways\": [\(gateways.joined(separator: ", "))], "
            + "\"prefixes\": [\(identity.prefixes.map(quote).joined(separator: ", "))], "
            + "\"ssid\": \(identity.ssid.map(quote) ?? "null")}"
    }

    /// `2026-11-22T08:31:16.120Z  internet  reachableViaWiFi  -R -------  eth0 (#2, wiredEthernet)`.
    package static func line(target: String, state: ReachabilityState, width: Int, time: timespec = now()) -> String {
        let padded = pad(target, to: width)
        let status = pad(state.status.rawValue, to: 16)
        return "\(timestamp(time))  \(padded)  \(status)  \(state.flags)  \(state.interface?.description ?? "-")"
    }

    /// Writes one line to stdout at once (unbuffered). A failed write ends the
    /// command with status 1 (see ``CLIProcess``).
    package static func emit(_ line: String) {
        CLIProcess.writeOut(line + "\n")
    }

    /// `text` followed by spaces up to `width` characters (as is when longer).
    package static func pad(_ text: String, to width: Int) -> String {
        let count = text.count
        return count >= width ? text : text + String(repeating: " ", count: width - count)
    }
}

/// `--namespace PATH|NAME`, on every subcommand.
package enum Namespace {
    /// The help text of `--namespace`.
    package static let help =
        "Look at another network namespace: a namespace file (/proc/PID/ns/net, /run/netns/NAME) or the NAME of one made by `ip netns add`. Entering it needs root (CAP_SYS_ADMIN)."

    /// Refuses `--namespace ""`, which names no namespace.
    package static func validate(_ namespace: String?) throws(UsageError) {
        if let namespace, namespace.isEmpty { throw UsageError("--namespace \"\" names no namespace") }
    }

    /// The environment `namespace` names: a NAME without '/' is `/run/netns/NAME`, as
    /// `ip netns` keeps them; nil is this process's own namespace.
    package static func environment(_ namespace: String?) -> NetworkEnvironment {
        guard let namespace else { return .default }
        return NetworkEnvironment(networkNamespacePath: namespace.contains("/") ? namespace : "/run/netns/\(namespace)")
    }

    /// Ends the process when the namespace `namespace` names goes away: its reason on
    /// stderr, exit 1, as a watched target does. For the modes that watch no target
    /// of their own (`--connectivity`, whose verdict may already be notConnected and
    /// then never changes): an Internet target that prints nothing, sharing the
    /// environment's monitor, so costing no netlink socket of its own. Nil (and
    /// nothing started) for the process's own namespace, which can't go away.
    ///
    /// Called once the command's own watch of the namespace has started: a namespace
    /// that can't be opened now went away in between, and ends the command the same way.
    package static func exitWhenGone(_ namespace: String?) throws -> AnyObject? {
        guard let namespace else { return nil }
        let environment = environment(namespace)
        do {
            let (_, sentinel) = try TargetArgument.make(nil, environment: environment)
            TargetArgument.exitOnErrors(sentinel, resolverFailure: nil)
            try sentinel.start()
            return sentinel
        } catch let error as ReachabilityError where error.code == .namespace {
            let path = environment.networkNamespacePath ?? namespace
            CLIProcess.writeError("reachability: network namespace \(path) was deleted (\(error.message))\n")
            CLIProcess.finish(1)
        }
    }
}

/// Parses a TARGET argument into a watched instance and its display name.
package enum TargetArgument {
    /// How a command line names the Internet (the default route), as no TARGET does:
    /// `@` is in no hostname or address, so no host can be taken for it. It is also
    /// the display name and the exporter's `target` label. Any other word, `internet`
    /// included, is a hostname.
    package static let internet = "@internet"

    /// `argument` with the Internet's spelling read as no TARGET (for the commands
    /// that take one).
    package static func normalized(_ argument: String?) -> String? {
        argument == internet ? nil : argument
    }

    package static func make(
        _ argument: String?, queue: DispatchQueue? = nil, environment: NetworkEnvironment = .default
    )
        throws -> (name: String, reachability: Reachability)
    {
        let (name, reachability) =
            if let argument = normalized(argument) {
                // Hostname parsing also takes IP literals (as addresses, no DNS) and names the bad input.
                (argument, try Reachability(hostname: argument, environment: environment, notificationQueue: queue))
            } else {
                (internet, try Reachability(environment: environment, notificationQueue: queue))
            }
        if let argument, argument.lowercased() == "internet" {
            // Once the Internet's own spelling; say what it is now.
            CLIProcess.writeError(
                "reachability: note: \(quotedForMessage(argument)) is a hostname here; the Internet is \(internet) (or no TARGET)\n"
            )
        }
        // Nobody observes the command's notifications: posting them would only start
        // Foundation's NotificationCenter (most of `watch`'s memory) and a queue hop.
        reachability.postsNotifications = false
        return (name, reachability)
    }

    /// Ends the command when its instance meets an error it can't get past: the
    /// namespace went away (exit 1, as for "no longer reachable") or the resolver
    /// failed (exit `resolverFailure`; nil: report it on stderr and go on, as
    /// `watch` does while the library retries).
    package static func exitOnErrors(_ reachability: Reachability, resolverFailure: Int32?) {
        reachability.whenError = { _, error in
            CLIProcess.writeError("reachability: \(error)\n")
            if error.code == .namespace { CLIProcess.finish(1) }
            if let resolverFailure { CLIProcess.finish(resolverFailure) }
        }
    }

    /// The subcommands a mistyped TARGET may have meant.
    package static let subcommands = ["status", "watch", "wait", "check", "interfaces", "exporter"]

    /// `"did you mean `reachability watch`?"` when `argument` is one edit (an
    /// insertion, deletion, substitution or swap of two neighbours) from a
    /// subcommand's name; nil otherwise.
    package static func suggestion(for argument: String) -> String? {
        guard let match = subcommands.first(where: { editDistance(argument.lowercased(), $0) == 1 }) else {
            return nil
        }
        return "did you mean `reachability \(match)`?"
    }

    /// The optimal-string-alignment distance (Levenshtein plus adjacent swaps).
    package static func editDistance(_ left: String, _ right: String) -> Int {
        let a = Array(left.unicodeScalars)
        let b = Array(right.unicodeScalars)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }

    /// The first state the notifier delivers: waits for a hostname's first
    /// resolution (up to `timeout`), instant otherwise.
    /// Nil when none came (the timeout passed, or an error ended the notifier:
    /// see `lastError`).
    package static func firstState(of reachability: Reachability, timeout: Duration) async throws -> ReachabilityState?
    {
        try reachability.start()
        defer { reachability.stop() }
        return await firstElement(of: reachability.updates, within: timeout) { _ in true }
    }
}

/// The first element of `updates` that satisfies `matches`, or nil when `timeout`
/// passes first (or the sequence ends).
package func firstElement<Element: Sendable>(
    of updates: AsyncStream<Element>, within timeout: Duration, where matches: @escaping @Sendable (Element) -> Bool
) async -> Element? {
    await firstResult(within: timeout) {
        for await element in updates where matches(element) { return element }
        return nil
    }
}

/// A `--timeout`-style number of seconds: finite, not negative, at most a year
/// (so that converting it to a `Duration` can't overflow).
package enum Seconds {
    /// A year: the longest duration accepted.
    package static let limit = 31_536_000.0

    /// Refuses a value that is not a finite number of seconds from 0 (or more
    /// than 0 without `allowZero`) up to ``limit``, naming `option`.
    package static func check(_ value: Double, _ option: String, allowZero: Bool = true) throws(UsageError) {
        guard value.isFinite, value >= 0, allowZero || value > 0, value <= limit else {
            throw UsageError("\(option) \(value) is not a duration in seconds (0 to \(Int(limit)))")
        }
    }

    /// `value` seconds as a `Duration` (checked first).
    package static func duration(_ value: Double) -> Duration {
        .milliseconds(Int64((min(max(value, 0), limit) * 1000).rounded(.up)))
    }
}
