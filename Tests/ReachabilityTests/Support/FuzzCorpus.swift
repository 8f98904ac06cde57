import Reachability
import TestSupport

@_spi(Testing) @testable import ReachabilityCore

/// Inputs for the parser's crash tests. Deterministic: the parent process and
/// the child that parses them regenerate the same buffers from the same seeds.
enum FuzzCorpus: Codable, Sendable, Hashable, CustomStringConvertible {
    /// `nlmsg_len` of 2 GiB or more, which is negative as a C `int`.
    case hugeMessageLengths
    /// Random bytes of random lengths.
    case randomGarbage
    /// Well-framed messages (valid `nlmsg_len`) of every type the parser reads, with random bodies.
    case randomMessages
    /// A captured fixture with a few random bytes overwritten.
    case mutated(String)

    static let all: [FuzzCorpus] =
        [.hugeMessageLengths, .randomGarbage, .randomMessages] + Fixture.all.map { .mutated($0) }

    var description: String {
        switch self {
        case .hugeMessageLengths: "huge nlmsg_len"
        case .randomGarbage: "random garbage"
        case .randomMessages: "random well-framed messages"
        case .mutated(let fixture): "mutated \(fixture).bin"
        }
    }

    func inputs() throws -> [[UInt8]] {
        switch self {
        case .hugeMessageLengths:
            let done = NetlinkBuilder.message(type: NLMsgType.done, payload: NetlinkBuilder.raw(Int32(0)))
            return [UInt32(0x8000_0000), 0x8000_0014, 0xFFFF_FFF0, 0xFFFF_FFFF].flatMap { length -> [[UInt8]] in
                var link = NetlinkBuilder.newLink(index: 2, name: "eth0")
                link.replaceSubrange(0..<4, with: NetlinkBuilder.raw(length))
                return [link, done + link]
            }
        case .randomGarbage:
            var random = SeededGenerator(seed: 0x5EED_0001)
            return (0..<5_000).map { _ in random.bytes(count: Int.random(in: 0...600, using: &random)) }
        case .randomMessages:
            var random = SeededGenerator(seed: 0x5EED_0002)
            let types = [
                NLMsgType.error, NLMsgType.done, NLMsgType.newLink, NLMsgType.delLink, NLMsgType.newAddr,
                NLMsgType.delAddr, NLMsgType.newRoute, NLMsgType.delRoute, NLMsgType.newRule, 0, 1, 99,
            ]
            return (0..<5_000).map { _ in
                (0..<Int.random(in: 1...4, using: &random)).flatMap { _ in
                    let type = types.randomElement(using: &random)!
                    return NetlinkBuilder.message(
                        type: type, payload: random.bytes(count: Int.random(in: 0...120, using: &random)))
                }
            }
        case .mutated(let fixture):
            let original = try Fixture.bytes(fixture)
            var random = SeededGenerator(seed: 0x5EED_0003 ^ UInt64(original.count))
            return (0..<2_000).map { _ in
                var bytes = original
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = random.bytes(count: 1)[0]
                }
                return bytes
            }
        }
    }

    /// What is wrong with `result` for `input`, or nil.
    func violation(_ result: NetlinkParser.Result, input: [UInt8]) -> String? {
        if result.messages.count > input.count / NetlinkBuilder.headerSize {
            return "\(result.messages.count) messages from \(input.count) bytes"
        }
        if let malformed = result.malformed, !(0..<input.count).contains(malformed.offset) {
            return "malformed offset \(malformed.offset) outside \(input.count) bytes"
        }
        if self == .hugeMessageLengths {
            guard result.malformed != nil else { return "a message longer than the buffer was accepted" }
            guard result.messages.allSatisfy({ $0.message == .done }) else {
                return "parsed \(result.messages.map(\.message)) from a message longer than the buffer"
            }
        }
        return nil
    }
}
