// rwbutler/Connectivity's documented behaviour and its own test suite
// (ConnectivityPercentageTests, ConnectivityStatusTests, the validator tests,
// ConfigurationTests, ConnectivityTests, PollingTests), written against this
// package's compatibility surface: pure parts as unit tests, checks against local
// HTTP servers in test namespaces.
import Connectivity
import Foundation
import NIOConcurrencyHelpers
import Reachability
import Testing

/// A validator as rwbutler's own test writes one (changed only from `URLResponse?`
/// to `ProbeResponse?`): valid for example.com when the body starts with 1 and ends with z.
private final class ExampleValidator: ConnectivityResponseValidator {
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        let text = data.flatMap { String(data: $0, encoding: .utf8) } ?? ""
        return url.host == "example.com" && text.hasPrefix("1") && text.hasSuffix("z")
    }
}

/// Valid for a 200 answer whose `X-Check` header is `ok`: a validator that reads the response.
private final class HeaderValidator: ConnectivityResponseValidator {
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        response?.status == 200 && response?.header("X-Check") == "ok"
    }
}

/// An Apple success page, as rwbutler's `success-response.html`.
private let successPage = """
    <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">
    <HTML>
    <HEAD>
    \t<TITLE>Success</TITLE>
    </HEAD>
    <BODY>
    \tSuccess
    </BODY>
    </HTML>
    """

/// What a captive portal serves in its place, as rwbutler's `failure-response.html`.
private let failurePage = "<html><head><title>Log in</title></head><body>Please log in</body></html>"

private func validates(
    _ validator: any ConnectivityResponseValidator, _ body: String, url: String = "https://example.com"
)
    -> Bool
{
    validator.isResponseValid(url: URL(string: url)!, response: nil, data: body.data(using: .utf8))
}

/// rwbutler's API has process-wide settings (`Connectivity.isHTTPSOnly`, the static
/// `urlSessionConfiguration`): every suite that uses them is nested here, and runs
/// one test at a time. A test sets the ones it depends on.
@Suite("rwbutler/Connectivity (process-wide settings: one test at a time)", .serialized)
struct RwbutlerSuites {}

extension RwbutlerSuites {
    @Suite("rwbutler/Connectivity: values, validators, configuration (no network)")
    struct RwbutlerConnectivityUnitTests {
        @Test("Percentage: clamped to 0...100, a share of nothing is 0, compared by value")
        func percentage() {
            #expect(Connectivity.Percentage(50.0).value == 50)
            #expect(Connectivity.Percentage(0.0).value == 0)
            #expect(Connectivity.Percentage(100.0).value == 100)
            #expect(Connectivity.Percentage(-0.1).value == 0)
            #expect(Connectivity.Percentage(100.1).value == 100)
            #expect(Connectivity.Percentage(.nan).value == 0)
            #expect(ConnectivityPercentage(UInt(2), outOf: UInt(10)).value == 20)
            #expect(ConnectivityPercentage(UInt(0), outOf: UInt(1)).value == 0)
            #expect(ConnectivityPercentage(UInt(1), outOf: UInt(0)).value == 0)
            #expect(ConnectivityPercentage(3.0, outOf: 4.0).value == 75)
            #expect(ConnectivityPercentage(5.0, outOf: 4.0).value == 100)
            #expect(!(ConnectivityPercentage(0.0) < ConnectivityPercentage(0.0)))
            #expect(ConnectivityPercentage(0.0) < ConnectivityPercentage(0.1))
            #expect(ConnectivityPercentage(UInt(1), outOf: UInt(2)) >= Connectivity.Percentage(50))
            #expect(ConnectivityPercentage(UInt(1), outOf: UInt(2)) == Connectivity.Percentage(50))
        }

        @Test("ConnectivityStatus descriptions are rwbutler's; rawValue stays the case name")
        func statusDescriptions() {
            let expected: [ConnectivityStatus: String] = [
                .connected: "Internet access",
                .connectedViaCellular: "Cellular with Internet access",
                .connectedViaCellularWithoutInternet: "Cellular without Internet access",
                .connectedViaWiFi: "Wi-Fi with Internet access",
                .connectedViaWiFiWithoutInternet: "Wi-Fi without Internet access",
                .connectedViaEthernet: "Ethernet with Internet access",
                .connectedViaEthernetWithoutInternet: "Ethernet without Internet access",
                .determining: "Connectivity checks pending",
                .notConnected: "No Connection",
            ]
            #expect(Set(expected.keys) == Set(ConnectivityStatus.allCases))
            for (status, text) in expected {
                #expect(status.description == text)
                #expect("\(status)" == text)
            }
            #expect(ConnectivityStatus.connectedViaWiFi.rawValue == "connectedViaWiFi")
            #expect(Connectivity.Status.notConnected.rawValue == "notConnected")
        }

