/// Validation of hostnames given to `Reachability(hostname:)`.
enum Hostname {
    /// All digits and dots (before any `%zone`), or containing ':' (or bracketed):
    /// an address literal, valid or not. No hostname looks like this (RFC 1123: the
    /// top-level label is never all-numeric, and '%' is no hostname character).
    static func looksLikeAddress(_ name: String) -> Bool {
        if name.contains(":") || name.hasPrefix("[") { return true }
        let unzoned = name.firstIndex(of: "%").map { name[..<$0] } ?? Substring(name)
        let body = unzoned.hasSuffix(".") ? unzoned.dropLast() : unzoned
        return !body.isEmpty && body.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
    }

    /// Checks the DNS limits and rejects text no resolver would accept, naming
    /// the input in the error: empty, over 253 bytes, an empty label or one over
    /// 63 bytes, spaces or control characters.
    static func validate(_ name: String) throws(ReachabilityError) -> String {
        let quoted = IPAddress.quoted(name)
        guard !name.isEmpty else {
            throw ReachabilityError(.invalidHostname, "\"\" is not a hostname: the string is empty")
        }
        if let bad = name.unicodeScalars.first(where: {
            $0.value < 0x21 || $0.value == 0x7F || $0.properties.isWhitespace
        }) {
            let what = bad == " " ? "a space" : "control character U+\(String(bad.value, radix: 16, uppercase: true))"
            throw ReachabilityError(.invalidHostname, "\(quoted) is not a hostname: it contains \(what)")
        }
        // One trailing dot marks a fully qualified name; it does not count.
        let body = name.hasSuffix(".") ? String(name.dropLast()) : name
        guard body.utf8.count <= 253 else {
            throw ReachabilityError(
                .invalidHostname, "\(quoted) is not a hostname: \(body.utf8.count) bytes, the limit is 253")
        }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else {
                throw ReachabilityError(.invalidHostname, "\(quoted) is not a hostname: it has an empty label")
            }
            guard label.utf8.count <= 63 else {
                throw ReachabilityError(
                    .invalidHostname,
                    "\(quoted) is not a hostname: label \"\(label.prefix(20))…\" has \(label.utf8.count) bytes, the limit is 63"
                )
            }
        }
        return name
    }
}
