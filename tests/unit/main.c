/* `unit SUITE`: the core library's suites (src/), one meson test each
 * (runner.h). */
#include "tests/unit/runner.h"

Suite *codec_suite(void);
Suite *strtab_suite(void);
Suite *ring_suite(void);
Suite *writer_suite(void);
Suite *reader_suite(void);
Suite *config_suite(void);
Suite *ownfd_suite(void);
Suite *redact_suite(void);
Suite *salvage_suite(void);

static const struct th_suite suites[] = {
    {"codec", codec_suite},     {"strtab", strtab_suite},
    {"ring", ring_suite},       {"writer", writer_suite},
    {"reader", reader_suite},   {"config", config_suite},
    {"ownfd", ownfd_suite},     {"redact", redact_suite},
    {"salvage", salvage_suite}, {NULL, NULL},
};

int main(int argc, char **argv)
{
    return th_run_suites(suites, argc, argv);
}
