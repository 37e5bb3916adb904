/* Suite "config": CUTRACE_* validation names the variable and the range. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/config.h"

static const char *const *g_env;

static const char *fake_getenv(const char *name)
{
    for (const char *const *e = g_env; e && *e; e += 2)
        if (!strcmp(e[0], name))
            return e[1];
    return NULL;
}

START_TEST(defaults_when_unset)
{
    struct ct_config c;
    char err[256] = "";
    ct_config_defaults(&c);
    g_env = NULL;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.buffer_kb, 1024);
    ck_assert_int_eq(c.zstd_level, 3);
    ck_assert_uint_eq(c.flush_ms, 100);
    ck_assert_str_eq(c.output, ".");
    ck_assert_int_eq(c.gpu_timing, 1); /* cupti */
    ck_assert_uint_eq(c.io_stack_ns, 1000000);
    ck_assert_uint_eq(c.health_ms, 100);
    ck_assert_uint_eq(c.gpm_ms, CT_GPM_MS_DEFAULT);
    ck_assert_uint_eq(c.pm_sampling_us, 0); /* opt-in */
}
END_TEST

START_TEST(valid_values_are_taken)
{
    static const char *const env[] = {"CUTRACE_BUFFER_KB",
                                      "256",
                                      "CUTRACE_ZSTD_LEVEL",
                                      "-1",
                                      "CUTRACE_FLUSH_MS",
                                      "20",
                                      "CUTRACE_OUTPUT",
                                      "/tmp/x",
                                      "CUTRACE_CLOCK",
                                      "monotonic",
                                      "CUTRACE_IO_STACK_NS",
                                      "0",
                                      "CUTRACE_TAGS",
                                      "host_class=a,exp.id=7,empty=,note=x y",
                                      "CUTRACE_HEALTH_MS",
                                      "0",
                                      "CUTRACE_GPM_MS",
                                      "250",
                                      "CUTRACE_PM_SAMPLING_US",
                                      "1000",
                                      NULL};
    struct ct_config c;
    char err[256] = "";
    ct_config_defaults(&c);
    g_env = env;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.buffer_kb, 256);
    ck_assert_int_eq(c.zstd_level, -1);
    ck_assert_uint_eq(c.flush_ms, 20);
    ck_assert_str_eq(c.output, "/tmp/x");
    ck_assert_int_eq(c.clock, CT_CLOCK_PREF_MONOTONIC);
    ck_assert_uint_eq(c.io_stack_ns, 0);
    ck_assert_uint_eq(c.health_ms, 0);
    ck_assert_uint_eq(c.gpm_ms, 250);
    ck_assert_uint_eq(c.pm_sampling_us, 1000);
}
END_TEST

START_TEST(bad_values_name_the_variable_and_the_allowed_values)
{
    static const char *const cases[][3] = {
        {"CUTRACE_BUFFER_KB", "12x", "CUTRACE_BUFFER_KB=12x: expected an integer from 64 to"},
        {"CUTRACE_BUFFER_KB", "1", "CUTRACE_BUFFER_KB=1: expected an integer from 64"},
        {"CUTRACE_ZSTD_LEVEL", "99", "CUTRACE_ZSTD_LEVEL=99: expected an integer from -7 to 19"},
        {"CUTRACE_FLUSH_MS", "0", "CUTRACE_FLUSH_MS=0: expected an integer from 1 to 60000"},
        {"CUTRACE_CLOCK", "rdtsc", "CUTRACE_CLOCK=rdtsc: expected auto, tsc or monotonic"},
        {"CUTRACE_OUTPUT", "", "CUTRACE_OUTPUT=: expected a directory path"},
        {"CUTRACE_IO_STACK_NS", "-5", "CUTRACE_IO_STACK_NS=-5: expected an integer from 0 to"},
        {"CUTRACE_TAGS", "a=1,b", "CUTRACE_TAGS=a=1,b: tag 'b': expected KEY=VALUE"},
        {"CUTRACE_TAGS", "k y=1", "CUTRACE_TAGS=k y=1: tag 'k y=1': expected KEY=VALUE"},
        {"CUTRACE_TAGS", "=v", "CUTRACE_TAGS==v: tag '=v': expected KEY=VALUE"},
        {"CUTRACE_GPU_TIMING", "nsight",
         "CUTRACE_GPU_TIMING=nsight: expected cupti, events or off"},
        {"CUTRACE_HEALTH_MS", "5",
         "CUTRACE_HEALTH_MS=5: expected 0 (off) or a sampling period from 10 to 60000 ms"},
        {"CUTRACE_HEALTH_MS", "fast", "CUTRACE_HEALTH_MS=fast: expected 0 (off) or a sampling"},
        {"CUTRACE_GPM_MS", "50",
         "CUTRACE_GPM_MS=50: expected 0 (off) or a GPM sampling period from 100 to 60000 ms"},
        {"CUTRACE_GPM_MS", "1e3", "CUTRACE_GPM_MS=1e3: expected 0 (off) or a GPM sampling"},
        {"CUTRACE_GPM_MS", "60001", "CUTRACE_GPM_MS=60001: expected 0 (off) or a GPM sampling"},
        {"CUTRACE_PM_SAMPLING_US", "5",
         "CUTRACE_PM_SAMPLING_US=5: expected 0 (off) or a CUPTI PM sampling interval from 10 to "
         "100000 us"},
        {"CUTRACE_PM_SAMPLING_US", "100001", "CUTRACE_PM_SAMPLING_US=100001: expected 0 (off)"},
        {"CUTRACE_PM_SAMPLING_US", "1ms", "CUTRACE_PM_SAMPLING_US=1ms: expected 0 (off)"},
        {"CUTRACE_MODE", "sampled", "CUTRACE_MODE=sampled: expected full or light"},
        {"CUTRACE_LIGHT_WINDOW_MS", "5", "CUTRACE_LIGHT_WINDOW_MS=5: expected an integer from 10"},
        /* the per-kernel sampling of old is refused, not silently ignored */
        {"CUTRACE_SAMPLE", "10",
         "CUTRACE_SAMPLE is no longer read: light mode records complete windows "
         "(CUTRACE_LIGHT_WINDOW_MS of every CUTRACE_LIGHT_PERIOD_MS); unset it"},
        {"CUTRACE_LIGHT_COPY_MIN", "0", "CUTRACE_LIGHT_COPY_MIN is no longer read"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[] = {cases[i][0], cases[i][1], NULL};
        struct ct_config c;
        char err[256] = "";
        ct_config_defaults(&c);
        g_env = env;
        ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), -EINVAL);
        ck_assert_msg(strncmp(err, cases[i][2], strlen(cases[i][2])) == 0, "got '%s'", err);
    }
}
END_TEST

