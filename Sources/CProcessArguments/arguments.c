#include "CProcessArguments.h"
#include <features.h>
#include <stddef.h>

static int saved_argc;
static char *const *saved_argv;

#if defined(__GLIBC__)
// glibc calls each .init_array function with (argc, argv, envp), before main.
static void capture(int argc, char **argv, char **envp) {
    (void)envp;
    saved_argc = argc;
    saved_argv = argv;
}
__attribute__((section(".init_array"), used)) static void (*const capture_entry)(int, char **, char **) = capture;
#endif

char *const *cpa_argv(void) { return saved_argv; }

int cpa_argc(void) { return saved_argv ? saved_argc : 0; }
