// `reachability`, the small executable: `status`, `watch`, `wait` and `interfaces` on
// ReachabilityCore alone (no Foundation, no Connectivity, no argument parser), so the
// commands left running stay small (docs/DESIGN.md §4.5). Any other command line —
// `check`, `exporter`, `--connectivity`, help, completion scripts, errors — is the full
// command's: this process becomes `reachability-full` with the same arguments, byte for byte.
import ReachabilityCommands

guard let invocation = Invocation.parse(ProcessArguments.afterName()) else { Companion.exec() }
CommandLineTool.run(invocation)
