import ArgumentParser
import Connectivity
import Reachability
import ReachabilityCommands

/// `reachability`: can this host reach X now, over what, and tell me when that changes.
///
/// This is the full command, `reachability-full`: every subcommand and option, the
/// help, man pages and completion scripts. The small `reachability` runs `status`,
/// `watch`, `wait` and `interfaces` itself and becomes this program for anything else
/// (docs/DESIGN.md §4.5); both run the same implementations (ReachabilityCommands).
@main
struct ReachabilityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachability",
        abstract: "Report and watch network reachability, from the kernel's own routing answers.",
        discussion: """
            TARGET is a hostname, an IPv4 or IPv6 address, or @internet (as no TARGET: the \
            Internet, the better of the IPv4 and IPv6 default routes, and the name printed and \
            used as the exporter's target label for it). `@` is in no hostname or address: \
            another word with it exits 2 (`@Internet` also says "did you mean @internet?"), and \
            any other word, `internet` too, is a hostname (a note on stderr says so for \
            `internet`). A malformed address (999.1.1.1, ::g) or hostname exits 2 with a message \
            naming it; a name one edit from a subcommand that does not resolve (`reachability \
            wacth`) also says "did you mean `reachability watch`?". Answers come from the \
            kernel's route lookup for the target (as `ip route get` does; no packet is sent) and \
            the state of the output interface; changes come from rtnetlink events.

            Flags are printed in the letters of Apple's sample code, `-` for a clear bit: W \
            isWWAN, R reachable, then c connectionRequired, t transientConnection, i \
            interventionRequired, C connectionOnTraffic, D connectionOnDemand, l isLocalAddress, \
            d isDirect ("-R ------d" is reachable + isDirect). The status reachableViaWiFi means \
            "not cellular", as on Apple systems: a wired eth0 reports it, and the interface's \
            type (wifi, cellular, wiredEthernet, loopback, other) says the medium.

            `check` goes further: it fetches check endpoints to tell the real Internet from a \
            captive portal, and `wait --connectivity` waits for that.

            Every subcommand takes --namespace PATH|NAME (NAME is /run/netns/NAME, as `ip -n` \
            takes it; a path may be /proc/PID/ns/net): it watches that network namespace from \
            the host's, hostnames resolved inside it with /etc/netns/NAME. When the namespace \
            goes away under `watch`, `wait` or `exporter` (`ip netns del`, or its process \
            exited), the command says so on stderr and exits 1 (2 if it went away while the \
            command was starting). A hostname the resolver fails for (EAI_SYSTEM, out of \
            descriptors) is an error: `status` and `wait` exit 2, `watch` reports it on stderr \
            and keeps trying the name.

            As a process: SIGINT and SIGTERM end `watch` and `exporter` with status 0 and the \
            other commands with 128 + the signal (130, 143), as coreutils do; a line being \
            written is finished first, never cut in half. Output is unbuffered: each line is \
            written with one write loop, so `watch | head -1` and a pipe to a log reader see \
            every line at once. A write to stdout that fails (/dev/full, a closed descriptor) \
            exits 1 with "reachability: write error: ..." on stderr; a reader that went away ends \
            it by SIGPIPE, as `cat`. A closed stdin, stdout or stderr is held by /dev/null so no \
            socket takes its number. The soft descriptor limit is raised to the hard one; with \
            fewer than 64 descriptors free the command exits 2 at once, naming the limit.

            A name from the kernel (an interface's, an SSID) may hold terminal controls (ESC, \
            C1, bidirectional formatting): text output shows their bytes as \\xNN, JSON as \
            \\uXXXX, so that no name can drive the terminal.

            With --json each subcommand prints JSON whose keys are stable; docs/CLI.md in the \
            repository has every key. The command is two executables: `reachability` runs \
            status, watch, wait and interfaces itself and runs reachability-full (beside it, or \
            in ../libexec/reachability/) for check, exporter, --connectivity and help.

            Exit status: 0 reachable (or done), 1 not reachable (or timed out, or the namespace \
            went away), 2 usage or input error, 128 + N after signal N (but watch and exporter: 0).
            """,
        version: "0.1.0",
        subcommands: [Status.self, Watch.self, Wait.self, Check.self, Interfaces.self, Exporter.self],
        defaultSubcommand: Status.self)

    /// Runs the command and maps errors to the documented exit statuses: usage
    /// and input errors exit 2 with a message that names the bad input.
    ///
    /// `main` is synchronous on purpose: `watch` never touches Swift concurrency's
    /// cooperative pool, whose libdispatch monitor would wake the process once a
    /// second forever; an idle `watch` must not wake at all. The async commands
    /// run as a task while the main thread waits.
    ///
    /// ``CLIProcess/start()`` runs first, while this is the only thread: it blocks
    /// SIGINT and SIGTERM for every thread to come, occupies closed standard
    /// descriptors and checks the descriptor limit. Every exit goes through
    /// ``CLIProcess/finish(_:)`` and all output through its raw writes, ArgumentParser's
    /// help and messages included (its own printing goes through stdio, whose
    /// failures it doesn't see).
    static func main() {
        let arguments = ProcessArguments.afterName()
        CLIProcess.start()
        do {
            var command = try parseAsRoot(arguments)
            // A subcommand, not help (ArgumentParser's help command, which throws its text).
            if command is any AsyncParsableCommand || command is Watch || command is Exporter {
                CLIProcess.requireProc()
            }
            if let asyncCommand = command as? any AsyncParsableCommand {
                try runToCompletion(asyncCommand)
            } else {
                try command.run()
            }
            CLIProcess.finish(0)
        } catch let code as ExitCode {
            CLIProcess.finish(code.rawValue)
        } catch let status as ExitStatus {
            CLIProcess.finish(status.code)
        } catch let error as ConnectivityError {
            CLIProcess.writeError("reachability: \(error)\n")
            CLIProcess.finish(2)
        } catch let error as ReachabilityError {
            CLIProcess.writeError("reachability: \(error)\n")
            CLIProcess.finish(2)
        } catch {
            let message = fullMessage(for: error)
            guard exitCode(for: error) != .success else {
                // --help, --version, completion scripts: to stdout, as ArgumentParser
                // prints them; a failed write exits 1.
                if !message.isEmpty { CLIProcess.writeOut(message + "\n") }
                CLIProcess.finish(0)
            }
            CLIProcess.writeError("reachability: \(message)\n")
            CLIProcess.finish(2)
        }
    }

    /// Runs an async command on the cooperative pool and waits for it.
    private static func runToCompletion(_ command: any AsyncParsableCommand) throws {
        nonisolated(unsafe) var command = command
        try CommandLineTool.runToCompletion { try await command.run() }
    }
}

/// `--namespace PATH|NAME`, on every subcommand.
struct NamespaceOption: ParsableArguments {
    @Option(name: .customLong("namespace"), help: ArgumentHelp(Namespace.help, valueName: "path|name"))
    var namespace: String?

    func validate() throws {
        try usage(Namespace.validate(namespace))
    }

    /// The environment it names (see ``Namespace/environment(_:)``).
    var environment: NetworkEnvironment { Namespace.environment(namespace) }
}

/// Runs `body`, reporting a ``UsageError`` as swift-argument-parser's validation
/// error (usage text, exit 2).
func usage(_ body: @autoclosure () throws(UsageError) -> Void) throws {
    do throws(UsageError) {
        try body()
    } catch {
        throw ValidationError(error.message)
    }
}
