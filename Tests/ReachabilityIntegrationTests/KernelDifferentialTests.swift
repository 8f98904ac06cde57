import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// What the differential test compares for one target: `watch --json`'s line, or the
/// library's one-off answer.
struct DifferentialAnswer: Equatable, Sendable, CustomStringConvertible {
    var status: String
    var rawFlags: Int
    var interface: String?

    var description: String { "\(status) rawFlags=\(rawFlags) interface=\(interface ?? "null")" }

    init(status: String, rawFlags: Int, interface: String?) {
        self.status = status
        self.rawFlags = rawFlags
        self.interface = interface
    }

    init(_ state: ReachabilityState) {
        self.init(
            status: NetworkStatus(flags: state.flags).rawValue, rawFlags: Int(state.flags.rawValue),
            interface: state.interface?.name)
    }

    /// A `watch --json` line's target and answer; nil for anything else.
    static func parse(_ line: String) -> (target: String, answer: DifferentialAnswer)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let target = object["target"] as? String, let status = object["status"] as? String,
            let rawFlags = object["rawFlags"] as? Int
        else { return nil }
        let interface = (object["interface"] as? [String: Any])?["name"] as? String
        return (target, DifferentialAnswer(status: status, rawFlags: rawFlags, interface: interface))
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Seconds with two decimals, for reports.
private func seconds(_ duration: Duration) -> String { String(format: "%.2f", duration.seconds) }

/// One disagreement: a line to list it by, and the full report.
struct DifferentialFailure: Sendable {
    var headline: String
    var report: String
}

/// How the suite runs: the fixed seeds, one seed replayed, or a long run.
enum DifferentialConfig {
    private static let environment = ProcessInfo.processInfo.environment

    /// `REACHABILITY_DIFFERENTIAL_STEPS`: a long run of about this many steps, over
    /// consecutive seeds from `REACHABILITY_DIFFERENTIAL_SEED` (else one from the clock).
    static let longRunSteps = environment["REACHABILITY_DIFFERENTIAL_STEPS"].flatMap { Int($0) }
    /// `REACHABILITY_DIFFERENTIAL_SEED` alone: replay that seed, printing its steps.
    static let replaySeed = environment["REACHABILITY_DIFFERENTIAL_SEED"].flatMap { UInt64($0) }
    static var replaying: Bool { longRunSteps == nil && (replaySeed != nil || script != nil) }
    /// `REACHABILITY_DIFFERENTIAL_EXCLUDE=expiring,nexthopDelete`: step kinds never
    /// drawn (``DifferentialGenerator/Kind``), to look past known defects.
    static let excludedKinds = Set(
        (environment["REACHABILITY_DIFFERENTIAL_EXCLUDE"] ?? "").split(separator: ",").map(String.init))

    /// `REACHABILITY_DIFFERENTIAL_SCRIPT=FILE`: run a report's command list (or a
    /// shortened one) instead of a seed, with the same checks: to minimise a case.
    static let script = environment["REACHABILITY_DIFFERENTIAL_SCRIPT"]

    /// Every seed runs this many steps (in every mode, so that a seed is the same
    /// sequence everywhere), each in fresh namespaces with a fresh `watch`.
    static let stepsPerSeed = 200

    /// Seeds that found real defects, each with what it found (at which step, in the
    /// code of the day; a step whose defect is a race or an expiry can move by a few);
    /// the default CI run is these.
    static let regressionSeeds: [(seed: UInt64, found: String)] = [
        (12, "step 16: carrier loss flushes a link's IPv4 nexthop objects and the routes using them, silently"),
        (28, "step 11-14: an IPv6 route with `expires` stops being used with no RTM_DELROUTE until its GC"),
        (40, "step 97: IPv6 multipath next hops dead since an admin down revive silently with the carrier"),
        (41, "step 11: IPv4 routes over a link whose last address goes are flushed after the RTM_DELADDR"),
        (41, "step 30: IPv4 multipath next hops over a link revive after its admin up's RTM_NEWLINK"),
        (72, "step 37: `ip nexthop del` removes the IPv4 routes that use it with no RTM_DELROUTE"),
        (112, "step 51: an admin up makes a kept IPv6 address the source of routes over another link"),
        (5004, "step 126: a kept IPv6 address turned tentative at an admin down; its RTM_NEWADDR says no more"),
    ]

