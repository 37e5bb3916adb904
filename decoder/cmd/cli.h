/* Subcommand entry points and the exit statuses they share. */
#ifndef CT_CLI_H
#define CT_CLI_H

#include <stdio.h>

#define CT_EXIT_OK        0
#define CT_EXIT_BAD_INPUT 1 /* a trace could not be read, or is damaged */
#define CT_EXIT_USAGE     2 /* bad options or operands */

int ct_cmd_info(int argc, char **argv);
int ct_cmd_dump(int argc, char **argv);
int ct_cmd_report(int argc, char **argv);
int ct_cmd_export(int argc, char **argv); /* decoder/cmd/export.c */
int ct_cmd_run(int argc, char **argv);
int ct_cmd_start(int argc, char **argv);
int ct_cmd_stop(int argc, char **argv);
int ct_cmd_dump_now(int argc, char **argv);
int ct_cmd_diff(int argc, char **argv);
int ct_cmd_diagnose(int argc, char **argv);
int ct_cmd_summarize(int argc, char **argv);     /* decoder/cmd/summarize.c */
int ct_cmd_goodput(int argc, char **argv);       /* decoder/cmd/goodput.c */
int ct_cmd_critical_path(int argc, char **argv); /* decoder/cmd/critical_path.c */
int ct_cmd_whatif(int argc, char **argv);        /* decoder/cmd/whatif.c */
int ct_cmd_salvage(int argc, char **argv);       /* decoder/cmd/salvage.c */
int ct_cmd_fleet(int argc, char **argv);         /* decoder/cmd/fleet.c */
/* critical-path and whatif share options and loading (critical_path.c) */
int ct_cmd_cp_main(int argc, char **argv, int whatif);

/* The end of every command's help page: the default operand where there
 * is one, the exit statuses, an example, the reference page (help.c). */
void ct_help_tail(FILE *f, const char *cmd);
/* "cutrace VERSION (trace format vN ...)" */
void ct_help_version(FILE *f);

/* The operands from argv[first] on; with none, the newest cutrace-runN
 * folder here, said on stderr (operands.c). *ops points at them; returns
 * their count, 0 (after the message) when there are none at all. */
int ct_cli_operands(const char *cmd, int argc, char **argv, int first, char ***ops);

#endif
