// The connectivity series: only with the Connectivity trait, so that a program that
// records reachability and paths needs swift-metrics alone (not SwiftNIO).
#if Connectivity || Everything
    public import Connectivity
    import CoreMetrics

    extension ReachabilityMetrics {
        /// Records a connectivity result: its verdict as the current one
        /// (``recordVerdict(_:)``) and it as a check (``recordCheck(_:)``). For a
        /// stream of published results (`Connectivity/updates`), which has only the
        /// changes: to count every check, feed `Connectivity/checks` to
        /// ``recordCheck(_:)`` and the updates to ``recordVerdict(_:)``, as
        /// ``observe(_:)-(Connectivity)`` does.
        public func record(_ result: ConnectivityResult) {
            recordVerdict(result)
            recordCheck(result)
        }

        /// Sets `reachability_connectivity_verdict` to `result`'s verdict.
        public func recordVerdict(_ result: ConnectivityResult) {
            state.withLock { state in
                let series = state.connectivity ?? ConnectivitySeries(labels: labels, factory: factory)
                for (name, meter) in series.verdicts { meter.set(name == result.verdict.name ? 1 : 0) }
                state.connectivity = series
            }
        }

        /// Counts `result` as one check (`reachability_connectivity_checks_total` by its
        /// verdict) and records its endpoints' probe durations.
        public func recordCheck(_ result: ConnectivityResult) {
            state.withLock { state in
                var series = state.connectivity ?? ConnectivitySeries(labels: labels, factory: factory)
                let checks =
                    series.checks[result.verdict.name]
                    ?? Counter(
                        label: "reachability_connectivity_checks_total",
                        dimensions: labels + [("verdict", result.verdict.name)],
                        factory: factory)
                checks.increment()
                series.checks[result.verdict.name] = checks
                for endpoint in result.endpoints {
                    let url = endpoint.url.absoluteString
                    let timer =
                        series.durations[url]
                        ?? CoreMetrics.Timer(
                            label: "reachability_connectivity_probe_duration_seconds",
                            dimensions: labels + [("endpoint", url)],
                            factory: factory)
                    series.durations[url] = timer
                    let (seconds, attoseconds) = endpoint.duration.components
                    timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
                }
                state.connectivity = series
            }
        }

        /// Records every verdict `connectivity` publishes and counts every check it
        /// makes while its notifier runs (its `updates` and `checks` sequences); the
        /// task ends when both finish (`Connectivity/stop()`).
        @discardableResult
        public func observe(_ connectivity: Connectivity) -> Task<Void, Never> {
            let updates = connectivity.updates
            let checks = connectivity.checks
            return Task { [self] in
                async let verdicts: Void = { for await result in updates { recordVerdict(result) } }()
                for await check in checks { recordCheck(check) }
                await verdicts
            }
        }
    }
#endif
