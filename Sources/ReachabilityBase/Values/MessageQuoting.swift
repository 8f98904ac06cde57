/// `text` quoted for an error message, the one rule every module of the package
/// uses: cut at 80 characters (a 100 kB argument makes a one-line message) and
/// terminal controls (``isTerminalControl(_:)``) written as `\u{…}` (a hostile
/// value can't forge a line, colour the terminal or reorder what follows).
package func quotedForMessage(_ text: String) -> String {
    let shown = text.utf8.count > 80 ? String(text.prefix(80)) + "…" : text
    var escaped = ""
    for scalar in shown.unicodeScalars {
        if isTerminalControl(scalar) {
            escaped += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            escaped.unicodeScalars.append(scalar)
        }
    }
    return "\"\(escaped)\""
}

/// Whether a terminal acts on `scalar` rather than showing it: the C0 and C1
/// controls and DEL (ESC starts a colour or a cursor move, U+009B is CSI on its
/// own), and the bidirectional formatting characters that reorder the text after
/// them. Interface names, SSIDs and URLs may hold any of them.
package func isTerminalControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}
