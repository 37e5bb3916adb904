/* `unit_report SUITE`: the decoder's suites (decoder/), one meson test each
 * (runner.h). */
#include "tests/unit/runner.h"

Suite *intervals_suite(void);
Suite *demangle_suite(void);
Suite *extract_suite(void);
Suite *sorting_suite(void);
Suite *job_suite(void);

static const struct th_suite suites[] = {
    {"intervals", intervals_suite},
    {"demangle", demangle_suite},
    {"extract", extract_suite},
    {"sorting", sorting_suite},
    {"job", job_suite},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return th_run_suites(suites, argc, argv);
}
