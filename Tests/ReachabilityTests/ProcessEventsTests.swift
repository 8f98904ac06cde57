import Testing

@testable import ReachabilityBase
@testable import ReachabilityCore

/// The pure parts of following processes: the proc connector's messages read and
/// written (bytes laid out as <linux/cn_proc.h> lays them out, including ones that
/// lie), and the rescan bound over a clock the test moves.
@Suite struct ProcessEventsTests {
    /// A datagram as the kernel sends it: netlink header, connector header
    /// (`index`, `value`, `ack`), a struct proc_event with `what` and `data`.
    static func datagram(what: UInt32, data: [UInt32], index: UInt32 = 1, value: UInt32 = 1, ack: UInt32 = 0)
        -> [UInt8]
    {
        var bytes: [UInt8] = []
        func append(_ value: some FixedWidthInteger) { withUnsafeBytes(of: value) { bytes += $0 } }
        let length = 16 + 20 + 16 + 4 * data.count
        append(UInt32(length))
        append(UInt16(3))
        append(UInt16(0))
        append(UInt32(0))
        append(UInt32(0))
        append(index)
        append(value)
        append(UInt32(8794))  // seq: the kernel's own count
        append(ack)
        append(UInt16(16 + 4 * data.count))
        append(UInt16(0))
        append(what)
        append(UInt32(0))  // cpu
        append(UInt64(123_456_789))  // timestamp_ns
        for word in data { append(word) }
        return bytes
    }

    static func read(_ bytes: [UInt8]) -> ProcessConnector.Message {
        bytes.withUnsafeBytes { ProcessConnector.message($0) }
    }

    @Test("The listen request is the 40 bytes the kernel takes: headers, then PROC_CN_MCAST_LISTEN")
    func request() {
        let bytes = ProcessConnector.request(ProcessConnector.listen, token: 0xDEAD_BEEF)
        #expect(bytes.count == 40)
        func word(_ offset: Int) -> UInt32 {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        }
        #expect(word(0) == 40, "nlmsg_len")
        #expect(word(16) == 1 && word(20) == 1, "CN_IDX_PROC, CN_VAL_PROC")
        #expect(word(28) == 0xDEAD_BEEF, "cn_msg.ack, which the answer returns plus one")
        #expect(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 32, as: UInt16.self) } == 4, "cn_msg.len")
        #expect(word(36) == 1, "PROC_CN_MCAST_LISTEN")
        #expect(ProcessConnector.request(ProcessConnector.ignore, token: 1)[36] == 2, "PROC_CN_MCAST_IGNORE")
    }

    @Test("A process's fork, exec and exit count; a thread's fork and exit, and a uid change, don't")
    func events() {
        // fork: parent pid, parent tgid, child pid, child tgid.
        #expect(Self.read(Self.datagram(what: 1, data: [10, 10, 11, 11])) == .process)
        #expect(Self.read(Self.datagram(what: 1, data: [10, 10, 12, 10])) == .other, "a thread")
        // exec: pid, tgid.
        #expect(Self.read(Self.datagram(what: 2, data: [11, 11])) == .process)
        // exit: pid, tgid, code, signal, parent pid, parent tgid.
        #expect(Self.read(Self.datagram(what: 0x8000_0000, data: [11, 11, 0, 17, 10, 10])) == .process)
        #expect(Self.read(Self.datagram(what: 0x8000_0000, data: [12, 10, 0, 0, 10, 10])) == .other, "a thread")
        #expect(Self.read(Self.datagram(what: 4, data: [11, 11, 0, 0])) == .other, "PROC_EVENT_UID")
        #expect(Self.read(Self.datagram(what: 0x200, data: [11, 11, 0, 0, 0, 0])) == .other, "PROC_EVENT_COMM")
    }

    @Test("The answer to a listen: the request's token plus one, and its error")
    func answer() {
        #expect(Self.read(Self.datagram(what: 0, data: [0, 0], ack: 8)) == .answer(acknowledging: 8, error: 0))
        #expect(Self.read(Self.datagram(what: 0, data: [1, 0], ack: 8)) == .answer(acknowledging: 8, error: 1))
    }

    @Test(
        "A message that lies (short, cut in its event, another connector's) counts as a process event: a scan resyncs")
    func lies() {
        #expect(Self.read([]) == .process)
        #expect(Self.read(Array(repeating: 0xFF, count: 15)) == .process)
        #expect(Self.read(Array(Self.datagram(what: 1, data: [10, 10, 12, 10]).prefix(50))) == .process)
        #expect(Self.read(Self.datagram(what: 1, data: [10, 10])) == .process, "a fork without its child")
        #expect(Self.read(Self.datagram(what: 0, data: [0, 0], index: 2)) == .process, "another connector's")
        #expect(Self.read(Self.datagram(what: 0, data: [0, 0], value: 9)) == .process)
    }

    // MARK: The rescan bound

    static let start = ContinuousClock.now

    static func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test("With process events, an idle monitor has no deadline: no wake-up")
    func idle() {
        let schedule = RescanSchedule(interval: .seconds(2), periodic: false, lastScan: Self.at(0))
        #expect(schedule.deadline == nil)
        #expect(!schedule.isDue(at: Self.at(3_600_000)))
    }

    @Test("Without them, a scan every interval from the last one")
    func periodic() {
        var schedule = RescanSchedule(interval: .seconds(2), periodic: true, lastScan: Self.at(0))
        #expect(schedule.deadline == Self.at(2000))
        #expect(!schedule.isDue(at: Self.at(1999)) && schedule.isDue(at: Self.at(2000)))
        schedule.scanned(at: Self.at(2500))
        #expect(schedule.deadline == Self.at(4500), "counted from the last scan, a name's included")
    }

    @Test("The first process event after a quiet interval is looked at at once")
    func firstAtOnce() {
        var schedule = RescanSchedule(interval: .seconds(2), periodic: false, lastScan: Self.at(0))
        schedule.processesChanged(at: Self.at(5000))
        #expect(schedule.isDue(at: Self.at(5000)))
    }

    @Test("A storm of process events: at most one scan per interval, and the last events are seen")
    func storm() {
        var schedule = RescanSchedule(interval: .seconds(2), periodic: false, lastScan: Self.at(0))
        var scans: [Int] = []
        // A process starts every millisecond for 10 s; the monitor scans when due.
        for millisecond in 1...10_000 {
            schedule.processesChanged(at: Self.at(millisecond))
            if schedule.isDue(at: Self.at(millisecond)) {
                scans.append(millisecond)
                schedule.scanned(at: Self.at(millisecond))
            }
        }
        #expect(scans.count == 5 && scans.first == 2000 && scans.last == 10_000, "\(scans.count) scans")
        // The storm ends just after a scan: the events since are looked at one interval on.
        schedule.processesChanged(at: Self.at(10_001))
        #expect(schedule.deadline == Self.at(12_000))
        #expect(!schedule.isDue(at: Self.at(11_999)))
    }

    @Test("A scan for a name's change covers the process events before it")
    func nameScanCovers() {
        var schedule = RescanSchedule(interval: .seconds(2), periodic: false, lastScan: Self.at(0))
        schedule.processesChanged(at: Self.at(500))
        #expect(schedule.deadline == Self.at(2000))
        schedule.scanned(at: Self.at(600))
        #expect(schedule.deadline == nil)
    }
}