        @Test("the string validators: contains, equals (trimmed), regular expression; any status counts")
        func stringValidators() {
            func check(_ body: String, _ expected: String, _ mode: ConnectivityResponseStringValidationMode) -> Bool {
                validates(ConnectivityResponseStringValidator(validationMode: mode, expectedResponse: expected), body)
            }
            #expect(check("a test", "test", .containsExpectedResponseString))
            #expect(!check("est", "test", .containsExpectedResponseString))
            #expect(check("test", "test", .equalsExpectedResponseString))
            #expect(check("\n test \n", "test", .equalsExpectedResponseString))
            #expect(!check("est", "test", .equalsExpectedResponseString))
            #expect(check("test1234", "test[0-9]+", .matchesRegularExpression))
            #expect(!check("testa1234", "test[0-9]+", .matchesRegularExpression))
            #expect(!check("anything", "(unclosed", .matchesRegularExpression), "a pattern that doesn't compile")
            // The default pattern: case-insensitive, `.` across lines.
            #expect(validates(ConnectivityResponseRegExValidator(), successPage))
            #expect(validates(ConnectivityResponseRegExValidator(), successPage.lowercased()))
            #expect(!validates(ConnectivityResponseRegExValidator(), failurePage))
            #expect(validates(ConnectivityResponseContainsStringValidator(), successPage))
            #expect(!validates(ConnectivityResponseContainsStringValidator(), failurePage))
            #expect(validates(ConnectivityResponseStringEqualityValidator(expectedResponse: "Success"), "  Success\n"))
            // Bytes that are not UTF-8 are no answer.
            let invalid = Data([0xFF, 0xFE, 0x53])
            #expect(
                !ConnectivityResponseContainsStringValidator(expectedResponse: "S").isResponseValid(
                    url: URL(string: "https://example.com")!, response: nil, data: invalid))
            #expect(
                !ConnectivityResponseContainsStringValidator().isResponseValid(
                    url: URL(string: "https://example.com")!, response: nil, data: nil))
        }

        @Test("a custom validator, as rwbutler's own test writes it")
        func customValidator() {
            let validator = ExampleValidator()
            #expect(validates(validator, "11234z"))
            #expect(!validates(validator, "11234z", url: "https://apple.com"))
            #expect(!validates(validator, "21234y"))
        }

        @Test("ConnectivityConfiguration() is rwbutler's: Apple's URLs, 50 %, polling every 10 s while offline, 5 s")
        func configurationDefaults() {
            #expect(
                ConnectivityConfiguration.defaultConnectivityURLs.map(\.absoluteString) == [
                    "https://www.apple.com/library/test/success.html", "https://captive.apple.com/hotspot-detect.html",
                ])
            let configuration = ConnectivityConfiguration()
            #expect(configuration.endpoints.map(\.url) == ConnectivityConfiguration.defaultConnectivityURLs)
            #expect(configuration.endpoints.allSatisfy { $0.expectation.description == "a custom validator" })
            #expect(configuration.successThreshold == 50)
            #expect(configuration.pollingInterval == .seconds(10))
            #expect(configuration.pollWhileOfflineOnly)
            #expect(configuration.probeTimeout == .seconds(5) && configuration.checkDeadline == .seconds(5))
            #expect(configuration.failuresToGoOffline == 1, "each check decides")
            #expect(!configuration.retriesWhileOffline, "no check the program didn't ask for")
            #expect(Connectivity(configuration: configuration).notificationQueue !== DispatchQueue.main)
            Connectivity.isHTTPSOnly = true
            let connectivity = Connectivity(configuration: configuration)
            #expect(connectivity.framework == .network)
            #expect(
                connectivity.isPollingEnabled && connectivity.pollingInterval == 10 && connectivity.pollWhileOfflineOnly
            )
            #expect(connectivity.successThreshold == Connectivity.Percentage(50))
            #expect(connectivity.validationMode == .containsExpectedResponseString)
            #expect(connectivity.expectedResponseString == "Success")
            #expect(connectivity.responseValidator is ConnectivityResponseStringValidator)
            #expect(connectivity.connectivityURLs == ConnectivityConfiguration.defaultConnectivityURLs)
            #expect(connectivity.checkWhenApplicationDidBecomeActive)
            #expect(connectivity.lastError == nil)

            let queue = DispatchQueue(label: "test-queue")
            #expect(
                Connectivity(configuration: ConnectivityConfiguration(callbackQueue: queue)).notificationQueue === queue
            )
            #expect(
                !Connectivity(configuration: .init(checkWhenApplicationDidBecomeActive: false))
                    .checkWhenApplicationDidBecomeActive)

            // This package's own: the vendors' endpoints, no polling, retries, hysteresis.
            let recommended = ConnectivityConfiguration.recommended
            #expect(recommended.endpoints.map(\.url) == ConnectivityEndpoint.defaults.map(\.url))
            #expect(recommended.pollingInterval == nil && recommended.retriesWhileOffline)
            #expect(recommended.failuresToGoOffline == 2 && recommended.checkDeadline == .seconds(10))
            #expect(Connectivity(configuration: recommended).framework == .network)
        }

        @Test("Connectivity() is rwbutler's instance: its two HTTPS URLs, polling off, framework .network, 5 s")
        func instanceDefaults() {
            Connectivity.isHTTPSOnly = true
            Connectivity.rwbutlerSessionDefaults.withLock { $0 = nil }  // The static urlSessionConfiguration's default.
            let connectivity = Connectivity()
            #expect(Connectivity.isHTTPSOnly)
            #expect(connectivity.connectivityURLs == ConnectivityConfiguration.defaultConnectivityURLs)
            #expect(connectivity.status == .determining)
            #expect(connectivity.description == "Connectivity checks pending")
            #expect(connectivity.successThreshold == Connectivity.Percentage(50))
            #expect(!connectivity.isPollingEnabled && connectivity.pollingInterval == 10)
            #expect(!connectivity.pollWhileOfflineOnly)
            #expect(connectivity.validationMode == .containsExpectedResponseString)
            #expect(connectivity.expectedResponseString == "Success")
            #expect(connectivity.expectedResponseRegEx == ConnectivityResponseRegExValidator.defaultRegularExpression)
            #expect(connectivity.responseValidator is ConnectivityResponseContainsStringValidator)
            // rwbutler's code since 6.1.0 (its CHANGELOG; its README still says .systemConfiguration).
            #expect(connectivity.framework == .network)
            #expect(Connectivity(shouldUseHTTPS: true).framework == .network)
            #expect(connectivity.checkWhenApplicationDidBecomeActive)
            #expect(connectivity.configuration.probeTimeout == .seconds(5))
            #expect(connectivity.configuration.checkDeadline == .seconds(5))
            #expect(connectivity.configuration.failuresToGoOffline == 1)
            #expect(!connectivity.configuration.retriesWhileOffline)
            #expect(
                !connectivity.isConnectedViaWiFi && !connectivity.isConnectedViaCellular
                    && !connectivity.isConnectedViaWiFiWithoutInternet
                    && !connectivity.isConnectedViaCellularWithoutInternet && !connectivity.isConnectedViaEthernet)
            #expect(connectivity.lastError == nil)
        }

        @Test("the fluent configuration: configurePolling, configureResponseValidation, configureResponseValidator, …")
        func fluentConfiguration() {
            let polling = ConnectivityConfiguration().configurePolling()
            #expect(polling.pollingInterval == .seconds(10) && polling.pollWhileOfflineOnly)
            #expect(ConnectivityConfiguration().configurePolling(interval: 88).pollingInterval == .seconds(88))
            #expect(ConnectivityConfiguration().configurePolling(isEnabled: false).pollingInterval == nil)
            #expect(!ConnectivityConfiguration().configurePolling(offlineOnly: false).pollWhileOfflineOnly)
            // The interval is kept while polling is off.
            let off = Connectivity(
                configuration: ConnectivityConfiguration().configurePolling(isEnabled: false, interval: 21))
            #expect(!off.isPollingEnabled && off.pollingInterval == 21)

            let regex = Connectivity(
                configuration: .init().configureResponseValidation(.matchesRegularExpression, expected: "regex"))
            #expect(regex.validationMode == .matchesRegularExpression)
            #expect(regex.expectedResponseRegEx == "regex")
            let strings = regex.responseValidator as? ConnectivityResponseStringValidator
            #expect(strings?.responseValidationMode == .matchesRegularExpression)
            #expect(strings?.expectedResponse == "regex")

            let validator = ExampleValidator()
            let custom = Connectivity(configuration: .init().configureResponseValidator(validator))
            #expect(custom.validationMode == .custom)
            #expect(custom.responseValidator === validator)

            let urls = [URL(string: "https://www.apple.com")!, URL(string: "https://www.google.com")!]
            let configured = Connectivity(
                configuration: .init().configureConnectivity(urls: urls).configureFramework(.network)
                    .configureValidationMode(with: .equalsExpectedResponseString))
            #expect(configured.connectivityURLs == urls)
            #expect(configured.framework == .network)
            #expect(configured.validationMode == .equalsExpectedResponseString)
            #expect(configured.responseValidator is ConnectivityResponseStringEqualityValidator)
            #expect(
                Connectivity(configuration: .init(successThreshold: Connectivity.Percentage(75))).successThreshold
                    == Connectivity.Percentage(75))
        }

        @Test("instance properties: setting them changes the configuration")
        func properties() {
            Connectivity.isHTTPSOnly = true
            let connectivity = Connectivity(configuration: .recommended)
            #expect(connectivity.connectivityURLs == ConnectivityEndpoint.defaults.map(\.url))
            connectivity.successThreshold = Connectivity.Percentage(75.0)
            #expect(connectivity.configuration.successThreshold == 75)
            connectivity.pollingInterval = 0.5
            #expect(connectivity.configuration.pollingInterval == nil, "polling still off")
            connectivity.isPollingEnabled = true
            #expect(connectivity.configuration.pollingInterval == .milliseconds(500))
            connectivity.pollWhileOfflineOnly = true
            #expect(connectivity.configuration.pollWhileOfflineOnly)

            // rwbutler's updateValidator: a mode or a string replaces the validator; .custom keeps it.
            connectivity.validationMode = .equalsExpectedResponseString
            #expect(connectivity.responseValidator is ConnectivityResponseStringEqualityValidator)
            connectivity.validationMode = .matchesRegularExpression
            #expect(connectivity.responseValidator is ConnectivityResponseRegExValidator)
            let validator = ExampleValidator()
            connectivity.responseValidator = validator
            connectivity.validationMode = .custom
            #expect(connectivity.responseValidator === validator)

            // Appending a URL keeps this package's endpoints and their own expectations,
            // plain-HTTP ones included while isHTTPSOnly is set.
            let mine = URL(string: "https://status.example.com/ping")!
            connectivity.connectivityURLs.append(mine)
            let endpoints = connectivity.configuration.endpoints
            #expect(endpoints.map(\.url) == ConnectivityEndpoint.defaults.map(\.url) + [mine])
            #expect(endpoints.first?.expectation.description == "status 204")
            #expect(endpoints.last?.expectation.description == "a custom validator")
            #expect(connectivity.lastError == nil)
            connectivity.framework = .systemConfiguration
            #expect(connectivity.framework == .systemConfiguration)
            connectivity.checkWhenApplicationDidBecomeActive = false
            #expect(!connectivity.checkWhenApplicationDidBecomeActive)
        }

        @Test("settings that can't work don't stop anything: lastError says why; init(validating:) throws")
        func invalidSettings() {
            Connectivity.isHTTPSOnly = true
            let connectivity = Connectivity(configuration: ConnectivityConfiguration())
            connectivity.connectivityURLs = []
            #expect(connectivity.lastError?.code == .invalidConfiguration)
            connectivity.connectivityURLs = [URL(string: "https://example.com/")!]
            #expect(connectivity.lastError == nil)
            connectivity.isPollingEnabled = true
            connectivity.pollingInterval = 0
            #expect(connectivity.lastError?.message.contains("pollingInterval") == true)
            connectivity.pollingInterval = .infinity
            #expect(connectivity.lastError?.message.contains("pollingInterval") == true)
            connectivity.pollingInterval = 0.1
            #expect(connectivity.lastError == nil)
            #expect(throws: ConnectivityError.self) { try Connectivity(validating: .init(endpoints: [])) }
            #expect(Connectivity(configuration: .init(endpoints: [])).lastError?.code == .invalidConfiguration)
        }

        @Test(
            "isHTTPSOnly: true by default; Connectivity(shouldUseHTTPS:) sets it; while set, plain-HTTP URLs are dropped"
        )
        func httpsOnly() {
            defer { Connectivity.isHTTPSOnly = true }
            let secure = Connectivity(shouldUseHTTPS: true)
            #expect(Connectivity.isHTTPSOnly)
            #expect(secure.connectivityURLs == ConnectivityConfiguration.defaultConnectivityURLs)
            secure.connectivityURLs = [URL(string: "http://www.microsoft.com")!, URL(string: "https://www.apple.com")!]
            #expect(secure.connectivityURLs == [URL(string: "https://www.apple.com")!])
            secure.connectivityURLs = [URL(string: "http://www.microsoft.com")!]
            #expect(secure.connectivityURLs.isEmpty)
            #expect(secure.lastError?.code == .invalidConfiguration)

            // A configuration keeps its plain-HTTP URLs, as rwbutler's does; the instance
            // made from it drops them while isHTTPSOnly is set.
            let mixed = ConnectivityConfiguration(connectivityURLs: [
                URL(string: "http://a.example/ok")!, URL(string: "https://b.example/ok")!,
            ])
            #expect(mixed.endpoints.count == 2)
            #expect(Connectivity(configuration: mixed).connectivityURLs == [URL(string: "https://b.example/ok")!])
            // This package's own endpoints are never dropped.
            #expect(
                Connectivity(configuration: .recommended).connectivityURLs == ConnectivityEndpoint.defaults.map(\.url))

            let plain = Connectivity(shouldUseHTTPS: false)
            #expect(!Connectivity.isHTTPSOnly, "Linux has no App Transport Security to turn it back on")
            #expect(plain.connectivityURLs.count == 8 && plain.connectivityURLs.allSatisfy { $0.scheme == "http" })
            #expect(plain.connectivityURLs.contains(URL(string: "http://captive.apple.com/hotspot-detect.html")!))
            #expect(Connectivity(configuration: mixed).connectivityURLs.count == 2)
            Connectivity.isHTTPSOnly = true
            #expect(Connectivity().connectivityURLs.allSatisfy { $0.scheme == "https" })
        }
    }
}

