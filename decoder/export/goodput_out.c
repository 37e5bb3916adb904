/*
 * `cutrace goodput`'s text and JSON (docs/goodput.md). Times in µs in JSON
 * (attempts' start and end from the job's first process start, t0_unix_us),
 * seconds in text.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decoder/analysis/goodput.h"
#include "decoder/export/goodput_out.h"
#include "decoder/util/json.h"

static double us(double ns)
{
    return ns / 1000.0;
}

/* known 0: nothing measured (no attempt), every part null */
static void parts_json(FILE *f, const double *part, int known)
{
    for (int p = 0; p < CT_GP_NPARTS; p++) {
        char key[48];
        snprintf(key, sizeof(key), "%s_us", ct_gp_part_name(p));
        fputc(p ? ',' : '{', f);
        ct_json_member(f, key, known ? us(part[p]) : NAN, 3);
    }
}

static void attempt_json(FILE *f, const struct ct_goodput *g, size_t a)
{
    const struct ct_attempt *A = &g->att[a];
    double span = (double)(A->e - A->s);
    fprintf(f, "{\"index\":%zu,\"restart_count\":", a);
    if (A->restart >= 0)
        fprintf(f, "%" PRId64, A->restart);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "start_us", us((double)(A->s - g->s)), 3);
    fputc(',', f);
    ct_json_member(f, "end_us", us((double)(A->e - g->s)), 3);
    fprintf(f, ",\"ended\":\"%s\",\"signal\":", ct_ended_name(A->ended));
    if (A->signal)
        fprintf(f, "%d", A->signal);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "end_uncertainty_us", us((double)A->end_uncertainty), 3);
    fprintf(f, ",\"ranks\":%zu,\"processes\":%zu,", A->ranks, A->procs);
    for (int p = 0; p < CT_GP_NPARTS; p++) {
        char key[48];
        snprintf(key, sizeof(key), "%s_us", ct_gp_part_name(p));
        ct_json_member(f, key, us(A->part[p]), 3);
        fputc(',', f);
    }
    ct_json_member(f, "covered_us", us(A->covered), 3);
    fputc(',', f);
    ct_json_member(f, "uncovered_us", us(span - A->covered), 3);
    fputc(',', f);
    /* over the time the traces cover (null: no step in the job, or none covered) */
    ct_json_member(f, "goodput_pct",
                   A->covered > 0 ? 100.0 * A->part[CT_GP_PRODUCTIVE] / A->covered : NAN, 2);
    fputs(",\"lost_steps\":[", f);
    for (size_t i = 0; i < A->nlost; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", A->lost_steps[i]);
    fputs("],\"lost_rule\":", f);
    if (A->lost_rule)
        ct_json_str(f, ct_lost_rule_name(A->lost_rule));
    else
        fputs("null", f);
    fprintf(f, ",\"steps\":%zu,\"first_step\":", A->steps);
    if (A->first_step >= 0)
        fprintf(f, "%" PRId64 ",\"last_step\":%" PRId64, A->first_step, A->last_step);
    else
        fputs("null,\"last_step\":null", f);
    fputc(',', f);
    ct_json_member(f, "hang_since_us",
                   A->hang_since != INT64_MIN ? us((double)(A->hang_since - g->s)) : NAN, 3);
    /* the trace files by name (job-host-rank-pid-generation: unique in a
     * job), not path: a report from summaries made elsewhere is the same */
    fputs(",\"traces\":[", f);
    for (size_t i = 0; i < A->procs; i++) {
        const char *slash = A->traces[i] ? strrchr(A->traces[i], '/') : NULL;
        if (i)
            fputc(',', f);
        ct_json_str(f, slash ? slash + 1 : A->traces[i] ? A->traces[i] : "");
    }
    fputs("]}", f);
}

