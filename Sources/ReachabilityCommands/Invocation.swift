package import ReachabilityCore

/// A command line the small `reachability` runs itself: `status`, `watch`, `wait`
/// and `interfaces` without the options that need Connectivity. The full command
/// (`reachability-full`, swift-argument-parser's tree) describes every command line;
/// each of its commands gives the same value for the same options (`invocation`), so
/// both executables run one implementation (docs/DESIGN.md §4.5).
package enum Invocation: Equatable, Sendable {
    case status(StatusOptions)
    case watch(WatchOptions)
    case wait(WaitOptions)
    case interfaces(InterfacesOptions)
}

/// `reachability status [TARGET] [--json] [--timeout S] [--namespace NS]`.
package struct StatusOptions: Equatable, Sendable {
    package var target: String?
    package var json = false
    package var timeout: Double = 10
    package var namespace: String?

    /// Options as given (defaults for the rest).
    package init(target: String? = nil, json: Bool = false, timeout: Double = 10, namespace: String? = nil) {
        self.target = TargetArgument.normalized(target)
        self.json = json
        self.timeout = timeout
        self.namespace = namespace
    }

    /// What the command refuses before running.
    package func validate() throws(UsageError) {
        try Seconds.check(timeout, "--timeout")
        try Namespace.validate(namespace)
    }
}

/// `reachability watch [TARGET…] [--json] [--path] [--namespace NS]` (the full command
/// adds `--connectivity`).
package struct WatchOptions: Equatable, Sendable {
    package var targets: [String] = []
    package var json = false
    package var path = false
    package var namespace: String?

    /// Options as given (defaults for the rest).
    package init(targets: [String] = [], json: Bool = false, path: Bool = false, namespace: String? = nil) {
        self.targets = targets
        self.json = json
        self.path = path
        self.namespace = namespace
    }

    /// What the command refuses before running.
    package func validate() throws(UsageError) {
        try Namespace.validate(namespace)
    }
}

/// `reachability wait [TARGET] [--timeout S] [-i IF[:STATE]…] [--any] [--ignore IF…]
/// [-4|-6] [--dns] [--namespace NS]` (the full command adds `--connectivity`).
package struct WaitOptions: Equatable, Sendable {
    package var target: String?
    package var timeout: Double = 120
    package var interfaces: [String] = []
    package var any = false
    package var ignore: [String] = []
    package var ipv4 = false
    package var ipv6 = false
    package var dns = false
    package var namespace: String?

    /// Options as given (defaults for the rest).
    package init(
        target: String? = nil, timeout: Double = 120, interfaces: [String] = [], any: Bool = false,
        ignore: [String] = [], ipv4: Bool = false, ipv6: Bool = false, dns: Bool = false, namespace: String? = nil
    ) {
        self.target = TargetArgument.normalized(target)
        self.timeout = timeout
        self.interfaces = interfaces
        self.any = any
        self.ignore = ignore
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.dns = dns
        self.namespace = namespace
    }

    /// The one family -4/-6 ask for (nil: both).
    package var family: IPAddress.Family? { ipv4 ? .ipv4 : ipv6 ? .ipv6 : nil }

    /// What the command refuses before running (`--connectivity`'s own rules are
    /// the full command's).
    package func validate() throws(UsageError) {
        try Seconds.check(timeout, "--timeout")
        guard !(ipv4 && ipv6) else { throw UsageError("--ipv4 and --ipv6 exclude each other") }
        if (ipv4 || ipv6) && target != nil {
            throw UsageError("--ipv4 and --ipv6 apply to the Internet or interfaces, not to \(target ?? "")")
        }
        if target != nil && (!interfaces.isEmpty || !ignore.isEmpty) {
            throw UsageError("--interface and --ignore wait for interfaces, not for \(target ?? "")")
        }
        if !interfaces.isEmpty && !ignore.isEmpty {
            throw UsageError("--ignore applies without --interface (the named interfaces are all that count)")
        }
        if any && interfaces.isEmpty { throw UsageError("--any chooses among --interface options; none given") }
        for argument in interfaces { _ = try InterfaceCondition(parsing: argument) }
        for name in ignore where !InterfaceCondition.isValidName(name) {
            throw UsageError("--ignore \(quotedForMessage(name)) is not an interface name")
        }
        try Namespace.validate(namespace)
    }
}

/// `reachability interfaces [--json] [--namespace NS]`.
package struct InterfacesOptions: Equatable, Sendable {
    package var json = false
    package var namespace: String?

    /// Options as given (defaults for the rest).
    package init(json: Bool = false, namespace: String? = nil) {
        self.json = json
        self.namespace = namespace
    }

    /// What the command refuses before running.
    package func validate() throws(UsageError) {
        try Namespace.validate(namespace)
    }
}

// MARK: The small command's parser

extension Invocation {
    /// The subcommands' names: a first argument that is none of them is the
    /// default subcommand's (`status`) first argument, as in the full command.
    package static let subcommands = ["status", "watch", "wait", "check", "interfaces", "exporter", "help"]

