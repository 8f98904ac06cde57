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
            Internet, the better of the IPv4 and IPv6 default routes; any other word, \
            `internet` too, is a hostname). Answers come from the kernel's route \
            lookup for the target (as `ip route get` does; no packet is sent) and the state of \
            the output interface; changes come from rtnetlink events.

            `check` goes further: it fetches check endpoints to tell the real Internet from a \
            captive portal, and `wait --connectivity` waits for that.

            Exit status: 0 reachable (or done), 1 not reachable (or timed out), 2 usage or input error.
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
        CLIProcess.start()
        do {
            var command = try parseAsRoot()
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
