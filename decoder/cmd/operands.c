/*
 * The operands of the commands that read one job (report, diagnose,
 * goodput, critical-path, whatif, export): the ones given, or with none
 * the newest run folder that `cutrace run` made here, as perf reads
 * perf.data; the command says which it read.
 */
#include <stdio.h>

#include "decoder/cmd/cli.h"
#include "decoder/load/run_identity.h"

int ct_cli_operands(const char *cmd, int argc, char **argv, int first, char ***ops)
{
    static char newest[64];
    static char *one[2] = {newest, NULL};
    if (first < argc) {
        *ops = argv + first;
        return argc - first;
    }
    if (!ct_newest_run_dir(newest, sizeof(newest))) {
        fprintf(stderr,
                "cutrace %s: expected a trace file or directory (there is no cutrace-runN "
                "folder here to read; see 'cutrace help %s')\n",
                cmd, cmd);
        return 0;
    }
    fprintf(stderr, "cutrace %s: reading %s, the newest cutrace-runN folder here\n", cmd, newest);
    *ops = one;
    return 1;
}