void ct_goodput_json(FILE *f, const struct ct_goodput *g)
{
    double total = (double)(g->e - g->s);
    fprintf(f, "{\"schema\":\"cutrace.goodput\",\"version\":%d,\"cutrace_version\":\"%s\",\"job\":",
            CT_GOODPUT_SCHEMA_VERSION, CT_VERSION);
    if (g->job)
        ct_json_str(f, g->job);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "t0_unix_us", g->natt ? us((double)g->s) : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "total_us", g->natt ? us(total) : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "covered_us", g->natt ? us(g->covered) : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "uncovered_us", g->natt ? us(total - g->covered) : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "goodput_pct", g->goodput_pct, 2);
    fputc(',', f);
    ct_json_member(f, "productive_us", g->natt ? us(g->part[CT_GP_PRODUCTIVE]) : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "downtime_us", g->natt ? us(g->downtime) : NAN, 3);
    /* nothing to measure: the figures are null, and this says why */
    fputs(",\"unavailable\":", f);
    if (g->unavailable)
        ct_json_str(f, g->unavailable);
    else
        fputs("null", f);
    fprintf(f, ",\"processes_without_start\":%zu,\"parts\":", g->no_start);
    parts_json(f, g->part, g->natt > 0);
    fputc(',', f);
    ct_json_member(f, "downtime_us", g->natt ? us(g->downtime) : NAN, 3);
    fputs("},\"attempts\":[", f);
    for (size_t a = 0; a < g->natt; a++) {
        if (a)
            fputc(',', f);
        attempt_json(f, g, a);
    }
    fputs("]}", f);
}

/* Each part with its share of the covered time ("-" where unknown: no
 * step found), then the uncovered time, which no part holds. */
static void parts_text(FILE *f, const double *part, double covered, double span, const char *indent)
{
    for (int p = 0; p < CT_GP_NPARTS; p++) {
        if (isnan(part[p]))
            fprintf(f, "%s%-13s %10s s  %5s %%\n", indent, ct_gp_part_name(p), "-", "-");
        else if (part[p] > 0 || p == CT_GP_PRODUCTIVE)
            fprintf(f, "%s%-13s %10.3f s  %5.1f %%\n", indent, ct_gp_part_name(p), part[p] / 1e9,
                    covered > 0 ? 100.0 * part[p] / covered : 0.0);
    }
    if (span - covered > 0)
        fprintf(f, "%s%-13s %10.3f s  (not recorded, or a window's edge: no part)\n", indent,
                "uncovered", (span - covered) / 1e9);
}

void ct_goodput_text(FILE *f, const struct ct_goodput *g)
{
    double total = (double)(g->e - g->s);
    if (!g->natt) {
        fprintf(f, "goodput: no rank process with a timed record: nothing to measure\n");
        return;
    }
    char pct[32] = "-";
    if (!isnan(g->goodput_pct))
        snprintf(pct, sizeof(pct), "%.1f", g->goodput_pct);
    fprintf(f,
            "goodput of job %s: %s %% of the %.3f s the traces cover, of %.3f s (first process "
            "start to last process end)\n",
            g->job ? g->job : "(no job id recorded)", pct, g->covered / 1e9, total / 1e9);
    if (g->unavailable)
        fprintf(f, "  goodput: - (%s)\n", g->unavailable);
    parts_text(f, g->part, g->covered, total, "  ");
    if (g->natt > 1)
        fprintf(f, "  %-13s %10.3f s  %5.1f %%\n", "downtime", g->downtime / 1e9,
                g->covered > 0 ? 100.0 * g->downtime / g->covered : 0.0);
    for (size_t a = 0; a < g->natt; a++) {
        const struct ct_attempt *A = &g->att[a];
        fprintf(f, "\nattempt %zu", a);
        if (A->restart >= 0)
            fprintf(f, " (restart count %" PRId64 ")", A->restart);
        fprintf(f, ": %.3f-%.3f s, %zu ranks, %zu processes, ended: %s",
                (double)(A->s - g->s) / 1e9, (double)(A->e - g->s) / 1e9, A->ranks, A->procs,
                ct_ended_name(A->ended));
        if (A->signal)
            fprintf(f, " (signal %d)", A->signal);
        if (A->end_uncertainty)
            fprintf(f, " (a trace cut short: the end may lie up to %.0f ms after its last record)",
                    (double)A->end_uncertainty / 1e6);
        fputc('\n', f);
        parts_text(f, A->part, A->covered, (double)(A->e - A->s), "  ");
        if (A->first_step >= 0)
            fprintf(f, "  productive steps: %zu (%" PRId64 "-%" PRId64 ")\n", A->steps,
                    A->first_step, A->last_step);
        if (A->nlost) {
            fprintf(f, "  lost steps:");
            for (size_t i = 0; i < A->nlost; i++)
                fprintf(f, " %" PRId64, A->lost_steps[i]);
            fprintf(f, " (%s)\n", ct_lost_rule_name(A->lost_rule));
        }
        if (A->hang_since != INT64_MIN)
            fprintf(f, "  hung from %.3f s\n", (double)(A->hang_since - g->s) / 1e9);
    }
    if (g->no_start)
        fprintf(f,
                "\nnote: %zu processes recorded no start time (traces of an older cutrace, "
                "PyTorch profiler traces): their first record stands for it\n",
                g->no_start);
}
