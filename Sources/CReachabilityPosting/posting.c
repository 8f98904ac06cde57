// Installs the `Reachability` module's NotificationCenter poster in ReachabilityCore
// when a program that links the module is loaded, before `main` and before any
// instance can deliver (Sources/ReachabilityCore/Monitor/NotificationPosting.swift).
// Swift has no load-time initializers; a C constructor is the portable way to run
// one, for static and dynamic linking alike. The function is the Swift module's
// `@_cdecl` one (Sources/Reachability/Notifications.swift).
#include "CReachabilityPosting.h"

extern void reachability_install_notification_poster(void);

__attribute__((constructor)) static void reachability_posting_constructor(void) {
    reachability_install_notification_poster();
}
