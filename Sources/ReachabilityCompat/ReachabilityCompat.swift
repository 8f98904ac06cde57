// The compatibility surfaces of libraries whose module is not this package's:
// Alamofire's NetworkReachabilityManager (Alamofire.swift), DTReachability
// (DTReachability.swift) and Network's NWPathMonitor (Network.swift). Each is a thin
// layer over the core `Reachability` and `PathMonitor`; see docs/MIGRATING.md.
//
// Code written against those libraries compiles with its `import Alamofire`,
// `import DTFoundation` or `import Network` changed to `import ReachabilityCompat`.
// Where the original delivers on the main queue or run loop by default, these
// deliver on the library's own serial queue unless given one (a Linux daemon may
// never drain the main queue); a queue passed explicitly, `.main` included, is used.
// Network's and Alamofire's users pass `DispatchQueue`s with no import of their own
// (`import Network` brings Dispatch along); so does `import ReachabilityCompat`.
@_exported import Dispatch
import Glibc
public import Reachability

/// Apple's name for the reachability flags, so that code naming the type
/// (`let flags: SCNetworkReachabilityFlags = [.reachable]`) compiles unchanged: the
/// same type as `ReachabilityFlags`, with Apple's member names and bit values.
public typealias SCNetworkReachabilityFlags = ReachabilityFlags

/// Writes one line to standard error: the compatibility types report failures the
/// original APIs have no way to return (there is no logging framework yet).
func logToStandardError(_ message: String) {
    var line = Array("ReachabilityCompat: \(message)\n".utf8)
    line.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
            guard written > 0 else { return }
            offset += written
        }
    }
}
