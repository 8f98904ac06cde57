#ifndef CFUZZDRIVER_H
#define CFUZZDRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int (*cfuzz_test_one_input)(const uint8_t *data, size_t size);

/// Hands over to libFuzzer's driver (`LLVMFuzzerRunDriver`) when the program was
/// linked with -sanitize=fuzzer; returns -1 without calling anything when it was not.
int cfuzz_run_driver(int *argc, char ***argv, cfuzz_test_one_input callback);

#endif