/// Records rwbutler's notification and the core one for one instance, and the callbacks.
private final class RwbutlerLog: Sendable {
    private struct State {
        var statuses: [ConnectivityStatus] = []  // ConnectivityDidChange, read from the object
        var coreNotifications = 0
        /// For each ReachabilityDidChange, how many statuses had been posted before it.
        var reachabilityChanges: [Int] = []
        var connected = 0
        var disconnected = 0
    }
    private let state = NIOLockedValueBox(State())
    private struct Token: @unchecked Sendable { var value: any NSObjectProtocol }
    private let tokens: [Token]
    let connectivity: Connectivity

    init(_ connectivity: Connectivity) {
        self.connectivity = connectivity
        let state = state
        tokens = [
            Token(
                value: NotificationCenter.default.addObserver(
                    forName: .ConnectivityDidChange, object: connectivity, queue: nil
                ) { notification in
                    guard let object = notification.object as? Connectivity else { return }
                    state.withLockedValue { $0.statuses.append(object.status) }
                }),
            Token(
                value: NotificationCenter.default.addObserver(
                    forName: .connectivityDidChange, object: connectivity, queue: nil
                ) { _ in state.withLockedValue { $0.coreNotifications += 1 } }),
            Token(
                value: NotificationCenter.default.addObserver(
                    forName: .ReachabilityDidChange, object: connectivity, queue: nil
                ) { _ in state.withLockedValue { $0.reachabilityChanges.append($0.statuses.count) } }),
        ]
        connectivity.whenConnected = { _ in state.withLockedValue { $0.connected += 1 } }
        connectivity.whenDisconnected = { _ in state.withLockedValue { $0.disconnected += 1 } }
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token.value) }
        connectivity.stopNotifier()
    }

    var statuses: [ConnectivityStatus] { state.withLockedValue { $0.statuses } }
    var coreNotifications: Int { state.withLockedValue { $0.coreNotifications } }
    var reachabilityChanges: [Int] { state.withLockedValue { $0.reachabilityChanges } }
    var callbacks: (connected: Int, disconnected: Int) { state.withLockedValue { ($0.connected, $0.disconnected) } }

    func wait(_ what: String, _ condition: @escaping @Sendable ([ConnectivityStatus]) -> Bool) async throws {
        let state = state
        do {
            try await eventually(what, timeout: .seconds(20)) { condition(state.withLockedValue { $0.statuses }) }
        } catch {
            throw WaitTimedOut(what: "\(what); statuses: \(statuses)", seen: [])
        }
    }
}

