/*
 * The one Check runner of the unit executables (`unit`: the core library's
 * suites, `unit_report`: the decoder's): `EXE SUITE` runs that suite, so
 * meson registers one test per suite and a failure names the module; with
 * no argument every suite of the table runs. Each test runs in its own
 * process (Check's fork mode) under its suite's explicit timeout.
 */
#ifndef CT_TEST_RUNNER_H
#define CT_TEST_RUNNER_H

#include <check.h>

struct th_suite {
    const char *name;
    Suite *(*make)(void);
};

/* Runs the suite of `suites` (terminated by a {NULL, NULL} entry) named by
 * argv[1], or all of them without an argument. Returns the process's exit
 * status: EXIT_SUCCESS when every test passed, EXIT_FAILURE when one
 * failed, 2 for an unknown suite name (with a message on stderr). */
int th_run_suites(const struct th_suite *suites, int argc, char **argv);

#endif