    /// Parses `arguments` (without the program's name) when they are a command line
    /// the small `reachability` runs itself and they validate; nil for anything else:
    /// `check`, `exporter`, `--connectivity` and its options, help, versions and
    /// completion scripts, every form of an option but `--name value`, `--name=value`
    /// and `-x value`, grouped short flags, `--`, a value that starts with '-', an
    /// option or flag given twice that can't repeat, and every error. The full
    /// command then runs the same arguments and, for an error, prints its usage
    /// message. So where this accepts, it means what swift-argument-parser's parse
    /// means (a test compares the two over a corpus of command lines).
    package static func parse(_ arguments: [String]) -> Invocation? {
        guard let first = arguments.first, subcommands.contains(first) else {
            return status(arguments[...])
        }
        let rest = arguments.dropFirst()
        switch first {
        case "status": return status(rest)
        case "watch": return watch(rest)
        case "wait": return wait(rest)
        case "interfaces": return interfaces(rest)
        default: return nil
        }
    }

    private static func status(_ arguments: ArraySlice<String>) -> Invocation? {
        var options = StatusOptions()
        guard
            let parsed = ParsedArguments(
                arguments, flags: ["json"], options: ["timeout", "namespace"], repeatable: [], shorts: [:]),
            parsed.positionals.count <= 1
        else { return nil }
        options.target = TargetArgument.normalized(parsed.positionals.first)
        options.json = parsed.flags.contains("json")
        if let timeout = parsed.values["timeout"]?.first {
            guard let seconds = Double(timeout) else { return nil }
            options.timeout = seconds
        }
        options.namespace = parsed.values["namespace"]?.first
        return (try? options.validate()) == nil ? nil : .status(options)
    }

    private static func watch(_ arguments: ArraySlice<String>) -> Invocation? {
        guard
            let parsed = ParsedArguments(
                arguments, flags: ["json", "path"], options: ["namespace"], repeatable: [], shorts: [:])
        else { return nil }
        let options = WatchOptions(
            targets: parsed.positionals, json: parsed.flags.contains("json"), path: parsed.flags.contains("path"),
            namespace: parsed.values["namespace"]?.first)
        return (try? options.validate()) == nil ? nil : .watch(options)
    }

    private static func wait(_ arguments: ArraySlice<String>) -> Invocation? {
        guard
            let parsed = ParsedArguments(
                arguments, flags: ["any", "ipv4", "ipv6", "dns"], options: ["timeout", "namespace"],
                repeatable: ["interface", "ignore"], shorts: ["i": "interface", "4": "ipv4", "6": "ipv6"]),
            parsed.positionals.count <= 1
        else { return nil }
        var options = WaitOptions(
            target: parsed.positionals.first, interfaces: parsed.values["interface"] ?? [],
            any: parsed.flags.contains("any"), ignore: parsed.values["ignore"] ?? [],
            ipv4: parsed.flags.contains("ipv4"), ipv6: parsed.flags.contains("ipv6"), dns: parsed.flags.contains("dns"),
            namespace: parsed.values["namespace"]?.first)
        if let timeout = parsed.values["timeout"]?.first {
            guard let seconds = Double(timeout) else { return nil }
            options.timeout = seconds
        }
        return (try? options.validate()) == nil ? nil : .wait(options)
    }

    private static func interfaces(_ arguments: ArraySlice<String>) -> Invocation? {
        guard
            let parsed = ParsedArguments(
                arguments, flags: ["json"], options: ["namespace"], repeatable: [], shorts: [:]),
            parsed.positionals.isEmpty
        else { return nil }
        let options = InterfacesOptions(
            json: parsed.flags.contains("json"), namespace: parsed.values["namespace"]?.first)
        return (try? options.validate()) == nil ? nil : .interfaces(options)
    }
}

/// One subcommand's arguments split into flags, option values and positionals, in
/// the forms ``Invocation/parse(_:)`` accepts; nil for any other form.
private struct ParsedArguments {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    var positionals: [String] = []

    init?(
        _ arguments: ArraySlice<String>, flags: Set<String>, options: Set<String>, repeatable: Set<String>,
        shorts: [Character: String]
    ) {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            var name: String
            var inline: String?
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                guard !body.isEmpty else { return nil }  // "--": the full command reads what follows
                if let equals = body.firstIndex(of: "=") {
                    name = String(body[..<equals])
                    inline = String(body[body.index(after: equals)...])
                } else {
                    name = String(body)
                }
            } else if argument.hasPrefix("-") {
                // "-x" alone; "-xy", "-xVALUE", "-x=VALUE" and "-" are the full command's.
                guard argument.count == 2, let long = shorts[argument.last!] else { return nil }
                name = long
            } else {
                // A subcommand's name here may be one the full command reads as such.
                guard !argument.isEmpty, !Invocation.subcommands.contains(argument) else { return nil }
                positionals.append(argument)
                continue
            }
            if flags.contains(name) {
                guard inline == nil, !self.flags.contains(name) else { return nil }
                self.flags.insert(name)
            } else if options.contains(name) || repeatable.contains(name) {
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.endIndex else { return nil }
                    value = arguments[index]
                    index += 1
                }
                guard !value.isEmpty, !value.hasPrefix("-") else { return nil }
                guard repeatable.contains(name) || values[name] == nil else { return nil }
                values[name, default: []].append(value)
            } else {
                return nil
            }
        }
    }
}
