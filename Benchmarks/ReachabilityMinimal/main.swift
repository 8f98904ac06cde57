// A Reachability-only program: the library's Foundation-free API (ReachabilityCore)
// and nothing else (no Foundation, no Connectivity), for the RSS figure of
// BENCHMARKS.md (CI's consumer check, Scripts/check-consumer.py, fails when a program on
// ReachabilityCore alone loads a Foundation library). It starts a notifier
// on the Internet target, waits for the first delivery and a short settle, then prints
// its peak RSS (VmHWM) as one JSON line.
//   swift build -c release --product ReachabilityMinimal [--static-swift-stdlib]
//   .build/release/ReachabilityMinimal
import Dispatch
import Glibc
import ReachabilityCore

/// Fields of /proc/self/status in KiB, read in one pass (0 when missing).
func statusKiB(_ fields: [String]) -> [String: Int] {
    var values = Dictionary(uniqueKeysWithValues: fields.map { ($0, 0) })
    guard let file = fopen("/proc/self/status", "r") else { return values }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":"), values[String(text[..<colon])] != nil else { continue }
        let number = text[text.index(after: colon)...].split { $0 == " " || $0 == "\t" }.first ?? ""
        values[String(text[..<colon])] = Int(number) ?? 0
    }
    return values
}

let delivered = DispatchSemaphore(value: 0)
let reachability = try Reachability()
reachability.whenReachable = { _ in delivered.signal() }
reachability.whenUnreachable = { _ in delivered.signal() }
try reachability.start()
guard delivered.wait(timeout: .now() + 10) == .success else {
    let message = "ReachabilityMinimal: no first delivery within 10 s\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
usleep(200_000)
let memory = statusKiB(["VmHWM", "VmRSS"])
let (peak, resident) = (memory["VmHWM", default: 0], memory["VmRSS", default: 0])
print("{\"figure\": \"minimalRSS\", \"peakKiB\": \(peak), \"rssKiB\": \(resident)}")
withExtendedLifetime(reachability) {}
