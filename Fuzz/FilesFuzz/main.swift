// libFuzzer target: arbitrary bytes as the files other programs write and the library
// reads: a dhclient lease file (`DHCPLeaseFile`'s tokenizer and blocks, which
// captive-portal discovery and `ANDROID_METERED` share; each lease's options and
// `expire` date), a systemd-networkd lease file (`LeaseFiles`, both formats) and
// resolv.conf (`NameserverRule`, resolved's upstream list behind its stub). Package.swift
// says how to build and run it; a plain `swift build` makes a replayer
// (`FilesFuzz FILE|DIR…`). The readers are internal: reached with @testable imports,
// which a debug build (the fuzzer's) allows.
import FuzzSupport
@testable import ReachabilityBase
@testable import ReachabilityCore

enum SystemFiles {
    /// Every reader's answer for `bytes`; none must crash.
    static func run(_ bytes: [UInt8]) -> Int {
        var digest = 0
        for lease in DHCPLeaseFile.leases(bytes) {
            digest &+= lease.interface?.utf8.count ?? 0
            if let vendor = lease.option(["vendor-encapsulated-options"]), LeaseFiles.containsMarker(vendor) {
                digest &+= 1
            }
            digest &+= lease.option(["default-url", "captive-portal", "unknown-114"])?.count ?? 0
            digest &+= lease.expire.flatMap(DHCPLeaseFile.expiry) ?? 0
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if LeaseFiles.networkdSaysMetered(text) { digest &+= 1 }
        if NameserverRule.isConfigured(resolvConf: text, resolvedUpstream: { text }) { digest &+= 1 }
        return digest
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let bytes = FuzzDriver.bytes(data, size) { _ = SystemFiles.run(bytes) }
    return 0
}

@_cdecl("FilesFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    FuzzDriver.main(name: "FilesFuzz", argc: argc, argv: argv, testOneInput: { testOneInput($0, $1) }) {
        _ = SystemFiles.run($0)
    }
}
