import Glibc
@_spi(Testing) import ReachabilityBase

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

    /// What `inet_aton` makes of `name` when it is one of the old numeric IPv4
    /// shorthands that `inet_pton` refuses (`0x7f.0.0.1`, `127.1`, `2130706433`,
    /// `0177.0.0.1`); nil otherwise. getaddrinfo would read such a name as that
    /// address without asking DNS, so it is refused like any malformed literal.
    static func legacyNumericIPv4(_ name: String) -> IPAddress? {
        var parsed = in_addr()
        var strict = in_addr()
        guard inet_aton(name, &parsed) != 0, inet_pton(AF_INET, name, &strict) != 1 else { return nil }
        return IPAddress(validBytes: withUnsafeBytes(of: parsed.s_addr) { Array($0) }, scopeID: 0)
    }

    /// The name as the resolver is asked for it: a label with non-ASCII
    /// characters is lowercased and Punycode-encoded with the `xn--` prefix, as
    /// IDNA does (`bücher.example` → `xn--bcher-kva.example`); ASCII labels are
    /// kept as they are. Give labels in Unicode normalization form C, as typed
    /// text almost always is.
    static func lookupName(_ name: String) -> String {
        guard !name.allSatisfy(\.isASCII) else { return name }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false).map { label -> String in
            guard !label.allSatisfy(\.isASCII) else { return String(label) }
            let scalars = label.lowercased().unicodeScalars.map(\.value)
            return Punycode.encode(scalars).map { "xn--" + $0 } ?? String(label)
        }
        return labels.joined(separator: ".")
    }

    /// Checks the DNS limits and rejects text no resolver would accept, naming
    /// the input in the error: empty, over 253 bytes, an empty label or one over
    /// 63 bytes (after IDNA encoding), spaces, control characters or bidirectional
    /// formatting characters (``isTerminalControl(_:)``: no resolver takes them, and
    /// a name is printed).
    static func validate(_ name: String) throws(ReachabilityError) -> String {
        let quoted = quotedForMessage(name)
        guard !name.isEmpty else {
            throw ReachabilityError(.invalidHostname, "\"\" is not a hostname: the string is empty")
        }
        if let bad = name.unicodeScalars.first(where: { isTerminalControl($0) || $0.properties.isWhitespace }) {
            let kind = bad.properties.generalCategory == .format ? "formatting" : "control"
            let what = bad == " " ? "a space" : "\(kind) character U+\(String(bad.value, radix: 16, uppercase: true))"
            throw ReachabilityError(.invalidHostname, "\(quoted) is not a hostname: it contains \(what)")
        }
        // One trailing dot marks a fully qualified name; it does not count.
        let ascii = lookupName(name)
        let body = ascii.hasSuffix(".") ? String(ascii.dropLast()) : ascii
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

/// RFC 3492 Punycode, the encoding IDNA gives non-ASCII labels.
enum Punycode {
    private static let base: UInt32 = 36
    private static let tMin: UInt32 = 1
    private static let tMax: UInt32 = 26
    private static let skew: UInt32 = 38
    private static let damp: UInt32 = 700

    /// The Punycode form of `input` (code points), without the `xn--` prefix; nil
    /// on overflow (a label far longer than DNS allows).
    static func encode(_ input: [UInt32]) -> String? {
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basic = UInt32(output.count)
        var handled = basic
        if basic > 0 { output.append("-") }
        var n: UInt32 = 0x80
        var delta: UInt32 = 0
        var bias: UInt32 = 72
        while handled < UInt32(input.count) {
            guard let next = input.filter({ $0 >= n }).min() else { return nil }
            let (step, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= UInt32.max - step else { return nil }
            delta += step
            n = next
            for code in input {
                if code < n {
                    guard delta < UInt32.max else { return nil }
                    delta += 1
                }
                guard code == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basic)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: UInt32) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? value + 0x61 : value - 26 + 0x30)))
    }

    private static func adapt(_ delta: UInt32, points: UInt32, first: Bool) -> UInt32 {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k: UInt32 = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (((base - tMin + 1) * delta) / (delta + skew))
    }
}
