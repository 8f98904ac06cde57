// A Reachability-only program: the library and nothing else (no Foundation import of
// its own, no Connectivity), for the RSS figure of BENCHMARKS.md. It starts a notifier
// on the Internet target, waits for the first delivery and a short settle, then prints
// its peak RSS (VmHWM) as one JSON line.
//   swift build -c release --product ReachabilityMinimal [--static-swift-stdlib]
//   .build/release/ReachabilityMinimal
import Dispatch
import Glibc
import Reachability

/// A /proc/self/status field in KiB (0 when missing).
func statusKiB(_ field: String) -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix(field + ":") {
            return Int(text.dropFirst(field.count + 1).split { $0 == " " || $0 == "\t" }.first ?? "") ?? 0
        }
    }
    return 0
}

let delivered = DispatchSemaphore(value: 0)
let reachability = try Reachability()
reachability.whenReachable = { _ in delivered.signal() }
reachability.whenUnreachable = { _ in delivered.signal() }
try reachability.startNotifier()
guard delivered.wait(timeout: .now() + 10) == .success else {
    let message = "ReachabilityMinimal: no first delivery within 10 s\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
usleep(200_000)
print("{\"figure\": \"minimalRSS\", \"peakKiB\": \(statusKiB("VmHWM")), \"rssKiB\": \(statusKiB("VmRSS"))}")
withExtendedLifetime(reachability) {}
