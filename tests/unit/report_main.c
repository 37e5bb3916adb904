/*
 * Runner for the decoder's report suites (intervals, iterations, metrics,
 * ...): `unit_report SUITE`. Same rules as main.c: one meson test per suite,
 * each test in its own process with an explicit timeout.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *intervals_suite(void);
Suite *demangle_suite(void);
Suite *extract_suite(void);
Suite *sorting_suite(void);
Suite *job_suite(void);

static const struct {
    const char *name;
    Suite *(*make)(void);
} suites[] = {
    {"intervals", intervals_suite}, {"demangle", demangle_suite}, {"extract", extract_suite},
    {"sorting", sorting_suite},     {"job", job_suite},
};

int main(int argc, char **argv)
{
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
        if (argc > 1 && strcmp(argv[1], suites[i].name) != 0)
            continue;
        if (!sr)
            sr = srunner_create(suites[i].make());
        else
            srunner_add_suite(sr, suites[i].make());
    }
    if (!sr) {
        fprintf(stderr, "unknown suite %s\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
