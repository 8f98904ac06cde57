// The compatibility surfaces of libraries whose module is not this package's:
// Alamofire's NetworkReachabilityManager (Alamofire.swift), DTReachability
// (DTReachability.swift) and Network's NWPathMonitor (Network.swift). Each is a thin
// layer over the core `Reachability` and `PathMonitor`; see docs/MIGRATING.md.
