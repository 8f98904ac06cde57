import Connectivity
import Foundation

final class StatusValidator: ConnectivityResponseValidator {
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        guard let response else { return false }
        return (200..<300).contains(response.status)
    }
}

let connectivity = Connectivity(
    configuration: .init()
        .configurePolling(interval: 5)
        .configureResponseValidation(.containsExpectedResponseString, expected: "Success")
)
connectivity.connectivityURLs = [URL(string: "https://status.example.com/ping")!]
connectivity.successThreshold = Connectivity.Percentage(75.0)

let connectivityChanged: @Sendable (Connectivity) -> Void = { connectivity in
    print(connectivity.status)  // e.g. "Wi-Fi with Internet access"
}
connectivity.whenConnected = connectivityChanged
connectivity.whenDisconnected = connectivityChanged
connectivity.startNotifier()  // deliveries on the library's queue (pass queue: .main to keep rwbutler's)

connectivity.checkConnectivity { connectivity in
    if connectivity.isConnectedViaWiFiWithoutInternet { print("captive portal?") }
}

let other = Connectivity()
other.validationMode = .custom
other.responseValidator = StatusValidator()
dispatchMain()  // A command-line program: keep running, so that the callbacks come.