    /// More seeds for CI, beyond the regression cases.
    static let extraSeeds: [UInt64] = []

    static func checkExcludedKinds() throws {
        let unknown = excludedKinds.subtracting(DifferentialGenerator.Kind.allCases.map(\.rawValue))
        try #require(
            unknown.isEmpty,
            "REACHABILITY_DIFFERENTIAL_EXCLUDE: no step kind \(unknown.sorted()); the kinds are \(DifferentialGenerator.Kind.allCases.map(\.rawValue))"
        )
    }

    static var fixedSeeds: [UInt64] {
        if let replaySeed { return [replaySeed] }
        if script != nil { return [0] }
        var seen: Set<UInt64> = []
        return (regressionSeeds.map(\.seed) + extraSeeds).filter { seen.insert($0).inserted }
    }
}

/// One seed's run: the namespaces, the `ip` batches, the `watch` under test, and the
/// one-off `Reachability` instances (never started: each read asks the kernel afresh).
final class DifferentialWorld {
    /// What `watch` is given, in order. `@internet` is the default-route target; the
    /// 198.18.x and 2001:db8:1000:: ones are covered by specific routes, 203.0.113.9
    /// and 2001:db8:ffff::9 only by defaults, 192.0.2.9 and 2001:db8:2000::9 by the
    /// policy tables, and the others are on vA's subnets.
    static let targets = [
        "@internet", "198.18.5.5", "198.18.9.9", "10.1.0.77", "203.0.113.9", "192.0.2.9",
        "2001:db8:1000::5", "2001:db8:1000:9::9", "2001:db8:1::77", "2001:db8:ffff::9", "2001:db8:2000::9",
    ]
    /// After a step, the time that defines "the step is over"; what the kernel does
    /// later (a delayed linkwatch event, a route expiring) the polling waits for.
    static let quietPeriod: Duration = .milliseconds(30)
    /// How long `watch` gets to agree with the kernel after a step (plus the time to a
    /// pending route expiry).
    static let agreementBound: Duration = .seconds(3)

    let seed: UInt64
    private let verbose: Bool
    private let ns: TestNamespace
    private let far: TestNamespace
    private let inet: IPBatch
    private let inet6: IPBatch
    private let farBatch: IPBatch
    private var generator: DifferentialGenerator
    /// A script's steps, run instead of the generator's.
    private var scripted: [DifferentialStep]?
    private var replay: [String]
    private var watch: Child?
    private var watched: [String: DifferentialAnswer] = [:]
    private var lastLines: [String: String] = [:]
    private let fresh: [(target: String, reachability: Reachability)]
    /// When the IPv6 routes added with `expires` stop being used: those still to come,
    /// and the latest one past.
    private var expiries: [ContinuousClock.Instant] = []
    private var lastExpiry: ContinuousClock.Instant?
    private let born = ContinuousClock.now

