/* `cutrace info`: what a trace holds and whether it is whole. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/load/load.h"
#include "decoder/util/names.h"
#include "decoder/read/tracefile.h"
#include "src/config.h"

/* How the process ended, when a signal did it: the shim's handler records
 * the signal (process metadata "signal") before it finishes the trace, or,
 * when the job handles the signal itself, before it hands over. NULL for
 * an exit (or a SIGKILL: no handler runs). */
static const char *ended_by(const struct ct_trace *t, char *buf, size_t n)
{
    const char *v = ct_trace_meta(t, "signal");
    long long sig;
    if (!v || ct_parse_int(v, 1, 64, &sig) != 0)
        return NULL;
    return ct_name_signal((long)sig, buf, n);
}

/* A trace completed from its process's live mapping (src/salvage.h): how
 * the process ended and what was recovered. */
static void print_salvage(const struct ct_reader *rd, const char *by)
{
    const struct ct_salvage_info *si = &rd->salvage;
    printf("  status:     complete, salvaged: the process was killed%s%s (it ended without "
           "finishing its trace)%s\n",
           by ? " by " : "", by ? by : "", rd->damage_total ? ", with damage" : "");
    printf("  salvage:    %llu records recovered from its live mapping after offset %llu%s\n",
           (unsigned long long)si->records, (unsigned long long)si->at,
           rd->salvage_in_memory ? " (read in memory; `cutrace salvage` writes them to the trace)"
                                 : "");
    if (si->half_written)
        printf("  salvage:    %llu record%s being written at the instant of death dropped "
               "(not committed)\n",
               (unsigned long long)si->half_written, si->half_written == 1 ? "" : "s");
    if (si->ring_drops)
        printf("  salvage:    %llu records the buffers had dropped before death (full)\n",
               (unsigned long long)si->ring_drops);
    if (si->strings_lost)
        printf("  salvage:    %llu string definitions did not fit the mapping: records naming "
               "them show \"\"\n",
               (unsigned long long)si->strings_lost);
}

/* The GPU ops whose GPU time died with the process (CUPTI's buffers):
 * said, not counted as idle. Needs the records: the trace is read again. */
static void print_undelivered(const struct ct_trace *t)
{
    if (!t->rd.salvaged || !(t->rd.salvage.flags & CT_SALVAGE_GPU_PENDING))
        return;
    struct ct_trace full;
    char err[512];
    uint64_t n = 0;
    int64_t from = INT64_MAX;
    if (ct_trace_load(&full, t->path, 1, err, sizeof(err)) != 0)
        return;
    int rc = ct_trace_undelivered(&full, &n, &from);
    uint64_t first = full.first_ns;
    ct_trace_free(&full);
    if (rc)
        return;
    if (n)
        printf("  salvage:    %llu GPU op%s launched from %.6f s on never had %s GPU time "
               "delivered (it died with the process in CUPTI's buffers): untimed, not idle\n",
               (unsigned long long)n, n == 1 ? "" : "s", (double)(from - (int64_t)first) / 1e9,
               n == 1 ? "its" : "their");
    else
        printf("  salvage:    every GPU op recovered has its GPU time\n");
}

static void print_status(const struct ct_trace *t)
{
    const struct ct_reader *rd = &t->rd;
    char sig[32];
    const char *by = ended_by(t, sig, sizeof(sig));
    if (rd->live_left)
        printf("  live:       %s: its mapping was left alone\n", rd->live_note);
    if (rd->salvaged && rd->has_footer) {
        print_salvage(rd, by);
        print_undelivered(t);
    } else if (rd->has_footer && rd->damage_total == 0 && by)
        printf("  status:     complete, stopped by %s\n", by);
    else if (rd->has_footer && rd->damage_total == 0)
        printf("  status:     complete\n");
    else if (!rd->has_footer && by)
        printf("  status:     truncated at offset %llu (no footer: the process was stopped by %s "
               "before the trace was finished; everything before that offset decoded)\n",
               (unsigned long long)rd->truncated_at, by);
    else if (!rd->has_footer)
        printf("  status:     truncated at offset %llu (no footer: the process did not shut the "
               "trace down; everything before that offset decoded)\n",
               (unsigned long long)rd->truncated_at);
    else if (by)
        printf("  status:     complete, with damage, stopped by %s\n", by);
    else
        printf("  status:     complete, with damage\n");
    for (unsigned i = 0; i < rd->ndamage; i++)
        printf("  damage:     offset %llu: %s (%llu bytes skipped)\n",
               (unsigned long long)rd->damage[i].offset, rd->damage[i].what,
               (unsigned long long)rd->damage[i].skipped);
    if (rd->damage_total > rd->ndamage)
        printf("  damage:     ... %llu more places\n",
               (unsigned long long)(rd->damage_total - rd->ndamage));
    if (rd->damage_total) /* what `report` counts as the file's damaged bytes */
        printf("  damaged:    %llu bytes skipped at %llu place(s), %.2f%% of the file\n",
               (unsigned long long)rd->damage_bytes, (unsigned long long)rd->damage_total,
               rd->size ? 100.0 * (double)rd->damage_bytes / (double)rd->size : 0.0);
    if (rd->dropped_bytes)
        printf("  size bound: the oldest frames (%llu bytes) were dropped to keep the file within "
               "CUTRACE_MAX_MB\n",
               (unsigned long long)rd->dropped_bytes);
}