extension Connectivity {
    /// rwbutler's one-off check, awaited: the instance its completion handler got.
    fileprivate func checked() async -> Connectivity {
        await withCheckedContinuation { continuation in
            checkConnectivity { connectivity in continuation.resume(returning: connectivity) }
        }
    }
}

extension RwbutlerSuites {
    @Suite(
        "rwbutler/Connectivity against local HTTP servers in test namespaces", .enabled(if: IntegrationGate.enabled),
        .ownThreads)
    struct RwbutlerConnectivityIntegrationTests {
        static let routes: [String: TestHTTPServer.Behaviour] = [
            "/success": .respond(status: 200, headers: ["Content-Type": "text/html"], body: successPage),
            "/failure": .respond(status: 200, headers: ["Content-Type": "text/html"], body: failurePage),
            "/plain": .respond(status: 200, body: "test\n"),
            "/header": .respond(status: 200, headers: ["X-Check": "ok"]),
            "/error": .respond(status: 500, body: "Success"),
        ]

        /// A namespace with a usable path (veth0) and a plain-HTTP server on its
        /// loopback; an instance of rwbutler's configuration (polling every 10 s while
        /// offline) pointed at it, checking `paths`. Turns `Connectivity.isHTTPSOnly` off.
        static func setUp(_ paths: [String]) async throws -> (TestNamespace, TestHTTPServer, Connectivity) {
            Connectivity.isHTTPSOnly = false
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(routes)
            let connectivity = Connectivity(configuration: ConnectivityConfiguration(environment: ns.environment))
            connectivity.connectivityURLs = paths.map(server.url)
            return (ns, server, connectivity)
        }

