@_spi(Testing) import ReachabilityBase

/// How an interface was classified: its public type, and whether it is a VPN,
/// tunnel or PPP link (which makes routes over it "transient").
@_spi(Testing) public struct InterfaceClassification: Sendable, Equatable {
    var type: InterfaceType
    var isVirtualPrivate: Bool
    /// A link to a phone sharing its connection: USB tethering (RNDIS, Apple's
    /// ipheth) or Bluetooth PAN. Such a path is expensive (metered), as Android and
    /// NetworkManager treat it.
    var isTethered: Bool

    init(_ type: InterfaceType, virtualPrivate: Bool = false, tethered: Bool = false) {
        self.type = type
        self.isVirtualPrivate = virtualPrivate
        self.isTethered = tethered
    }
}
