#include "CFuzzDriver.h"

// Weak: a plain build (no -sanitize=fuzzer) links without libFuzzer, and the
// target then replays the files it is given instead of fuzzing.
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t))
    __attribute__((weak));

int cfuzz_run_driver(int *argc, char ***argv, cfuzz_test_one_input callback) {
    if (!LLVMFuzzerRunDriver) return -1;
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
