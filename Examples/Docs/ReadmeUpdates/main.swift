import Reachability

let localhost = try Reachability(hostname: "localhost")  // resolved on the library's threads
let updates = localhost.updates
try localhost.startNotifier()
for await state in updates {
    print(state.status, state.flags, state.interface?.name ?? "-")
    if state.status != .notReachable { break }
}
localhost.stopNotifier()
