import Glibc
@_spi(Testing) package import ReachabilitySystem

/// sd_notify(3) without libsystemd: under systemd (`NOTIFY_SOCKET` set, as for a
/// unit with `Type=notify` or `NotifyAccess=`), each message is one datagram of
/// `KEY=VALUE` lines to that AF_UNIX socket; a leading '@' names an abstract socket.
/// Failures are ignored, as sd_notify's callers do: the command's work doesn't
/// depend on the service manager hearing it.
package enum SystemdNotify {
    /// The socket from the environment, read once (nil outside systemd).
    package static let socketPath: String? = {
        guard let value = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !value.isEmpty else { return nil }
        // Only a path or an abstract name; sd_notify also takes vsock, which this doesn't.
        guard value.hasPrefix("/") || value.hasPrefix("@") else { return nil }
        return value
    }()

    /// Sends `message` ("STATUS=…", "READY=1", several joined by newlines) to `path`
    /// (the environment's socket by default). Returns whether it went out (false
    /// outside systemd, and when the socket can't be made, connected or sent to).
    @discardableResult
    package static func send(_ message: String, to path: String? = socketPath, systemCalls system: SystemCalls = .live)
        -> Bool
    {
        guard let path else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(path.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1))
        guard
            case .success(let fd) = system.socket(
                family: AF_UNIX, type: Int32(SOCK_DGRAM.rawValue), subject: .path(path))
        else { return false }
        defer { system.close(fd) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                system.connect(fd, to: $0, length: length, subject: .path(path))
            }
        }
        guard case .success = connected else { return false }
        let bytes = Array(message.utf8)
        // Never blocked by a receiver that doesn't read: a message its full queue
        // can't take (EAGAIN) is dropped, as a lost progress line costs nothing.
        let sent = bytes.withUnsafeBytes {
            system.send(fd, $0, flags: Int32(MSG_NOSIGNAL | MSG_DONTWAIT), subject: .path(path))
        }
        return (try? sent.get()) == bytes.count
    }

    /// A STATUS= line: one line of text (newlines would start another assignment).
    package static func status(_ text: String) {
        send("STATUS=" + text.map { $0.isNewline ? " " : String($0) }.joined())
    }
}
