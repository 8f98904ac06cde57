import Connectivity

let connectivity = Connectivity(configuration: .recommended)  // four vendors' endpoints, HTTP and HTTPS
let results = connectivity.updates
try connectivity.start()  // checks now and after every path change
for await result in results {
    switch result.verdict {
    case .online: print("online")
    case .captivePortal(let loginURL): print("captive portal: log in at", loginURL)
    default: print("not online:", result.verdict)  // noInternet(reason), limited, proxyFailed, notConnected
    }
}
