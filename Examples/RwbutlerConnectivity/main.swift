// rwbutler/Connectivity's README usage (its defaults, callbacks, notifications,
// polling, a one-off check, the fluent configuration), compiled with its `import`
// unchanged. The one
// Swift 6 change: the closure stored in whenConnected / whenDisconnected is
// `@Sendable` (it is called from another thread).
//
// Run: swift run RwbutlerConnectivityExample
// It fetches public check endpoints, prints the first results and exits (at the
// latest after 20 s).
import Connectivity
import Foundation

func updateConnectionStatus(_ status: Connectivity.Status) {
    switch status {
    case .connected, .connectedViaWiFi, .connectedViaCellular, .connectedViaEthernet:
        print("connected:", status)
    case .connectedViaWiFiWithoutInternet, .connectedViaCellularWithoutInternet, .connectedViaEthernetWithoutInternet:
        print("a link, but no Internet:", status)
    case .notConnected:
        print("not connected")
    case .determining:
        print("determining")
    }
}

let resultSeen = DispatchSemaphore(value: 0)

// Callbacks.
let connectivity: Connectivity = Connectivity()
let connectivityChanged: @Sendable (Connectivity) -> Void = { connectivity in
    updateConnectionStatus(connectivity.status)
    resultSeen.signal()
}
connectivity.whenConnected = connectivityChanged
connectivity.whenDisconnected = connectivityChanged

// Notifications: the object is the Connectivity instance.
let observer = NotificationCenter.default.addObserver(
    forName: Notification.Name.ConnectivityDidChange, object: connectivity, queue: nil
) { notification in
    guard let connectivity = notification.object as? Connectivity else { return }
    print("ConnectivityDidChange:", connectivity.status, "(Wi-Fi: \(connectivity.isConnectedViaWiFi))")
}

// rwbutler's defaults, as on iOS: Apple's two HTTPS pages checked for "Success", a 50 %
// threshold, HTTPS only; polling off for Connectivity() (on, every 10 s while offline,
// for a ConnectivityConfiguration()); framework .network, the link named by its type
// (rwbutler's default since 6.1.0).
print("URLs:", connectivity.connectivityURLs.map(\.absoluteString))
print(
    "threshold:", connectivity.successThreshold, "HTTPS only:", Connectivity.isHTTPSOnly,
    "validation:", connectivity.validationMode, connectivity.expectedResponseString)
print(
    "polling:", connectivity.isPollingEnabled, connectivity.pollingInterval, "s, while offline only:",
    connectivity.pollWhileOfflineOnly, "framework:", connectivity.framework)
let configuration = ConnectivityConfiguration()
print(
    "ConnectivityConfiguration(): polling every", configuration.pollingInterval ?? .zero, "while offline only:",
    configuration.pollWhileOfflineOnly)

// Polling.
connectivity.isPollingEnabled = true
connectivity.pollingInterval = 5
connectivity.startNotifier()

// A one-off check, configured with the fluent interface and the properties.
let oneOff = Connectivity(
    configuration: .init()
        .configurePolling(interval: 5)
        .configureResponseValidation(.containsExpectedResponseString, expected: "Success")
)
oneOff.connectivityURLs = [URL(string: "https://www.apple.com/library/test/success.html")!]
oneOff.successThreshold = Connectivity.Percentage(75.0)
oneOff.validationMode = .containsExpectedResponseString
oneOff.expectedResponseString = "Success"
oneOff.framework = .network
oneOff.checkConnectivity { connectivity in
    switch connectivity.status {
    case .connected, .connectedViaWiFi, .connectedViaCellular, .connectedViaEthernet:
        print("one-off check: connected")
    default:
        print("one-off check:", connectivity.status)
    }
    resultSeen.signal()
}

// Both results (the notifier's first and the one-off check's), or 20 s.
let deadline = DispatchTime.now() + .seconds(20)
let complete = resultSeen.wait(timeout: deadline) == .success && resultSeen.wait(timeout: deadline) == .success
connectivity.stopNotifier()
NotificationCenter.default.removeObserver(observer)
exit(complete ? 0 : 1)
