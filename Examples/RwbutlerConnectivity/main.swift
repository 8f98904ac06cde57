// rwbutler/Connectivity's README usage (callbacks, notifications, polling, a one-off
// check, the fluent configuration), compiled with its `import` unchanged. The one
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
