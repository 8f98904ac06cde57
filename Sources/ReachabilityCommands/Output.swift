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
        var out = LineBytes(capacity: 32)
        out.appendTimestamp(time)
        return out.string
    }

    /// A JSON string literal (RFC 8259 escaping: quote, backslash, terminal controls).
    package static func quote(_ text: String) -> String {
        var out = LineBytes(capacity: text.utf8.count + 2)
        out.appendQuoted(text)
        return out.string
    }

    package static func interfaceJSON(_ interface: NetworkInterface?) -> String {
        var out = LineBytes(capacity: 64)
        out.appendInterface(interface)
        return out.string
    }

    /// `{"time": …, "target": …, "status": …, "reachable": …, "connectionRequired": …,
    /// "flags": […], "rawFlags": …, "interface": {…} | null}`, keys in that order.
    package static func json(
        target: String, state: ReachabilityState, time: timespec = now(), extra: String = ""
    ) -> String {
        jsonBytes(target: target, state: state, time: time, extra: extra).string
    }

    /// ``json(target:state:time:extra:)``'s line and a newline, written to stdout
    /// at once. This runs once per line on the event path, between the kernel's
    /// answer and the write: the line is written as bytes into one buffer reserved
    /// up front and handed to write(2) as it is, with no string made on the way.
    package static func emitJSON(target: String, state: ReachabilityState) {
        var line = jsonBytes(target: target, state: state, time: now(), extra: "")
        line.append("\n")
        line.bytes.withUnsafeBytes { CLIProcess.writeOut(bytes: $0) }
    }

    private static func jsonBytes(target: String, state: ReachabilityState, time: timespec, extra: String)
        -> LineBytes
    {
        var out = LineBytes(capacity: 320 + target.utf8.count + extra.utf8.count)
        out.append("{\"time\": \"")
        out.appendTimestamp(time)
        out.append("\", \"target\": ")
        out.appendQuoted(target)
        out.append(", \"status\": ")
        out.appendQuoted(state.status.rawValue)
        out.append(state.isReachable ? ", \"reachable\": true" : ", \"reachable\": false")
        out.append(state.connectionRequired ? ", \"connectionRequired\": true" : ", \"connectionRequired\": false")
        out.append(", \"flags\": [")
        var first = true
        for (flag, name) in ReachabilityFlags.named where state.flags.contains(flag) {
            if !first { out.append(", ") }
            first = false
            out.appendQuoted(name)
        }
        out.append("], \"rawFlags\": ")
        out.appendDecimal(Int(state.flags.rawValue))
        out.append(", \"interface\": ")
        out.appendInterface(state.interface)
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
        CLIProcess.writeOut(terminalSafe(line) + "\n")
    }

    /// `text` with each terminal control (``isTerminalControl(_:)``: ESC, C1, bidi
    /// formatting) but the line feed and tab that lay out the output written as its
    /// UTF-8 bytes in `\xNN` form, as an interface name (which may hold any byte but
    /// `/`, `:` and whitespace) can hold them. JSON has none left (``quote(_:)``).
    package static func terminalSafe(_ text: String) -> String {
        func escaped(_ scalar: Unicode.Scalar) -> Bool { isTerminalControl(scalar) && scalar != "\n" && scalar != "\t" }
        guard text.unicodeScalars.contains(where: escaped) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard escaped(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            for byte in String(scalar).utf8 {
                out += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return out
    }

    /// `text` followed by spaces up to `width` characters (as is when longer).
    package static func pad(_ text: String, to width: Int) -> String {
        let count = text.count
        return count >= width ? text : text + String(repeating: " ", count: width - count)
    }

    /// Prints `rows` under `header`, each column as wide as its widest cell (the
    /// last one not padded). Cells are escaped (``terminalSafe(_:)``) by the caller,
    /// before the columns are measured.
    package static func emitTable(header: [String], rows: [[String]]) {
        let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : pad(cell, to: widths[column])
            }
            emit(cells.joined(separator: "  "))
        }
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
    /// included, is a hostname; any other word with `@` is refused (exit 2).
    package static let internet = "@internet"

    /// `argument` with the Internet's spelling read as no TARGET (for the commands
    /// that take one).
    package static func normalized(_ argument: String?) -> String? {
        argument == internet ? nil : argument
    }

    /// `note`: say on stderr when `argument` is `internet`, a hostname (once per
    /// command: `--all-namespaces` makes one instance per namespace).
    package static func make(
        _ argument: String?, queue: DispatchQueue? = nil, environment: NetworkEnvironment = .default, note: Bool = true
    )
        throws -> (name: String, reachability: Reachability)
    {
        if let argument, argument != internet, argument.contains("@") {
            // `@` is in no hostname: a spelling of the Internet's name gone wrong, or not a target.
            let hint = argument.hasPrefix("@") ? "; did you mean \(internet)?" : ""
            throw ReachabilityError(
                .invalidHostname, "\(quotedForMessage(argument)) is not a target: `@` is in no hostname\(hint)")
        }
        let (name, reachability) =
            if let argument = normalized(argument) {
                // Hostname parsing also takes IP literals (as addresses, no DNS) and names the bad input.
                (argument, try Reachability(hostname: argument, environment: environment, notificationQueue: queue))
            } else {
                (internet, try Reachability(environment: environment, notificationQueue: queue))
            }
        if note, let argument, argument.lowercased() == "internet" {
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

/// The bytes of one line of output, written in place (UTF-8): the JSON of the
/// event path is put together here rather than by String appends, each of
/// which costs a uniqueness check, a capacity check and a count update.
package struct LineBytes {
    package var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// The line as a string.
    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// `value` in decimal, with at least `width` digits (zeros in front).
    mutating func appendDecimal(_ value: Int, width: Int = 1) {
        guard value >= 0 else {
            // Negative values (a year before 0) as Swift prints them, padded as before.
            let text = String(value)
            for _ in 0..<max(0, width - text.utf8.count) { bytes.append(UInt8(ascii: "0")) }
            return append(text)
        }
        var divisor = 1
        var digits = 1
        while divisor <= value / 10 {
            divisor *= 10
            digits += 1
        }
        for _ in 0..<max(0, width - digits) { bytes.append(UInt8(ascii: "0")) }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `2026-11-22T08:42:21.438Z`: `time` in UTC, to the millisecond.
    mutating func appendTimestamp(_ time: timespec) {
        let millis = min(999, max(0, Int(time.tv_nsec / 1_000_000)))
        let date = CivilTime(secondsSinceEpoch: Int(time.tv_sec))
        // Years beyond 9999 (or before 0) keep all their digits.
        appendDecimal(date.year, width: 4)
        bytes.append(UInt8(ascii: "-"))
        appendTwoDigits(date.month)
        bytes.append(UInt8(ascii: "-"))
        appendTwoDigits(date.day)
        bytes.append(UInt8(ascii: "T"))
        appendTwoDigits(date.hour)
        bytes.append(UInt8(ascii: ":"))
        appendTwoDigits(date.minute)
        bytes.append(UInt8(ascii: ":"))
        appendTwoDigits(date.second)
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(ascii: "0") + UInt8(millis / 100))
        appendTwoDigits(millis % 100)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `value` (0–99) as two digits.
    private mutating func appendTwoDigits(_ value: Int) {
        bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / 10))
        bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10))
    }

    /// `text` as a JSON string literal (RFC 8259): quote, backslash and terminal
    /// controls escaped, everything else as it is.
    mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var clean = 0  // bytes up to here need no escape and are not yet copied
            var offset = 0
            while offset < utf8.count {
                let byte = utf8[offset]
                // Quote, backslash and C0 as RFC 8259 says; the other terminal controls
                // (DEL, C1, bidirectional formatting: multi-byte but for DEL) as \uXXXX too,
                // so that a JSON line shown in a terminal can't drive it either.
                let escaped: (length: Int, scalar: UInt32)?
                if byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F {
                    escaped = (1, UInt32(byte))
                } else if byte == 0xC2 || byte == 0xD8 || byte == 0xE2 {
                    escaped = Self.terminalControl(in: utf8, at: offset)
                } else {
                    escaped = nil
                }
                guard let (length, scalar) = escaped else {
                    offset += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<offset]))
                offset += length
                clean = offset
                bytes.append(UInt8(ascii: "\\"))
                switch scalar {
                case 0x22, 0x5C: bytes.append(UInt8(scalar))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(UInt8(ascii: "u"))
                    for shift in [12, 8, 4, 0] { bytes.append(hex[Int((scalar >> UInt32(shift)) & 15)]) }
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The length and value of the terminal control (``isTerminalControl(_:)``) whose
    /// UTF-8 starts at `offset`, if one does.
    static func terminalControl(in utf8: UnsafeBufferPointer<UInt8>, at offset: Int) -> (length: Int, scalar: UInt32)? {
        var decoder = Unicode.UTF8()
        var iterator = UnsafeBufferPointer(rebasing: utf8[offset...]).makeIterator()
        guard case .scalarValue(let scalar) = decoder.decode(&iterator), isTerminalControl(scalar) else { return nil }
        return (UTF8.width(scalar), scalar.value)
    }

    /// `{"name": …, "index": …, "type": …}`, or `null`.
    mutating func appendInterface(_ interface: NetworkInterface?) {
        guard let interface else { return append("null") }
        append("{\"name\": ")
        appendQuoted(interface.name)
        append(", \"index\": ")
        appendDecimal(Int(interface.index))
        append(", \"type\": ")
        appendQuoted(interface.type.rawValue)
        append("}")
    }
}

/// A moment in UTC as calendar fields (proleptic Gregorian, no leap seconds, as
/// `gmtime_r` gives them), by arithmetic: no time-zone state, no lock, no libc.
/// The days-to-date step is Howard Hinnant's `civil_from_days`.
package struct CivilTime: Equatable {
    package var year: Int
    /// 1–12.
    package var month: Int
    /// 1–31.
    package var day: Int
    package var hour: Int
    package var minute: Int
    package var second: Int

    package init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        (self.year, self.month, self.day) = (year, month, day)
        (self.hour, self.minute, self.second) = (hour, minute, second)
    }

    package init(secondsSinceEpoch seconds: Int) {
        // Floor division: a moment before 1970 is in the day before it.
        let days = seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
        let inDay = seconds - days * 86_400
        hour = inDay / 3600
        minute = inDay % 3600 / 60
        second = inDay % 60
        let shifted = days + 719_468  // days from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from March 1
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0...11, March first
        day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }
}
