/*
 * One runner per suite: `unit SUITE` runs that suite (meson registers one
 * test per suite so failures name the module). Each test runs in its own
 * process (Check's fork mode) with the suite's explicit timeout.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *codec_suite(void);
Suite *strtab_suite(void);
Suite *ring_suite(void);
Suite *writer_suite(void);
Suite *reader_suite(void);
Suite *config_suite(void);
Suite *ownfd_suite(void);

static const struct {
    const char *name;
    Suite *(*make)(void);
} suites[] = {
    {"codec", codec_suite},   {"strtab", strtab_suite}, {"ring", ring_suite},
    {"writer", writer_suite}, {"reader", reader_suite}, {"config", config_suite},
    {"ownfd", ownfd_suite},
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
