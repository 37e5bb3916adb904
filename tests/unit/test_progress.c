/* Suite "progress": progress lines of long commands (decoder/util/progress.c)
 * on a stderr that is not a terminal: whole lines at most every 10 s, never
 * the terminal's \r redraws that fill a log with concatenated updates. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/util/progress.h"
#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

START_TEST(a_log_gets_whole_lines_at_most_every_10_s)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "progress.err");
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    dup2(fileno(f), 2);
    struct ct_progress p;
    ct_progress_start(&p, "cutrace report");
    ck_assert_int_eq(p.tty, 0);
    p.t0 = p.last = ct_now_s() - 5; /* 5 s in: a terminal would be redrawn by now */
    ct_progress_update(&p, "decoded", 1, 10, -1);
    p.t0 = p.last = ct_now_s() - 11; /* 11 s since the last line: one more */
    ct_progress_update(&p, "decoded", 2, 10, -1);
    ct_progress_update(&p, "decoded", 3, 10, -1); /* at once after it: none */
    ct_progress_end(&p);                          /* the phase's end: not "done" */
    ct_progress_phase(p.cmd, "analysing");        /* the next phase, named */
    ct_progress_finish(p.cmd);                    /* the command's end */
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    char *out = th_slurp(path);
    ck_assert_ptr_null(strchr(out, '\r'));
    const char *want = "cutrace report: decoded 2/10\ncutrace report: decoded 10/10 in ";
    ck_assert_msg(!strncmp(out, want, strlen(want)), "%s", out);
    const char *then = "s\ncutrace report: analysing ...\ncutrace report: done in ";
    ck_assert_msg(strstr(out, then) != NULL, "%s", out);
    ck_assert_int_eq(out[strlen(out) - 1], '\n');
    free(out);
}
END_TEST

Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_log_gets_whole_lines_at_most_every_10_s);
    suite_add_tcase(s, tc);
    return s;
}
