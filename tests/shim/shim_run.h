/*
 * What the shim suite's files share (test_shim.c: entry points, families,
 * settings; test_shim_gpu.c: GPU timing; test_shim_launch.c: the launch
 * fast path; test_shim_events.c: event records and waits).
 */
#ifndef CT_TESTS_SHIM_RUN_H
#define CT_TESTS_SHIM_RUN_H

#include <check.h>

#include "decoder/read/tracefile.h"
#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

/* Runs argv with preload (NULL: none) and extra env "K=V" entries. */
static inline void run(struct th_run *r, const char *preload, const char *const *extra_env,
                       const char *const *argv)
{
    struct th_run_opts o = {.preload = preload, .env = extra_env};
    th_run(r, &o, argv);
}

static inline const char *S(const struct th_trace *t, uint64_t id)
{
    return ct_reader_string(&t->rd, id);
}

/* Adds the GPU-timing tests (test_shim_gpu.c) to tc. */
void shim_gpu_tests(TCase *tc);
/* Adds the launch fast path's tests (test_shim_launch.c) to tc. */
void shim_launch_tests(TCase *tc);
/* Adds the dependency-edge tests (test_shim_events.c) to tc. */
void shim_events_tests(TCase *tc);

#endif
