/*
 * `cutrace`: the offline command. One file per subcommand (cmd_*.c); this
 * file only dispatches and prints the overall usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/cmd/cli.h"
#include "decoder/read/spill.h"
#include "decoder/util/heap.h"

struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    int big; /* holds a rank's records in memory: worth huge pages */
};

static const struct subcommand cmds[] = {
    {"run", ct_cmd_run, "run a command with the recorder preloaded: cutrace run -o DIR -- CMD", 0},
    {"start", ct_cmd_start, "open a capture window in a running process: cutrace start PID", 0},
    {"stop", ct_cmd_stop, "close a capture window: cutrace stop PID", 0},
    {"dump-now", ct_cmd_dump_now,
     "write a flight recorder's window now (CUTRACE_FLIGHT): cutrace dump-now PID", 0},
    {"info", ct_cmd_info, "what traces hold: metadata, record counts, drops, span, integrity", 0},
    {"salvage", ct_cmd_salvage,
     "complete the traces of killed processes from their live mappings: cutrace salvage DIR", 0},
    {"dump", ct_cmd_dump, "one line per record; --json for the stable JSON-lines view", 0},
    {"report", ct_cmd_report, "job report: overlap, idle attribution, bubbles, collectives", 1},
    {"diff", ct_cmd_diff, "compare two sets of runs per metric, with confidence intervals", 1},
    {"diagnose", ct_cmd_diagnose, "findings ranked by time saved if fixed, with evidence", 1},
    {"export", ct_cmd_export, "Perfetto/Chrome timeline JSON or SQLite database of a job", 1},
    {"goodput", ct_cmd_goodput,
     "where a job's wall time went over all its attempts: goodput, start-up, lost work", 1},
    {"critical-path", ct_cmd_critical_path,
     "the cross-rank path that sets each step's time, by rank and category", 1},
    {"whatif", ct_cmd_whatif, "predicted step time with chosen durations scaled (--scale)", 1},
    {"fleet", ct_cmd_fleet,
     "many jobs in one store: GPU time by factor, regressions pinned (add, report, explain)", 0},
    {"summarize", ct_cmd_summarize,
     "per-rank summaries that report, diagnose, diff and export read in place of traces", 1},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace COMMAND [options] [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(f, "  %-13s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'cutrace help COMMAND' (or 'cutrace COMMAND --help') describes a command;\n"
               "'cutrace --version' names this build. Exit status: 0 done, 1 an input could\n"
               "not be read or is damaged, 2 bad usage (run: the job's own). docs/cli.md\n");
}

static const struct subcommand *find(const char *name)
{
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (!strcmp(name, cmds[i].name))
            return &cmds[i];
    return NULL;
}

static int unknown(const char *name)
{
    fprintf(stderr, "cutrace: unknown command '%s'; expected one of:", name);
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(stderr, " %s", cmds[i].name);
    fprintf(stderr, " (see 'cutrace help')\n");
    return CT_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        ct_help_version(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "help") && argc > 2) {
        /* `cutrace help report` is `cutrace report --help` (as git's) */
        const struct subcommand *c = find(argv[2]);
        if (!c)
            return unknown(argv[2]);
        char *hargv[] = {argv[2], "--help", NULL};
        return c->fn(2, hargv);
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            if (cmds[i].big) {
                /* no huge pages for a job that will be spilled (heap.h) */
                const char *sp = getenv("CUTRACE_SPILL");
                size_t spill = sp && !strcmp(sp, "0")   ? 0
                               : sp && !strcmp(sp, "1") ? 1
                                                        : CT_SPILL_MIN_TRACES;
                ct_hugepages(argv, spill);
                ct_heap_tune();
            }
            return cmds[i].fn(argc - 1, argv + 1);
        }
    return unknown(argv[1]);
}
