/*
 * The parts every command's help page shares (`cutrace CMD --help`,
 * `cutrace help CMD`): after the command's own usage and options, its exit
 * statuses, an example and its reference page; and the version line. One
 * table, so that no command's page lacks them (tests/e2e/cli_conventions.sh
 * checks each).
 */
#include <stdio.h>
#include <string.h>

#include "cutrace/format.h"
#include "decoder/cmd/cli.h"
#include "decoder/read/summary.h"

/* start, stop, dump-now (control.c) */
#define CONTROL_STATUS                                                                             \
    "  0 every process took the request (a stop: or had ended); 1 a process\n"                     \
    "  did not take it (no shim loaded, not listening, ended) or, for dump-now,\n"                 \
    "  has no flight recorder: the message says which; 2 bad usage\n"

static const struct {
    const char *cmd;
    const char *status; /* lines after "exit status:"; NULL: the common rule */
    const char *example;
    const char *doc;
} pages[] = {
    {"run",
     "  the job's own exit status (128+N when a signal N ended it, as a shell\n"
     "  says); 2 when a check before the start failed (an option, a CUTRACE_\n"
     "  setting, the output folder): the job is then not started\n",
     "cutrace run -- torchrun --nproc-per-node 8 train.py", "docs/cutrace-run.md"},
    {"start", CONTROL_STATUS,
     "CUTRACE_START=paused cutrace run -- python train.py &  cutrace start PID",
     "docs/cutrace-start.md"},
    {"stop", CONTROL_STATUS, "cutrace stop PID", "docs/cutrace-start.md"},
    {"dump-now", CONTROL_STATUS, "cutrace dump-now PID", "docs/cutrace-start.md"},
    {"info", NULL, "cutrace info cutrace-run1", "docs/cutrace-info.md"},
    {"salvage", NULL, "cutrace salvage cutrace-run1", "docs/salvage.md"},
    {"dump", NULL, "cutrace dump --json cutrace-run1/job-host-r0-p1234-0.cutrace | head",
     "docs/cutrace-dump.md"},
    {"report", NULL, "cutrace report cutrace-run1", "docs/report.md"},
    {"diff", NULL, "cutrace diff --by host runs-before runs-after", "docs/diff.md"},
    {"diagnose", NULL, "cutrace diagnose cutrace-run1", "docs/cutrace-diagnose.md"},
    {"export", NULL, "cutrace export --format chrome -o job.json cutrace-run1", "docs/export.md"},
    {"goodput", NULL, "cutrace goodput --job 4242 traces/", "docs/goodput.md"},
    {"critical-path", NULL, "cutrace critical-path --top 5 cutrace-run1", "docs/critical-path.md"},
    {"whatif", NULL, "cutrace whatif --scale kernel='*gemm*'=0.8 cutrace-run1",
     "docs/critical-path.md"},
    {"fleet",
     "  0 done; 1 the store or an input could not be read or is damaged; 2 bad\n"
     "  usage (an option, a store that is not one, a password in a URL)\n",
     "cutrace fleet add fleet.db cutrace-run*  &&  cutrace fleet report fleet.db --by host",
     "docs/fleet.md"},
    {"summarize", NULL, "cutrace summarize -o sums cutrace-run1 && cutrace report sums",
     "docs/summary.md"},
};

/* The operand-less commands' default (cli_input.c). */
static const char *const reads_newest[] = {"report",        "diagnose", "goodput",
                                           "critical-path", "whatif",   "export"};

void ct_help_tail(FILE *f, const char *cmd)
{
    for (size_t i = 0; i < sizeof(reads_newest) / sizeof(reads_newest[0]); i++)
        if (!strcmp(cmd, reads_newest[i]))
            fprintf(f, "With no TRACE or DIR it reads the newest cutrace-runN folder here (the\n"
                       "last 'cutrace run'), and says so.\n");
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        if (strcmp(pages[i].cmd, cmd))
            continue;
        fprintf(f, "exit status:\n%s",
                pages[i].status
                    ? pages[i].status
                    : "  0 done; 1 an input could not be read or is damaged (the message\n"
                      "  names it and where); 2 bad usage (an option, a value, an operand\n"
                      "  refused; the message names it and what is allowed)\n");
        fprintf(f, "example:\n  %s\nreference: %s (cutrace %s)\n", pages[i].example, pages[i].doc,
                CT_VERSION);
        return;
    }
}

void ct_help_version(FILE *f)
{
    fprintf(f, "cutrace %s (trace format v%u, reads v%u and later; summaries v%d)\n", CT_VERSION,
            CT_FORMAT_VERSION, CT_FORMAT_VERSION_MIN, CT_SUMMARY_VERSION);
}
