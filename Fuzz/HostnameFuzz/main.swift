// libFuzzer target: arbitrary bytes, as UTF-8 (invalid sequences replaced) → the public
// `Reachability(hostname:)`, which validates the name (DNS limits, IDNA's Punycode,
// spaces and control characters), refuses inet_aton's numeric shorthands and parses what
// looks like an address (`IPAddress`, zones included). Package.swift says how to build
// and run it; a plain `swift build` makes a replayer (`HostnameFuzz FILE|DIR…`).
import FuzzSupport
import ReachabilityCore

enum Hostnames {
    /// What the initializer makes of `bytes`; it must not crash, and a name it accepts
    /// holds no space, control or bidirectional formatting character.
    static func run(_ bytes: [UInt8]) {
        let name = String(decoding: bytes, as: UTF8.self)
        do {
            let reachability = try Reachability(hostname: name)
            let refused = name.unicodeScalars.first { scalar in
                scalar.properties.isWhitespace || scalar.properties.generalCategory == .control
                    || [0x061C, 0x200E, 0x200F].contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
                    || (0x2066...0x2069).contains(scalar.value)
            }
            precondition(
                refused == nil, "accepted \(name.debugDescription), with U+\(String(refused?.value ?? 0, radix: 16))")
            precondition(!reachability.targetDescription.isEmpty, "accepted \(name.debugDescription): an empty target")
        } catch {
            precondition(!error.message.isEmpty, "no message for \(name.debugDescription)")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let bytes = FuzzDriver.bytes(data, size) { Hostnames.run(bytes) }
    return 0
}

@_cdecl("HostnameFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    FuzzDriver.main(name: "HostnameFuzz", argc: argc, argv: argv, testOneInput: { testOneInput($0, $1) }) {
        Hostnames.run($0)
    }
}
