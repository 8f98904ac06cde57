#if ENABLE_FAULT_INJECTION
    import Glibc

    // Compiled in debug builds only (Package.swift's ENABLE_FAULT_INJECTION, what `swift
    // test` builds): a release build has neither the plan nor a check for one in any call.

    /// A fault plan: which system calls of the library fail, with which errno, and
    /// when, or are held back for a while (``delay(_:by:count:matching:)``). Tests set
    /// one on a ``NetworkEnvironment`` (its `systemCalls`) to make any call of that
    /// environment's monitor, sockets, file readers, watches, resolver check or name
    /// resolutions fail without root (DESIGN §10): for example
    /// `faults.inject(.recvmmsg, errno: ENOBUFS, matching: .netlink(.events))`, with
    /// `environment.systemCalls = SystemCalls(faults: faults)`.
    ///
    /// Each rule names a call, an errno, how many times it fails the call (once, a
    /// number of times, always), after how many matching calls that succeed, and
    /// optionally the ``SystemCallSubject`` the call is made on: a rule's path matches
    /// every path that contains it (`.path("wlan0/")`), a rule's nameserver the wait
    /// on several that include it; any other subject matches itself. A rule with a
    /// subject never matches a call without one. The rules are asked in the order they
    /// were added, and the first that fails a call decides its errno. Rules can be
    /// added and removed while the library runs.
    ///
    /// A failed call is not made. An injected EINTR is retried like a real one where
    /// the library retries it (so a rule that fails a retried call with EINTR
    /// `always` would spin). close always closes (as Linux does); its failure is
    /// counted and ignored, as a real one is.
    ///
    /// Not API: SPI `Testing`. `Sendable`: its state is behind a lock.
    @_spi(Testing) public final class SystemCallFaults: Sendable {
        /// The calls a rule can name.
        @_spi(Testing) public typealias Call = SystemCall

        /// How many times a rule fails its call.
        @_spi(Testing) public enum Count: Sendable, Hashable {
            /// The next matching call only.
            case once
            /// The next `n` matching calls.
            case times(Int)
            /// Every matching call, until the rule is removed.
            case always

            /// How many calls it takes; nil: all.
            package var calls: Int? {
                switch self {
                case .once: 1
                case .times(let times): max(times, 0)
                case .always: nil
                }
            }
        }

        /// A rule of the plan, as ``inject(_:errno:count:after:matching:)`` returned it.
        @_spi(Testing) public struct Rule: Hashable, Sendable {
            package let id: Int
        }

        private struct Entry {
            package var call: Call
            package var errno: Int32
            /// Failures left; nil: always.
            package var remaining: Int?
            /// Matching calls to let through first.
            package var skip: Int
            package var subject: SystemCallSubject?
            /// A rule that delays the call rather than failing it.
            package var delay: Duration? = nil
            package var fired = 0
            package var active = true

            package func matches(_ call: Call, _ subject: SystemCallSubject?) -> Bool {
                guard active, call == self.call else { return false }
                guard let wanted = self.subject else { return true }
                guard let subject else { return false }
                switch (wanted, subject) {
                case (.path(let part), .path(let path)): return Self.contains(path, part)
                case (.nameserver(let address), .nameservers(let addresses)): return addresses.contains(address)
                default: return wanted == subject
                }
            }

            /// Whether `text` contains `part`: a byte search, not `StringProtocol.contains(_:)`,
            /// which links the standard library's regex engine.
            private static func contains(_ text: String, _ part: String) -> Bool {
                let haystack = Array(text.utf8)
                let needle = Array(part.utf8)
                guard needle.count <= haystack.count else { return false }
                guard !needle.isEmpty else { return true }
                return (0...(haystack.count - needle.count)).contains { start in
                    haystack[start..<(start + needle.count)].elementsEqual(needle)
                }
            }
        }

        private struct State {
            package var entries: [Entry] = []
            package var attempts: [Call: Int] = [:]
        }

        private let state = LockedValue(State())

        /// An empty plan: every call is made.
        @_spi(Testing) public init() {}

        private func withLock<T>(_ body: (inout State) -> T) -> T {
            state.withLock(body)
        }

        /// Makes `call` fail with `errno`: `count` times, once `successes` matching
        /// calls have gone through; only calls on `subject`, when one is given (as the
        /// type's notes say). Returns the rule, for ``fired(_:)`` and ``remove(_:)``.
        @_spi(Testing) @discardableResult
        public func inject(
            _ call: Call, errno: Int32, count: Count = .once, after successes: Int = 0,
            matching subject: SystemCallSubject? = nil
        ) -> Rule {
            return withLock { state in
                state.entries.append(
                    Entry(call: call, errno: errno, remaining: count.calls, skip: max(successes, 0), subject: subject))
                return Rule(id: state.entries.count - 1)
            }
        }

        /// Makes `call` (on `subject`, when given) wait `delay`, or
        /// until the rule is removed, before it is made, then makes it: a slow kernel or
        /// a stuck driver. `count` as for ``inject(_:errno:count:after:matching:)``.
        @_spi(Testing) @discardableResult
        public func delay(
            _ call: Call, by delay: Duration, count: Count = .always, matching subject: SystemCallSubject? = nil
        )
            -> Rule
        {
            return withLock { state in
                state.entries.append(
                    Entry(call: call, errno: 0, remaining: count.calls, skip: 0, subject: subject, delay: delay))
                return Rule(id: state.entries.count - 1)
            }
        }

        /// Stops `rule` from failing or delaying any more calls, and ends the delays it
        /// holds calls in (its ``fired(_:)`` count stays).
        @_spi(Testing) public func remove(_ rule: Rule) {
            withLock { $0.entries[rule.id].active = false }
        }

        /// Stops every rule: from now on every call is made.
        @_spi(Testing) public func removeAll() {
            withLock { state in
                for index in state.entries.indices { state.entries[index].active = false }
            }
        }

        /// How many calls `rule` has failed so far.
        @_spi(Testing) public func fired(_ rule: Rule) -> Int {
            withLock { $0.entries[rule.id].fired }
        }

        /// How many calls of kind `call` asked the plan so far, failed or not (each
        /// retry of an interrupted call counts).
        @_spi(Testing) public func attempts(_ call: Call) -> Int {
            withLock { $0.attempts[call, default: 0] }
        }

        /// The errno `call` on `subject` fails with now, if a rule says so; counts the
        /// attempt and the rules' skips and failures.
        package func failure(of call: Call, subject: SystemCallSubject?) -> Int32? {
            let (failure, delay, delaying) = withLock { state -> (Int32?, Duration, [Int]) in
                state.attempts[call, default: 0] += 1
                var failure: Int32?
                var delay = Duration.zero
                var delaying: [Int] = []
                for index in state.entries.indices where state.entries[index].matches(call, subject) {
                    if state.entries[index].skip > 0 {
                        state.entries[index].skip -= 1
                        continue
                    }
                    let wait = state.entries[index].delay
                    guard wait != nil || failure == nil, state.entries[index].remaining.map({ $0 > 0 }) ?? true
                    else { continue }
                    state.entries[index].fired += 1
                    if let left = state.entries[index].remaining { state.entries[index].remaining = left - 1 }
                    if let wait {
                        delay = max(delay, wait)
                        delaying.append(index)
                    } else {
                        failure = state.entries[index].errno
                    }
                }
                return (failure, delay, delaying)
            }
            // Outside the lock, so the plan's other calls go on and a test can end the wait.
            let end = ContinuousClock.now + delay
            while ContinuousClock.now < end, withLock({ state in delaying.contains { state.entries[$0].active } }) {
                usleep(2000)
            }
            return failure
        }
    }
#endif
