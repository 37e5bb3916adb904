/*
 * `cutrace whatif [--json] --scale SELECTOR=FACTOR ... TRACE|DIR...`: the
 * job's graph replayed with chosen durations scaled, the predicted median
 * step and the new critical path (docs/critical-path.md). Options and
 * loading are critical-path's (decoder/cmd/critical_path.c).
 */
#include "decoder/cmd/cli.h"

int ct_cmd_whatif(int argc, char **argv)
{
    return ct_cmd_cp_main(argc, argv, 1);
}