/* Light mode's duty cycle: 3 s of every minute unless told; a window as
 * long as its period is full mode and is refused with both values named. */
START_TEST(light_mode_windows_are_shorter_than_their_period)
{
    static const char *const ok[] = {"CUTRACE_MODE", "light", NULL};
    static const char *const set[] = {
        "CUTRACE_MODE", "light", "CUTRACE_LIGHT_WINDOW_MS", "200", "CUTRACE_LIGHT_PERIOD_MS",
        "500",          NULL};
    static const char *const bad[] = {
        "CUTRACE_MODE", "light", "CUTRACE_LIGHT_WINDOW_MS", "1000", "CUTRACE_LIGHT_PERIOD_MS",
        "1000",         NULL};
    struct ct_config c;
    char err[256] = "";
    ct_config_defaults(&c);
    g_env = ok;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
    ck_assert_int_eq(c.light, 1);
    ck_assert_uint_eq(c.light_window_ms, 3000);
    ck_assert_uint_eq(c.light_period_ms, 60000);
    ct_config_defaults(&c);
    g_env = set;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.light_window_ms, 200);
    ck_assert_uint_eq(c.light_period_ms, 500);
    ct_config_defaults(&c);
    g_env = bad;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "CUTRACE_LIGHT_WINDOW_MS=1000, CUTRACE_LIGHT_PERIOD_MS=1000: expected a "
                          "window shorter than its period (for recording throughout, use "
                          "CUTRACE_MODE=full)");
}
END_TEST

/* Raw NCCL proxy steps: off by default, on, a budget; a bad value turns
 * only them off and says why (the recording goes on: `cutrace run`
 * refuses it from nccl_steps_err). */
START_TEST(nccl_steps_take_off_on_or_a_budget_and_a_bad_value_is_a_reason_not_an_error)
{
    static const struct {
        const char *value;
        uint64_t budget;
    } good[] = {
        {"off", 0}, {"0", 0}, {"on", CT_NCCL_STEPS_ON}, {"1", 1}, {"100000000", CT_NCCL_STEPS_MAX}};
    static const char *const bad[] = {"lots", "-1", "100000001", "", "1e6"};
    struct ct_config c;
    char err[256] = "";
    ct_config_defaults(&c);
    g_env = NULL;
    ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.nccl_steps, 0);
    ck_assert_str_eq(c.nccl_steps_err, "");
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *env[] = {"CUTRACE_NCCL_STEPS", good[i].value, NULL};
        ct_config_defaults(&c);
        g_env = env;
        ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.nccl_steps, good[i].budget);
        ck_assert_str_eq(c.nccl_steps_err, "");
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *env[] = {"CUTRACE_NCCL_STEPS", bad[i], NULL};
        char want[256];
        snprintf(want, sizeof(want),
                 "CUTRACE_NCCL_STEPS=%s: expected off (0), on (1000000 steps) or a number of raw "
                 "proxy steps a process records, from 1 to 100000000",
                 bad[i]);
        ct_config_defaults(&c);
        g_env = env;
        ck_assert_int_eq(ct_config_from_env(&c, fake_getenv, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.nccl_steps, 0);
        ck_assert_str_eq(c.nccl_steps_err, want);
    }
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, defaults_when_unset);
    tcase_add_test(tc, valid_values_are_taken);
    tcase_add_test(tc, bad_values_name_the_variable_and_the_allowed_values);
    tcase_add_test(tc, light_mode_windows_are_shorter_than_their_period);
    tcase_add_test(tc, nccl_steps_take_off_on_or_a_budget_and_a_bad_value_is_a_reason_not_an_error);
    suite_add_tcase(s, tc);
    return s;
}