    /// `script`: a report's command list, run instead of the seed's steps.
    init(seed: UInt64, verbose: Bool, script: String? = nil) throws {
        self.seed = seed
        self.verbose = verbose
        (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        try far.ip("link set lo up")
        inet = try IPBatch(in: ns)
        inet6 = try IPBatch(in: ns, options: "-6")
        farBatch = try IPBatch(in: far)
        generator = DifferentialGenerator(seed: seed, excluding: DifferentialConfig.excludedKinds)
        replay = [
            "ip netns add dt", "ip netns add dtfar", "ip -n dt link set lo up", "ip -n dtfar link set lo up",
            "ip netns exec dt sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0",
        ]
        let environment = ns.environment
        fresh = try Self.targets.map { target in
            let reachability =
                target == "@internet"
                ? try Reachability(environment: environment)
                : try Reachability(address: target, environment: environment)
            return (target, reachability)
        }
        let farPath = far.path
        let links = DifferentialLink.all.map { link in
            DifferentialCommand(
                place: .inet, line: "link add \(link.name) type veth peer name \(link.peer) netns \(farPath)")
        }
        _ = try apply(links)
        replay += links.map { $0.replay.replacingOccurrences(of: far.path, with: "dtfar") }
        let parsed = script.map { DifferentialStep.parse(script: $0) }
        scripted = parsed?.steps
        let setup = parsed?.setup ?? generator.setup()
        _ = try apply(setup)
        replay += setup.map(\.replay)
    }

    deinit { watch?.terminate() }

    /// Runs the commands in order, each group of lines for the same place in one
    /// write; returns `ip`'s error lines.
    private func apply(_ commands: [DifferentialCommand]) throws -> [String] {
        var said: [String] = []
        var start = 0
        while start < commands.count {
            let place = commands[start].place
            var end = start
            while end < commands.count && commands[end].place == place { end += 1 }
            let lines = commands[start..<end].map(\.line)
            switch place {
            case .inet: said += try inet.run(lines)
            case .inet6: said += try inet6.run(lines)
            case .far: said += try farBatch.run(lines)
            case .shell:
                for line in lines {
                    let output = try Command.run(
                        [
                            "nsenter", "--net=\(ns.path)", "--", "sh", "-c",
                            line.replacingOccurrences(of: "ip -n dt ", with: "ip "),
                        ])
                    if output.status != 0 { said.append(output.stderr) }
                }
            case .sysctl:
                for line in lines {
                    let output = try Command.run(
                        ["nsenter", "--net=\(ns.path)", "--", "sysctl", "-qw"]
                            + line.split(separator: " ").map(String.init))
                    if output.status != 0 { said.append(output.stderr) }
                }
            }
            start = end
        }
        return said
    }

    // MARK: Running

    /// Starts `watch`, checks the start, then runs `steps` steps, checking after each.
    /// After a disagreement it starts a new `watch` and goes on, until `maxFailures`
    /// reports; returns the number of steps run and the reports.
    func run(steps: Int, maxFailures: Int) throws -> (steps: Int, failures: [DifferentialFailure]) {
        let steps = scripted?.count ?? steps
        var failures: [DifferentialFailure] = []
        if let failure = try startWatch(step: 0) { return (0, [failure]) }
        if let failure = check(step: 0, kind: "start") { failures.append(failure) }
        var index = 0
        while index < steps && failures.count < maxFailures {
            if watch == nil, let failure = try startWatch(step: index) { return (index, failures + [failure]) }
            index += 1
            let step = scripted?[index - 1] ?? generator.next()
            let said = try apply(step.commands)
            if let seconds = step.expiresIn { expiries.append(.now + .milliseconds(Int(seconds * 1000))) }
            replay.append("# step \(index) at \(seconds(ContinuousClock.now - born)) s: \(step.kind)")
            replay += step.replay
            replay += said.prefix(2).map { "#   ip: \($0)" }
            if verbose { print("differential seed \(seed) step \(index): \(step.replay.joined(separator: "; "))") }
            if let failure = check(step: index, kind: step.kind) { failures.append(failure) }
        }
        return (index, failures)
    }

    /// Starts `watch` and waits for its first line for every target.
    private func startWatch(step: Int) throws -> DifferentialFailure? {
        watch = try ns.spawnCLI(["watch", "--json"] + Self.targets)
        let restart = step > 0 ? " (after step \(step), a new watch)" : ""
        replay.append(
            "ip netns exec dt reachability watch --json \(Self.targets.joined(separator: " "))\(restart.isEmpty ? "" : " #" + restart)"
        )
        let started = ContinuousClock.now
        while watched.count < Self.targets.count {
            guard ContinuousClock.now - started < .seconds(20) else {
                let text =
                    "seed \(seed)\(restart): watch printed no line for \(Set(Self.targets).subtracting(watched.keys))"
                return DifferentialFailure(headline: text, report: text)
            }
            readWatch(timeout: 0.1)
        }
        return nil
    }

    /// Reads `watch`'s lines that arrive within `timeout` seconds, then any already there.
    private func readWatch(timeout: Double) {
        guard let watch else { return }
        var wait = timeout
        while let line = watch.nextLine(timeout: wait) {
            if let (target, answer) = DifferentialAnswer.parse(line) {
                watched[target] = answer
                lastLines[target] = line
            }
            wait = 0.001
        }
    }

    private func freshAnswers() -> [DifferentialAnswer] {
        // `state` once per target: flags and interface from the same lookup.
        fresh.map { DifferentialAnswer($0.reachability.state) }
    }

    /// After the quiet period, polls until every target's last `watch` line is the
    /// kernel's fresh answer; a report when that doesn't happen within the bound.
    private func check(step: Int, kind: String) -> DifferentialFailure? {
        Thread.sleep(forTimeInterval: Self.quietPeriod.seconds)
        let start = ContinuousClock.now
        lastExpiry = (expiries.filter { $0 < start } + [lastExpiry].compactMap { $0 }).max()
        expiries.removeAll { $0 < start }
        let deadline = start + Self.agreementBound + (expiries.max().map { $0 - start } ?? .zero)
        var seen: [String: [DifferentialAnswer]] = [:]
        while true {
            readWatch(timeout: 0.001)
            let answers = freshAnswers()
            var disagreeing: [Int] = []
            for (index, target) in Self.targets.enumerated() {
                if seen[target]?.last != answers[index] { seen[target, default: []].append(answers[index]) }
                if watched[target] != answers[index] { disagreeing.append(index) }
            }
            if disagreeing.isEmpty { return nil }
            if ContinuousClock.now >= deadline {
                let report = report(
                    step: step, kind: kind, answers: answers, disagreeing: disagreeing, seen: seen, since: start)
                // The stale `watch` would only repeat this report: the next step starts
                // a new one, from the kernel's answers, and the seed goes on.
                watch?.terminate()
                watch = nil
                watched = [:]
                return report
            }
            readWatch(timeout: 0.02)
        }
    }

    private func report(
        step: Int, kind: String, answers: [DifferentialAnswer], disagreeing: [Int],
        seen: [String: [DifferentialAnswer]], since start: ContinuousClock.Instant
    ) -> DifferentialFailure {
        let headline =
            "seed \(seed) step \(step) (\(kind)): "
            + disagreeing.map {
                "\(Self.targets[$0]) watch \(watched[Self.targets[$0]]?.description ?? "nothing"), kernel \(answers[$0])"
            }
            .joined(separator: "; ")
            + (lastExpiry.map { " [an IPv6 route expired \(seconds(ContinuousClock.now - $0)) s before]" } ?? "")
        var text = [
            "Kernel differential: seed \(seed), step \(step) (\(kind)): watch still disagrees with the kernel after \(seconds(ContinuousClock.now - start)) s.",
            "Replay: REACHABILITY_DIFFERENTIAL_SEED=\(seed)"
                + (DifferentialConfig.excludedKinds.isEmpty
                    ? ""
                    : " REACHABILITY_DIFFERENTIAL_EXCLUDE=\(DifferentialConfig.excludedKinds.sorted().joined(separator: ","))")
                + " swift test --skip-build --filter KernelDifferential",
            "",
        ]
        for (index, target) in Self.targets.enumerated() {
            let mark = disagreeing.contains(index) ? "DIFFERS" : "same   "
            text.append(
                "\(mark) \(target): watch \(watched[target]?.description ?? "nothing"), kernel \(answers[index])")
            if disagreeing.contains(index) {
                text.append("        last watch line: \(lastLines[target] ?? "none")")
                let history = seen[target] ?? []
                if history.count > 1 { text.append("        kernel answers while waiting: \(history)") }
                let probes =
                    target == "@internet"
                    ? ["8.8.8.8", "2001:4860:4860::8888"] : [target]
                for probe in probes {
                    let family = probe.contains(":") ? ["-6"] : []
                    let output = try? Command.run(
                        ["nsenter", "--net=\(ns.path)", "--", "ip"] + family + ["route", "get", probe])
                    let answer = output.map { ($0.stdout + $0.stderr).trimmingCharacters(in: .whitespacesAndNewlines) }
                    text.append("        ip \(family.first.map { $0 + " " } ?? "")route get \(probe): \(answer ?? "?")")
                }
            }
        }
        text += ["", "The commands so far (namespaces dt and dtfar):"] + replay.map { "  " + $0 }
        var report = text.joined(separator: "\n")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "reachability-differential-\(seed)-\(step).txt")
        if (try? report.write(to: file, atomically: true, encoding: .utf8)) != nil {
            report = "(also in \(file.path))\n" + report
        }
        return DifferentialFailure(headline: headline, report: report)
    }
}

