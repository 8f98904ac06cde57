/// How an interface was classified: its public type, and whether it is a VPN,
/// tunnel or PPP link (which makes routes over it "transient").
@_spi(Testing) public struct InterfaceClassification: Sendable, Equatable {
    var type: InterfaceType
    var isVirtualPrivate: Bool

    init(_ type: InterfaceType, virtualPrivate: Bool = false) {
        self.type = type
        self.isVirtualPrivate = virtualPrivate
    }
}