static void print_meta(const struct ct_trace *t)
{
    static const char *const keys[] = {"host",       "job",        "rank",
                                       "local_rank", "world_size", "cmdline"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = ct_trace_meta(t, keys[i]);
        if (v)
            printf("  %-12s%s\n", keys[i], v);
    }
}

/* Recorder metadata worth a line: how GPU intervals were obtained, and why
 * not the preferred way. */
static void print_recorder(const struct ct_trace *t)
{
    const char *timing = NULL, *fallback = NULL;
    for (size_t i = 0; i < t->nmeta; i++) {
        const struct ct_record *m = &t->meta[i];
        if (m->f[CT_META_SCOPE] != CT_SCOPE_RECORDER)
            continue;
        const char *k = ct_reader_string(&t->rd, m->f[CT_META_KEY]);
        if (!strcmp(k, "gpu_timing"))
            timing = ct_reader_string(&t->rd, m->f[CT_META_VALUE]);
        else if (!strcmp(k, "gpu_timing_fallback"))
            fallback = ct_reader_string(&t->rd, m->f[CT_META_VALUE]);
    }
    if (timing && fallback)
        printf("  gpu time:   %s (fell back: %s)\n", timing, fallback);
    else if (timing)
        printf("  gpu time:   %s\n", timing);
}

static void print_one(const struct ct_trace *t)
{
    const struct ct_reader *rd = &t->rd;
    printf("%s\n", t->path);
    printf("  format:     v%u, clock %s, pid %u (exec generation %u)\n", rd->hdr.version,
           ct_name_clock_source(rd->hdr.clock_source), rd->hdr.pid, rd->hdr.gen);
    time_t secs = (time_t)(rd->hdr.start_real_ns / 1000000000u);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    printf("  started:    %s\n", when);
    print_meta(t);
    print_recorder(t);
    uint64_t total = 0;
    for (int k = 1; k < CT_REC_KIND_COUNT; k++)
        total += t->count[k];
    double span = t->last_ns > t->first_ns ? (double)(t->last_ns - t->first_ns) / 1e9 : 0.0;
    printf("  span:       %.6f s\n", span);
    printf("  records:    %llu (", (unsigned long long)total);
    int first = 1;
    for (int k = 1; k < CT_REC_KIND_COUNT; k++) {
        if (!t->count[k])
            continue;
        printf("%s%s %llu", first ? "" : ", ",
               k == CT_REC_NVTX_MARK ? "nvtx-mark" : ct_kind_table[k].name,
               (unsigned long long)t->count[k]);
        first = 0;
    }
    printf(")\n  chunks:     %llu\n", (unsigned long long)rd->frames);
    printf("  dropped:    %llu\n", (unsigned long long)t->dropped);
    print_status(t);
}

int ct_cmd_info(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_INFO);
    int c;
    optind = 1;
    opterr = 0; /* our message, not getopt's */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: cutrace info TRACE|DIR...\n"
                   "  what each trace holds: its format version, clock, process, host, job,\n"
                   "  rank, span, record counts by kind, chunks, drops, and whether it is\n"
                   "  complete, truncated (and where), damaged or salvaged; a folder's\n"
                   "  traces in turn (no options)\n");
            ct_help_tail(stdout, "info");
            return 0;
        }
        ct_bad_option(CT_CMD_INFO, "cutrace info", argv[optind - 1]);
        return CT_EXIT_USAGE;
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace info: expected at least one trace file or directory\n");
        return CT_EXIT_USAGE;
    }
    struct ct_inputs in = {0};
    char err[512];
    const struct ct_load_opts all = {.no_kineto = 1, .keep_all = 1};
    int erc = ct_load_operands(&all, &in, argv + optind, argc - optind, err, sizeof(err));
    if (erc) {
        fprintf(stderr, "cutrace info: %s\n", err);
        ct_inputs_free(&in);
        /* -EINVAL: an operand that is not a file or folder (a FIFO, a device) */
        return erc == -EINVAL ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    int status = 0;
    for (size_t i = 0; i < in.n; i++) {
        struct ct_trace t;
        if (ct_trace_load(&t, in.paths[i], 0, err, sizeof(err))) {
            fprintf(stderr, "cutrace info: %s\n", err);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        if (i)
            printf("\n");
        print_one(&t);
        if (t.rd.damage_total)
            status = CT_EXIT_BAD_INPUT;
        ct_trace_free(&t);
    }
    ct_inputs_free(&in);
    return status;
}
