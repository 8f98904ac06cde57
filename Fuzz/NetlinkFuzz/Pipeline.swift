// What one fuzz input goes through: the reader thread's path, with the library's
// internals reached through its `Testing` SPI (the fuzzer is a package of its own).
@_spi(Testing) import ReachabilityCore

enum Pipeline {
    /// Parses `bytes` as one datagram; applies every link and address message to an
    /// interface table (classified without sysfs); then treats every route message
    /// and error as the kernel's answer to a lookup and evaluates reachability flags
    /// and a `NetworkPath` from it. Returns a value that depends on all of it, so
    /// nothing is optimised away.
    static func run(_ bytes: [UInt8]) -> Int {
        let parsed = NetlinkParser.parse(bytes)
        var table = InterfaceTable()
        var results: [LookupResult] = []
        var changes = 0
        for message in parsed.messages {
            switch message.message {
            case .route(let route, deleted: false):
                results.append(.route(route))
            case .error(let errno):
                results.append(.noRoute(errno: errno))
            default:
                break
            }
            if table.apply(message.message, classify: { InterfaceClassifier.classify($0, sysfs: NoInterfaceFacts()) }) {
                changes += 1
            }
        }
        if results.isEmpty { results.append(.noRoute(errno: 101)) }

        // The Internet's probe destinations are the first lookups a path asks for.
        let evaluator = PathEvaluator(requiredInterfaceType: nil, prohibitedInterfaceTypes: [], options: .init())
        let probes = evaluator.lookups(for: InterfaceTable()).map(\.destination)
        var digest = changes &+ parsed.messages.count
        for result in results {
            var destinations = probes
            if case .route(let route) = result, let destination = route.destination { destinations.append(destination) }
            for destination in destinations {
                digest &+= Int(FlagsEvaluator.evaluate(result, destination: destination, in: table).flags.rawValue)
            }
        }
        digest &+= Int(FlagsEvaluator.evaluateLocalLink(in: table).flags.rawValue)

        // A path from the same answers, handed out round-robin to the lookups it needs.
        let requests = evaluator.lookups(for: table)
        let answers = requests.indices.map { results[$0 % results.count] }
        let path = evaluator.evaluate(requests: requests, results: answers, in: table, dnsConfigured: digest & 1 == 0)
        digest &+= path.availableInterfaces.count &+ path.gateways.count
        return digest
    }
}
