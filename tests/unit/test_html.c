/* Suite "html": the HTML page's timeline rows (ct_html_timeline,
 * decoder/export/html_timeline.c) on a hand-built rank: every interval
 * written while the rank is under the limit; past it, bins whose busy
 * times are the row's exact union, summing to its busy time, and the
 * slowest step's window written again. Times in µs (ns in the output,
 * since the job's time zero: the first GPU start, 100 µs here). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/html_int.h"
#include "decoder/read/job.h"
#include "tests/unit/timeline_builder.h"

/*
 * One rank (µs):
 *   stream 3  k0 [100,200)  k1 [150,300) (overlaps k0)  k2 [1100,1300)
 *   stream 5  memcpy [250,260)
 *   host      sync wait [300,1100)
 * Stream 3's union: [100,300) + [1100,1300) = 400 µs; its span 100..1300.
 */
static void one_rank(struct ct_job *job, struct ct_report *rep)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k0", 3, 100, 200, 90);
    tb_kernel(p, "k1", 3, 150, 300, 95);
    tb_copy(p, 5, 250, 260, 240);
    tb_kernel(p, "k2", 3, 1100, 1300, 1090);
    tb_sync(p, 300, 1100);
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

/* The rows ct_html_timeline writes, as one string (malloc'ed). */
static char *rows(const struct ct_report *rep, size_t limit, int64_t zlo, int64_t zhi)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ct_html_timeline(f, rep, 0, limit, zlo, zhi), 0);
    ck_assert_int_eq(fclose(f), 0);
    return s;
}

/* The integer after `key` at or after p (NULL: not found). */
static const char *num(const char *p, const char *key, long long *v)
{
    p = strstr(p, key);
    if (p)
        *v = strtoll(p + strlen(key), NULL, 10);
    return p;
}

START_TEST(under_the_limit_every_interval_is_written)
{
    struct ct_job job;
    struct ct_report rep;
    one_rank(&job, &rep);
    char *s = rows(&rep, 100, 1, 0);
    /* stream 3: its three kernels as [s, e, class, name index] (names
     * k0, k1, the copy's, k2), union 400 µs */
    ck_assert_ptr_nonnull(
        strstr(s, "{\"k\":\"gpu\",\"label\":\"GPU stream 3\",\"stream\":3,\"c\":0,\"n\":3,\"lo\":0,"
                  "\"hi\":1200000,\"busy\":400000,\"raw\":[0,100000,0,0,50000,200000,0,1,1000000,"
                  "1200000,0,3]}"));
    /* the copy (class memory: 1) and the sync wait (a host row: -1) */
    ck_assert_ptr_nonnull(strstr(s, "\"stream\":5,\"c\":1,\"n\":1,\"lo\":150000,\"hi\":160000,"
                                    "\"busy\":10000,\"raw\":[150000,160000,1,"));
    ck_assert_ptr_nonnull(strstr(s, "{\"k\":\"sync\",\"label\":\"host sync wait\",\"stream\":null,"
                                    "\"c\":-1,\"n\":1,\"lo\":200000,\"hi\":1000000,\"busy\":"
                                    "800000,\"raw\":[200000,1000000,-1,0]}"));
    /* all there: no second copy for the zoom */
    ck_assert_ptr_nonnull(strstr(s, "],\"zoom\":null"));
    ck_assert_ptr_null(strstr(s, "\"bins\""));
    free(s);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(past_the_limit_bins_hold_the_exact_union)
{
    struct ct_job job;
    struct ct_report rep;
    one_rank(&job, &rep);
    /* 5 intervals, limit 4: binned over the rank's span 0..1.2 ms, 2000
     * bins of 600 ns */
    char *s = rows(&rep, 4, 1, 0);
    ck_assert_ptr_null(strstr(s, "\"raw\""));
    const char *p = strstr(s, "\"label\":\"GPU stream 3\"");
    ck_assert_ptr_nonnull(p);
    long long busy, b0, bw;
    ck_assert_ptr_nonnull(num(p, "\"busy\":", &busy));
    ck_assert_ptr_nonnull(num(p, "\"b0\":", &b0));
    ck_assert_ptr_nonnull(num(p, "\"bw\":", &bw));
    ck_assert_int_eq(busy, 400000);
    ck_assert_int_eq(b0, 0);
    ck_assert_int_eq(bw, 600);
    /* [b, busy, class] triples, all compute: the bins of [0, 200 µs) and
     * [1000, 1200 µs), full (600 ns) but for the two that straddle 200 µs
     * and 1000 µs (bins 333 and 1666: 200 ns each), none between; they
     * sum to the union */
    p = strstr(p, "\"bins\":[") + 8;
    long long total = 0, nb = 0;
    while (*p != ']') {
        char *e;
        long long b = strtoll(p, &e, 10), v = strtoll(e + 1, &e, 10), c = strtoll(e + 1, &e, 10);
        ck_assert(b <= 333 || (b >= 1666 && b < 2000));
        ck_assert_int_eq(v, b == 333 || b == 1666 ? 200 : 600);
        ck_assert_int_eq(c, 0);
        total += v;
        nb++;
        p = *e == ',' ? e + 1 : e;
    }
    ck_assert_int_eq(total, busy);
    ck_assert_int_eq(nb, 334 + 334);
    free(s);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(a_binned_rank_keeps_the_slowest_step_interval_by_interval)
{
    struct ct_job job;
    struct ct_report rep;
    one_rank(&job, &rep);
    /* the "step" [1000, 1200 µs) after time zero: only k2 overlaps it */
    char *s = rows(&rep, 4, 1000000, 1200000);
    const char *z = strstr(s, ",\"zoom\":{\"lo\":1000000,\"hi\":1200000,\"rows\":[");
    ck_assert_ptr_nonnull(z);
    ck_assert_ptr_nonnull(strstr(z, "\"stream\":3,\"c\":0,\"n\":1,\"lo\":1000000,\"hi\":1200000,"
                                    "\"busy\":200000,\"raw\":[1000000,1200000,0,3]}"));
    /* the rows keep their order and places: the copy's row is empty there;
     * the sync wait ends at the window's start (an edge counts) */
    ck_assert_ptr_nonnull(strstr(z, "\"stream\":5,\"c\":0,\"n\":0,\"lo\":0,\"hi\":0,\"busy\":0,"
                                    "\"raw\":[]}"));
    ck_assert_ptr_nonnull(strstr(z, "\"k\":\"sync\",\"label\":\"host sync wait\",\"stream\":null,"
                                    "\"c\":-1,\"n\":1,\"lo\":1000000,\"hi\":1000000,\"busy\":0,"));
    free(s);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *html_suite(void)
{
    Suite *s = suite_create("html");
    TCase *tc = tcase_create("html");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, under_the_limit_every_interval_is_written);
    tcase_add_test(tc, past_the_limit_bins_hold_the_exact_union);
    tcase_add_test(tc, a_binned_rank_keeps_the_slowest_step_interval_by_interval);
    suite_add_tcase(s, tc);
    return s;
}