/// The project's promise, tested against the kernel itself: after every random step
/// of what `ip` can tell the kernel (links, carrier, addresses, routes, multipath,
/// nexthop objects, rules, special and expiring routes, bursts) and a short quiet
/// period, `watch`'s last line for each target must become the library's one-off
/// answer within ``DifferentialWorld/agreementBound``.
///
/// Modes (environment): none — the regression seeds; `REACHABILITY_DIFFERENTIAL_SEED=S`
/// — replay seed S, printing its steps; `REACHABILITY_DIFFERENTIAL_STEPS=N` — a long
/// run of N steps over consecutive seeds (from S when given), with progress and a
/// summary; `REACHABILITY_DIFFERENTIAL_EXCLUDE=kind,…` — never draw those step kinds;
/// `REACHABILITY_DIFFERENTIAL_SCRIPT=FILE` — run a report's command list, or a part of
/// it. Each report is also written to `$TMPDIR/reachability-differential-SEED-STEP.txt`.
@Suite(
    "Kernel differential: watch's last line per target is the kernel's fresh answer after every random step",
    .enabled(if: IntegrationGate.enabled), .ownThreads, .serialized)
struct KernelDifferentialTests {
    @Test(
        "Fixed seeds (REACHABILITY_DIFFERENTIAL_SEED replays one)",
        .enabled(if: DifferentialConfig.longRunSteps == nil), arguments: DifferentialConfig.fixedSeeds)
    func fixedSeed(_ seed: UInt64) async throws {
        try DifferentialConfig.checkExcludedKinds()
        // A seed stops at its third disagreement, except when replayed by hand.
        let maxFailures = DifferentialConfig.replaying ? Int.max : 3
        let script = try DifferentialConfig.script.map { try String(contentsOfFile: $0, encoding: .utf8) }
        let outcome = try await offPool {
            try DifferentialWorld(seed: seed, verbose: DifferentialConfig.replaying, script: script).run(
                steps: DifferentialConfig.stepsPerSeed, maxFailures: maxFailures)
        }
        for failure in outcome.failures { Issue.record("\(failure.report)") }
    }

