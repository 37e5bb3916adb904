/* The unit executables' shared runner (runner.h). */
#include "tests/unit/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int th_run_suites(const struct th_suite *suites, int argc, char **argv)
{
    SRunner *sr = NULL;
    for (const struct th_suite *s = suites; s->name; s++) {
        if (argc > 1 && strcmp(argv[1], s->name) != 0)
            continue;
        if (!sr)
            sr = srunner_create(s->make());
        else
            srunner_add_suite(sr, s->make());
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
