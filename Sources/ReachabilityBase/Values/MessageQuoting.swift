/// `text` quoted for an error message, the one rule every module of the package
/// uses: cut at 80 characters (a 100 kB argument makes a one-line message) and
/// control characters written as `\u{…}` (a hostile value can't forge a line).
package func quotedForMessage(_ text: String) -> String {
    let shown = text.utf8.count > 80 ? String(text.prefix(80)) + "…" : text
    var escaped = ""
    for scalar in shown.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            escaped += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            escaped.unicodeScalars.append(scalar)
        }
    }
    return "\"\(escaped)\""
}
