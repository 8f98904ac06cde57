// In-process figures of DESIGN §8 (ordo-one/benchmark). Run from the package root:
//   swift package --disable-sandbox benchmark --target ReachabilityBenchmarks
// The system-level figures (latency against peers, idle wake-ups, big tables,
// storms, 10,000 targets) are Benchmarks/scale.py's.
import Benchmark
import Foundation
import Reachability

/// The captured dump bytes the unit tests use (links and addresses of a real host).
private func fixture(_ name: String) -> [UInt8] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let url = root.appendingPathComponent("Tests/ReachabilityTests/Fixtures/\(name)")
    return (try? [UInt8](Data(contentsOf: url))) ?? []
}

let benchmarks: @Sendable () -> Void = {
    // REACHABILITY_BENCHMARK_SMOKE=1 (CI): a few iterations each, to keep them working.
    let smoke = ProcessInfo.processInfo.environment["REACHABILITY_BENCHMARK_SMOKE"] == "1"
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        warmupIterations: smoke ? 1 : 10,
        maxDuration: smoke ? .milliseconds(100) : .seconds(2),
        maxIterations: smoke ? 20 : 1_000_000)

    // The cached answer: what a caller gets while the notifier runs (budget < 1 µs).
    // The instance lives as long as the process; its notifier runs throughout.
    if let running = try? Reachability(), (try? running.start()) != nil {
        Benchmark(
            "currentReachabilityStatus, notifier running",
            configuration: .init(scalingFactor: .kilo)
        ) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(running.currentReachabilityStatus)
            }
        }
    }

    // Without a notifier every call asks the kernel afresh: a netlink socket, a
    // dump of links and addresses, and a route lookup (budget < 100 µs).
    if let idle = try? Reachability() {
        Benchmark("currentReachabilityStatus, no notifier") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(idle.currentReachabilityStatus)
            }
        }
    }

    let links = fixture("links.bin")
    let addresses = fixture("addresses.bin")
    let evaluate = Messages.flagsEvaluation(links: links, addresses: addresses)
    Benchmark("flags evaluation (one route answer)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(evaluate())
        }
    }

    // Parsing throughput: 1,000 RTM_NEWROUTE messages (52 bytes each) per iteration,
    // as a storm delivers them; and the captured link and address dumps.
    let routes = Messages.routes(count: 1000)
    Benchmark("parse 1,000 route messages") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(Messages.count(in: routes))
        }
    }
    Benchmark("parse a link dump and an address dump") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(Messages.count(in: links) + Messages.count(in: addresses))
        }
    }

    Benchmark("parse address strings (IPv4 and IPv6)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? IPAddress("192.0.2.123"))
            blackHole(try? IPAddress("2001:db8:85a3::8a2e:370:7334"))
        }
    }
}