    @Test(
        "Long run: REACHABILITY_DIFFERENTIAL_STEPS steps over consecutive seeds",
        .enabled(if: DifferentialConfig.longRunSteps != nil))
    func longRun() async throws {
        try DifferentialConfig.checkExcludedKinds()
        let total = DifferentialConfig.longRunSteps ?? 0
        let first = DifferentialConfig.replaySeed ?? UInt64(Date().timeIntervalSince1970)
        print("differential long run: \(total) steps from seed \(first), \(DifferentialConfig.stepsPerSeed) per seed")
        let started = ContinuousClock.now
        var steps = 0
        var seed = first
        var failures: [DifferentialFailure] = []
        var lastProgress = started
        func rate() -> String {
            let seconds = Double((ContinuousClock.now - started).components.seconds)
            return
                "\(steps) steps in \(Int(seconds)) s (\(String(format: "%.1f", Double(steps) / max(seconds, 1))) steps/s)"
        }
        while steps < total {
            let (current, count) = (seed, min(DifferentialConfig.stepsPerSeed, total - steps))
            let outcome = try await offPool {
                try DifferentialWorld(seed: current, verbose: false).run(steps: count, maxFailures: Int.max)
            }
            steps += outcome.steps
            for failure in outcome.failures { print("differential failure: \(failure.headline)") }
            failures += outcome.failures
            seed += 1
            if ContinuousClock.now - lastProgress > .seconds(30) {
                lastProgress = .now
                print("differential: \(rate()), seeds \(first)...\(seed - 1), \(failures.count) failures")
            }
        }
        print("differential summary: \(rate()), seeds \(first)...\(seed - 1), \(failures.count) failures")
        for failure in failures { print("  \(failure.headline)") }
        for failure in failures { Issue.record("\(failure.report)") }
    }
}
