import Foundation

/// The one rule for a URL that a network hands us to show the user: a plain-HTTP
/// probe's redirect `Location` (resolved against the probe URL) and the RFC 8908
/// API's `user-portal-url` and `venue-info-url`. Any server on the path can send
/// these, and a program may open them in a browser, so only what a login page can
/// be is taken: an http or https URL of at most 8 KiB, with no user name or
/// password, and a host that is not empty and holds no spaces or control
/// characters. Anything else (`javascript:`, `file:`, `data:`, credentials, 60 KB
/// of text) is refused: the redirect path then falls back to the probe URL, the
/// API path ignores the field.
enum PortalURL {
    /// `url` when it passes the rule, else nil.
    static func accepted(_ url: URL) -> URL? {
        let text = url.absoluteString
        guard text.utf8.count <= ConnectivityConfiguration.fieldLimit,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.user == nil, url.password == nil, !hasUserInfo(text),
            let host = url.host, !host.isEmpty,
            !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { return nil }
        return url
    }

    /// A redirect's `Location` resolved against the URL that was probed (a relative
    /// `/login` or `//portal.example/x` lands on the probe's scheme and host), when
    /// the result passes the rule.
    static func location(_ location: String, relativeTo probe: URL) -> URL? {
        guard location.utf8.count <= ConnectivityConfiguration.fieldLimit,
            let resolved = URL(string: location, relativeTo: probe)?.absoluteURL
        else { return nil }
        return accepted(resolved)
    }

    /// A URL string from the RFC 8908 API, when it is an absolute URL passing the rule.
    static func apiField(_ text: String) -> URL? {
        guard text.utf8.count <= ConnectivityConfiguration.fieldLimit, let url = URL(string: text) else { return nil }
        return accepted(url)
    }

    /// Whether the authority of `text` (`scheme://AUTHORITY/…`) carries user
    /// information (an `@`), whatever Foundation made of it.
    private static func hasUserInfo(_ text: String) -> Bool {
        guard let start = text.range(of: "://")?.upperBound else { return false }
        let rest = text[start...]
        return rest.prefix { !"/?#".contains($0) }.contains("@")
    }
}