        @Test("a one-off check passes the instance back, on the callback queue, with its status set")
        func oneOffCheck() async throws {
            Connectivity.isHTTPSOnly = false
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(Self.routes)
            defer { withExtendedLifetime((ns, server)) {} }
            let queue = DispatchQueue(label: "test.rwbutler.callback")
            queue.setSpecific(key: callbackQueueKey, value: "callback")
            let connectivity = Connectivity(
                configuration: ConnectivityConfiguration(
                    callbackQueue: queue, connectivityURLs: [server.url("/success")], pollingIsEnabled: false,
                    environment: ns.environment))
            #expect(connectivity.status == .determining)
            let onQueue = NIOLockedValueBox(false)
            let passed = await withCheckedContinuation { continuation in
                connectivity.checkConnectivity { connectivity in
                    onQueue.withLockedValue { $0 = DispatchQueue.getSpecific(key: callbackQueueKey) == "callback" }
                    continuation.resume(returning: connectivity)
                }
            }
            #expect(passed === connectivity)
            #expect(onQueue.withLockedValue { $0 })
            #expect(connectivity.status == .connectedViaEthernet)
            #expect(connectivity.isConnected && connectivity.isConnectedViaEthernet)
            #expect(connectivity.description == "Ethernet with Internet access")
            #expect(server.count("/success") == 1)
            #expect(!connectivity.isRunning)
        }

        @Test(
            "validation modes judge the URLs' answers: contains, equals, regular expression, custom",
            arguments: [
                (ConnectivityResponseValidationMode.containsExpectedResponseString, "/success", true),
                (.containsExpectedResponseString, "/failure", false),
                (.containsExpectedResponseString, "/error", true),  // rwbutler looks at the body only
                (.equalsExpectedResponseString, "/plain", true),
                (.equalsExpectedResponseString, "/success", false),
                (.matchesRegularExpression, "/success", true),
                (.matchesRegularExpression, "/failure", false),
                (.custom, "/header", true),
                (.custom, "/plain", false),
            ])
        func validationModes(mode: ConnectivityResponseValidationMode, path: String, valid: Bool) async throws {
            let (ns, server, connectivity) = try await Self.setUp([path])
            defer { withExtendedLifetime((ns, server)) {} }
            connectivity.expectedResponseString = mode == .equalsExpectedResponseString ? "test" : "Success"
            connectivity.responseValidator = HeaderValidator()
            connectivity.validationMode = mode
            let status = await connectivity.checked().status
            #expect(status == (valid ? .connectedViaEthernet : .connectedViaEthernetWithoutInternet), "\(mode) \(path)")
        }

        @Test("the success threshold over several URLs: the passed share must reach it")
        func threshold() async throws {
            // Three of four pass: 75 %.
            let (ns, server, connectivity) = try await Self.setUp(["/success", "/success", "/success", "/failure"])
            defer { withExtendedLifetime((ns, server)) {} }
            #expect(await connectivity.checked().isConnected)
            connectivity.successThreshold = Connectivity.Percentage(75.0)
            #expect(await connectivity.checked().isConnected, "75 % ≥ 75 %")
            connectivity.successThreshold = Connectivity.Percentage(80.0)
            #expect(await connectivity.checked().status == .connectedViaEthernetWithoutInternet, "75 % < 80 %")
            connectivity.connectivityURLs = connectivity.connectivityURLs.dropLast()
            connectivity.successThreshold = Connectivity.Percentage(100.0)
            #expect(await connectivity.checked().isConnected, "3 of 3")
        }

