import Foundation
import Reachability
import Testing

@testable import Connectivity
@_spi(Testing) @testable import ReachabilityCore

/// ConnectivityError's codes and messages: configuration errors read as
/// before; a check that can't run says why, with the errno.
@Suite struct ConnectivityErrorTests {
    @Test("configuration errors keep their code and message")
    func configuration() {
        let error = #expect(throws: ConnectivityError.self) { try Connectivity(validating: .init(endpoints: [])) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.errno == nil)
        #expect(error?.description == "invalid connectivity configuration: no endpoints to check: the list is empty")
    }

    @Test("a system failure reads 'cannot check connectivity', with the errno's text and number")
    func systemCall() {
        let error = ConnectivityError(.systemCall, "no descriptors left for the HTTP client", errno: EMFILE)
        #expect(error.code == .systemCall && error.code.description == "systemCall")
        #expect(
            error.description
                == "cannot check connectivity: no descriptors left for the HTTP client: Too many open files (errno 24)")
        #expect(ConnectivityError(.namespace, "gone").description == "cannot check connectivity: gone")
    }

    @Test(
        "the path monitor's errors map to codes; out of descriptors is systemCall even entering a namespace",
        arguments: [
            (ReachabilityError(.namespace, "cannot enter network namespace /x", errno: EMFILE), "systemCall"),
            (ReachabilityError(.namespace, "cannot enter network namespace /x", errno: EPERM), "namespace"),
            (ReachabilityError(.namespace, "network namespace path \"/x\" does not exist"), "namespace"),
            (ReachabilityError(.systemCall, "opening a NETLINK_ROUTE socket failed", errno: ENFILE), "systemCall"),
            (ReachabilityError(.timedOut, "the kernel did not answer"), "systemCall"),
            (ReachabilityError(.invalidArgument, "sysfs root \"\" is empty"), "invalidConfiguration"),
        ])
    func mapping(reachability: ReachabilityError, code: String) {
        let error = ConnectivityError(reachability, while: "the path monitor can't start")
        #expect(error.code.description == code)
        #expect(error.errno == reachability.errno)
        #expect(error.message == "the path monitor can't start: \(reachability.message)")
    }
}
