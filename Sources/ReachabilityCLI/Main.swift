import ArgumentParser
import Connectivity
import Foundation
import Reachability

/// `reachability`: can this host reach X now, over what, and tell me when that changes.
@main
struct ReachabilityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachability",
        abstract: "Report and watch network reachability, from the kernel's own routing answers.",
        discussion: """
            TARGET is a hostname, an IPv4 or IPv6 address, or nothing for the Internet (the \
            better of the IPv4 and IPv6 default routes). Answers come from the kernel's route \
            lookup for the target (as `ip route get` does; no packet is sent) and the state of \
            the output interface; changes come from rtnetlink events.

            `check` goes further: it fetches check endpoints to tell the real Internet from a \
            captive portal, and `wait --connectivity` waits for that.

            Exit status: 0 reachable (or done), 1 not reachable (or timed out), 2 usage or input error.
            """,
        subcommands: [Status.self, Watch.self, Wait.self, Check.self, Interfaces.self],
        defaultSubcommand: Status.self)

    /// Runs the command and maps errors to the documented exit statuses: usage
    /// and input errors exit 2 with a message that names the bad input.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let error as ConnectivityError {
            FileHandle.standardError.write(Data("reachability: \(error)\n".utf8))
            Foundation.exit(2)
        } catch let error as ReachabilityError {
            FileHandle.standardError.write(Data("reachability: \(error)\n".utf8))
            Foundation.exit(2)
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { self.exit(withError: error) }  // --help, --version
            FileHandle.standardError.write(Data("reachability: \(fullMessage(for: error))\n".utf8))
            Foundation.exit(2)
        }
    }
}