        @Test("startNotifier: every status change calls back and posts ConnectivityDidChange, link changes included")
        func notifierOnLinkChange() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/check"])
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/check", .respond(status: 200, body: "Success"))
            connectivity.pollingInterval = 0.2  // Polling while offline (rwbutler's default), faster.
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            #expect(connectivity.isRunning)
            try await log.wait("connected") { $0 == [.connectedViaEthernet] }
            #expect(log.callbacks == (1, 0))
            try await offPool { try ns.ip("link set veth0 down") }
            try await log.wait("not connected") { $0.last == .notConnected }
            #expect(connectivity.status == .notConnected && !connectivity.isConnected)
            // Back, behind a portal: another status that is not connected, so
            // whenDisconnected again (rwbutler calls back on every status change).
            server.set("/check", .respond(status: 200, body: "Please log in"))
            try await offPool { try ns.ip("link set veth0 up") }
            try await offPool { try ns.ip("route add default via 192.0.2.2 dev veth0") }
            try await log.wait("without Internet") { $0.last == .connectedViaEthernetWithoutInternet }
            #expect(log.callbacks == (1, 2))
            server.set("/check", .respond(status: 200, body: "Success"))  // Found by the next poll.
            try await log.wait("connected again") { $0.last == .connectedViaEthernet }
            #expect(
                log.statuses == [
                    .connectedViaEthernet, .notConnected, .connectedViaEthernetWithoutInternet, .connectedViaEthernet,
                ])
            #expect(log.callbacks == (2, 2))
            connectivity.stopNotifier()
            #expect(!connectivity.isRunning)
        }

        @Test("ConnectivityDidChange and the callbacks only for a status change; the core notification for any verdict")
        func onlyOnStatusChange() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/check"])
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/check", .respond(status: 500))
            connectivity.isPollingEnabled = true
            connectivity.pollingInterval = 0.1
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            try await log.wait("without Internet") { $0 == [.connectedViaEthernetWithoutInternet] }
            #expect(connectivity.latestResult?.verdict == .noInternet(.unexpectedResponse))
            // A portal now: another verdict, the same status.
            server.set("/check", .respond(status: 302, headers: ["Location": "http://192.0.2.9/login"]))
            try await eventually("captive portal") {
                if case .captivePortal? = connectivity.latestResult?.verdict { return true }
                return false
            }
            try await eventually("the core notification") { log.coreNotifications == 2 }
            #expect(log.statuses == [.connectedViaEthernetWithoutInternet])
            #expect(log.callbacks == (0, 1))
            server.set("/check", .respond(status: 200, body: "Success"))
            try await log.wait("connected") { $0.last == .connectedViaEthernet }
            #expect(log.callbacks == (1, 1))
        }

        @Test(
            "ReachabilityDidChange: under .systemConfiguration a path change posts it, before the change's status; never under .network"
        )
        func reachabilityDidChange() async throws {
            #expect(Notification.Name.ReachabilityDidChange.rawValue == "kNetworkReachabilityChangedNotification")
            let (ns, server, connectivity) = try await Self.setUp(["/success"])
            defer { withExtendedLifetime((ns, server)) {} }
            connectivity.framework = .systemConfiguration
            connectivity.isPollingEnabled = false
            // The same checks under .network, rwbutler's default: NWPathMonitor there, no such post.
            let network = Connectivity(
                configuration: ConnectivityConfiguration(
                    connectivityURLs: [server.url("/success")], pollingIsEnabled: false, environment: ns.environment))
            let log = RwbutlerLog(connectivity)
            let networkLog = RwbutlerLog(network)
            connectivity.startNotifier()
            network.startNotifier()
            try await log.wait("connected") { $0 == [.connectedViaWiFi] }
            try await networkLog.wait("connected") { $0 == [.connectedViaEthernet] }
            #expect(log.reachabilityChanges.isEmpty, "not for the first path")

            try await offPool { try ns.ip("link set veth0 down") }
            try await log.wait("not connected") { $0.last == .notConnected }
            try await networkLog.wait("not connected") { $0.last == .notConnected }
            #expect(log.reachabilityChanges.first == 1, "posted before the status the change brought")
            let changes = log.reachabilityChanges.count
            try await offPool { try ns.ip("link set veth0 up") }
            try await offPool { try ns.ip("route add default via 192.0.2.2 dev veth0") }
            try await log.wait("connected again") { $0.last == .connectedViaWiFi }
            try await networkLog.wait("connected again") { $0.last == .connectedViaEthernet }
            #expect(log.reachabilityChanges.count > changes)
            #expect(networkLog.reachabilityChanges.isEmpty)
            connectivity.stopNotifier()
            network.stopNotifier()
        }

        /// A second instance polling `/marker` every 0.1 s: its polls measure time in the
        /// unit a polling instance would check in, so that "no check" waits for an event.
        static func startMarker(_ ns: TestNamespace, _ server: TestHTTPServer) -> Connectivity {
            server.set("/marker", .respond(status: 200, body: "Success"))
            let marker = Connectivity(
                configuration: ConnectivityConfiguration(
                    connectivityURLs: [server.url("/marker")], pollingInterval: 0.1, pollWhileOfflineOnly: false,
                    environment: ns.environment))
            marker.startNotifier()
            return marker
        }

        /// Waits until the marker has polled `count` more times.
        static func markerPolls(_ count: Int, _ server: TestHTTPServer) async throws {
            let start = server.count("/marker")
            try await eventually("\(count) polls of the marker") { server.count("/marker") >= start + count }
        }

        @Test("polling: isPollingEnabled checks every pollingInterval while connected; off, it doesn't")
        func polling() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/success"])
            #expect(connectivity.isPollingEnabled && connectivity.pollWhileOfflineOnly)
            defer { withExtendedLifetime((ns, server)) {} }
            let marker = Self.startMarker(ns, server)
            defer { marker.stopNotifier() }
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            try await log.wait("connected") { $0 == [.connectedViaEthernet] }
            try await Self.markerPolls(8, server)
            #expect(server.count("/success") == 1, "polling while offline only: checked at start only")
            // Turned on while running: applies at once.
            connectivity.pollingInterval = 0.1
            connectivity.pollWhileOfflineOnly = false
            try await eventually("polled") { server.count("/success") >= 5 }
            connectivity.isPollingEnabled = false
            try await Self.markerPolls(3, server)  // A check in flight may still land.
            let settled = server.count("/success")
            try await Self.markerPolls(8, server)
            #expect(server.count("/success") == settled, "polling off again")
            #expect(log.statuses == [.connectedViaEthernet], "polls that change nothing notify nothing")
        }

        @Test("pollWhileOfflineOnly: no polling while connected; while not, polling finds the Internet back")
        func pollWhileOfflineOnly() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/check"])
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/check", .respond(status: 200, body: "Success"))
            connectivity.isPollingEnabled = true
            connectivity.pollingInterval = 0.1
            connectivity.pollWhileOfflineOnly = true
            let marker = Self.startMarker(ns, server)
            defer { marker.stopNotifier() }
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            try await log.wait("connected") { $0 == [.connectedViaEthernet] }
            try await Self.markerPolls(8, server)
            #expect(server.count("/check") == 1, "connected: no polling")
            connectivity.stopNotifier()

            server.set("/check", .respond(status: 200, body: "Please log in"))
            let before = server.count("/check")
            connectivity.startNotifier()
            try await log.wait("without Internet") { $0.last == .connectedViaEthernetWithoutInternet }
            // No retry of its own (rwbutler's): only polling checks again.
            try await eventually("polled while offline", timeout: .seconds(10)) { server.count("/check") >= before + 6 }
            server.set("/check", .respond(status: 200, body: "Success"))
            try await log.wait("connected again") { $0.last == .connectedViaEthernet }
        }

        @Test("checkConnectivity while the notifier runs: a check now, the completion after its result")
        func checkWhileRunning() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/check"])
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/check", .respond(status: 200, body: "Success"))
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            try await log.wait("connected") { $0 == [.connectedViaEthernet] }
            let before = server.count("/check")
            server.set("/check", .respond(status: 200, body: "Please log in"))
            let passed = await connectivity.checked()
            #expect(passed === connectivity)
            #expect(server.count("/check") == before + 1)
            // No hysteresis, as rwbutler's: the failed check decides.
            #expect(passed.status == .connectedViaEthernetWithoutInternet)
            #expect(log.statuses == [.connectedViaEthernet, .connectedViaEthernetWithoutInternet])
            #expect(log.callbacks == (1, 1))
        }

        @Test("isConnectedViaWiFi / Cellular, with and without Internet, on (sysfs-presented) Wi-Fi and modem links")
        func interfaceGetters() async throws {
            Connectivity.isHTTPSOnly = false
            for (name, devtype) in [("wlan0", "wlan"), ("wwan0", "wwan")] {
                let (ns, sysfs) = try await offPool {
                    let ns = try TestNamespace()
                    try ns.disableIPv6()
                    try ns.ipv4WithDefaultRoute(name, peer: "peer0")
                    return (ns, try fakeSysfs([name: devtype]))
                }
                defer { try? FileManager.default.removeItem(atPath: sysfs) }
                let server = try TestHTTPServer(in: ns, routes: Self.routes)
                defer { withExtendedLifetime((ns, server)) {} }
                let connectivity = Connectivity(
                    configuration: ConnectivityConfiguration(
                        environment: NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)))
                connectivity.connectivityURLs = [server.url("/success")]
                _ = await connectivity.checked()
                let online = devtype == "wlan" ? connectivity.isConnectedViaWiFi : connectivity.isConnectedViaCellular
                #expect(online, "\(name): \(connectivity.status)")
                #expect(!connectivity.isConnectedViaEthernet)
                connectivity.connectivityURLs = [server.url("/failure")]
                _ = await connectivity.checked()
                if devtype == "wlan" {
                    #expect(connectivity.isConnectedViaWiFiWithoutInternet && !connectivity.isConnectedViaWiFi)
                    #expect(connectivity.description == "Wi-Fi without Internet access")
                    connectivity.connectivityURLs = [server.url("/success")]
                    #expect(await connectivity.checked().isConnectedViaWiFi)
                    #expect(connectivity.status == .connectedViaWiFi && !connectivity.isConnectedViaCellular)
                } else {
                    #expect(connectivity.isConnectedViaCellularWithoutInternet && !connectivity.isConnectedViaCellular)
                    connectivity.connectivityURLs = [server.url("/success")]
                    #expect(await connectivity.checked().isConnectedViaCellular)
                    #expect(connectivity.description == "Cellular with Internet access")
                }
            }
        }

        @Test("startNotifier can't start: notConnected, lastError and whenDisconnected; start() throws the same")
        func failedStart() async throws {
            let connectivity = Connectivity(
                configuration: ConnectivityConfiguration(
                    environment: NetworkEnvironment(networkNamespacePath: "/run/netns/rtest-no-such-namespace")))
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            #expect(!connectivity.isRunning)
            #expect(connectivity.status == .notConnected)
            #expect(connectivity.lastError?.code == .namespace)
            try await log.wait("ConnectivityDidChange") { $0 == [.notConnected] }
            #expect(log.callbacks == (0, 1))
            #expect(throws: ConnectivityError.self) { try connectivity.start() }
            connectivity.stopNotifier()
            #expect(connectivity.status == .determining && connectivity.lastError == nil)
            // The one-off check shows the same failure.
            #expect(await connectivity.checked().status == .notConnected)
            #expect(connectivity.lastError?.code == .namespace)
        }

        @Test("a bearer token goes to the URLs as an Authorization header")
        func bearerToken() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/success"])
            defer { withExtendedLifetime((ns, server)) {} }
            connectivity.bearerToken = "s3cret"
            #expect(await connectivity.checked().isConnected)
            #expect(server.requests.first?.headers["authorization"] == "Bearer s3cret")
        }

        @Test(
            "authorizationHeader (rwbutler 6.0) is the Authorization header's value; it wins over bearerToken, as rwbutler's requests have it"
        )
        func authorizationHeader() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/success"])
            defer { withExtendedLifetime((ns, server)) {} }
            #expect(connectivity.authorizationHeader == nil)
            connectivity.bearerToken = "s3cret"
            connectivity.authorizationHeader = "Basic dXNlcjpwYXNz"
            #expect(connectivity.authorizationHeader == "Basic dXNlcjpwYXNz")
            #expect(await connectivity.checked().isConnected)
            #expect(server.requests.last?.headers["authorization"] == "Basic dXNlcjpwYXNz")
            connectivity.authorizationHeader = nil
            #expect(await connectivity.checked().isConnected)
            #expect(server.requests.last?.headers["authorization"] == "Bearer s3cret")

            // A configuration's (rwbutler's Connectivity(configuration:) copies it to the property).
            let configured = Connectivity(
                configuration: ConnectivityConfiguration(
                    connectivityURLs: [server.url("/success")], environment: ns.environment
                ).configureAuthorizationHeader(with: "Token abc"))
            #expect(configured.authorizationHeader == "Token abc")
            #expect(await configured.checked().isConnected)
            #expect(server.requests.last?.headers["authorization"] == "Token abc")
            #expect(server.requests.count == 3)
        }

        @Test("polling off: after going offline nothing is checked but what the program asks for")
        func noUnaskedCheck() async throws {
            let (ns, server, connectivity) = try await Self.setUp(["/check"])
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/check", .respond(status: 200, body: "Please log in"))
            connectivity.isPollingEnabled = false
            let marker = Self.startMarker(ns, server)
            defer { marker.stopNotifier() }
            let log = RwbutlerLog(connectivity)
            connectivity.startNotifier()
            try await log.wait("without Internet") { $0 == [.connectedViaEthernetWithoutInternet] }
            // .recommended would have retried after 1 s; 30 marker polls are 3 s.
            try await Self.markerPolls(30, server)
            #expect(server.count("/check") == 1, "checked at start only")
            server.set("/check", .respond(status: 200, body: "Success"))
            #expect(await connectivity.checked().status == .connectedViaEthernet, "asked: checked")
            #expect(server.count("/check") == 2)
            // A path change is a reason to check, as on iOS.
            try await offPool { try ns.ip("link set veth0 down") }
            try await log.wait("not connected") { $0.last == .notConnected }
            try await offPool { try ns.ip("link set veth0 up") }
            try await offPool { try ns.ip("route add default via 192.0.2.2 dev veth0") }
            try await log.wait("connected again") { $0.last == .connectedViaEthernet }
            #expect(server.count("/check") == 3)
        }

        @Test(
            "framework: Connectivity() names a wired link Ethernet (.network, rwbutler 8's default); .systemConfiguration Wi-Fi"
        )
        func frameworkNamesTheLink() async throws {
            Connectivity.isHTTPSOnly = false
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(Self.routes)
            defer { withExtendedLifetime((ns, server)) {} }
            // Connectivity()'s settings, in the test namespace (a veth: Ethernet), against the local server.
            let connectivity = Connectivity(shouldUseHTTPS: false)
            connectivity.configuration.environment = ns.environment
            connectivity.connectivityURLs = [server.url("/success")]
            #expect(await connectivity.checked().status == .connectedViaEthernet)
            #expect(connectivity.isConnectedViaEthernet && !connectivity.isConnectedViaWiFi)
            #expect(connectivity.description == "Ethernet with Internet access")
            connectivity.connectivityURLs = [server.url("/failure")]
            #expect(await connectivity.checked().status == .connectedViaEthernetWithoutInternet)
            #expect(
                connectivity.isConnectedViaEthernetWithoutInternet && !connectivity.isConnectedViaWiFiWithoutInternet)

            // SCNetworkReachability's naming: every link that is not cellular is Wi-Fi.
            connectivity.framework = .systemConfiguration
            #expect(await connectivity.checked().status == .connectedViaWiFiWithoutInternet)
            #expect(
                connectivity.isConnectedViaWiFiWithoutInternet && !connectivity.isConnectedViaEthernetWithoutInternet)
            connectivity.connectivityURLs = [server.url("/success")]
            #expect(await connectivity.checked().status == .connectedViaWiFi)
            #expect(connectivity.isConnectedViaWiFi && !connectivity.isConnectedViaEthernet)
            #expect(connectivity.description == "Wi-Fi with Internet access")
        }

        @Test("a custom validator judges this package's own endpoints too")
        func customValidatorJudgesOwnEndpoints() async throws {
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(Self.routes)
            defer { withExtendedLifetime((ns, server)) {} }
            // An endpoint of this package's that passes by its own expectation (status 200)…
            let connectivity = Connectivity(
                configuration: ConnectivityConfiguration(
                    endpoints: [ConnectivityEndpoint(url: server.url("/plain"), expectation: .status(200))],
                    environment: ns.environment))
            #expect(await connectivity.checked().isConnected)
            // …fails once the custom validator (a 200 with `X-Check: ok`) judges it.
            connectivity.responseValidator = HeaderValidator()
            connectivity.validationMode = .custom
            #expect(await connectivity.checked().status == .connectedViaEthernetWithoutInternet)
            connectivity.configuration.endpoints = [
                ConnectivityEndpoint(url: server.url("/header"), expectation: .status(204))
            ]
            #expect(await connectivity.checked().isConnected, "the validator, not the endpoint's 204, decides")
        }
    }
}

/// Marks the queue a test passes, so that a callback can tell it runs there.
private let callbackQueueKey = DispatchSpecificKey<String>()
