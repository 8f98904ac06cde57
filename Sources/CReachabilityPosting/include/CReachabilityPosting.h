// Nothing to call: this target only carries the load-time constructor in posting.c,
// which installs the `Reachability` module's NotificationCenter poster in the core.
#pragma once
