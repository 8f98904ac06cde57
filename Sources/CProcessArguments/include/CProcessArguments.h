#ifndef C_PROCESS_ARGUMENTS_H
#define C_PROCESS_ARGUMENTS_H

/// The argument vector execve(2) gave this process, as glibc hands it to
/// initialization functions: NULL when the C library gave none (not glibc).
/// Swift's CommandLine.arguments reads /proc/self/cmdline on Linux, which a
/// chroot or a mount namespace may not have, and decodes it as UTF-8 with
/// repairs; this is what the kernel was given, byte for byte.
char *const *cpa_argv(void);

/// The number of entries of cpa_argv() before its NULL (0 for an empty vector,
/// or when there is none).
int cpa_argc(void);

#endif
