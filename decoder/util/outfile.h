/*
 * The commands' output files, written so that nothing the user has is lost
 * (docs/runs.md, "Outputs"):
 *   - an output that is one of the command's inputs, a directory, or an
 *     existing cutrace trace or summary is refused before any work starts;
 *   - the output is written to a temporary file beside it (same folder,
 *     so the rename cannot cross file systems) and renamed into place only
 *     when complete, so a failed or interrupted command leaves an older
 *     file of that name as it was (SIGINT, SIGTERM, SIGHUP remove the
 *     temporary file);
 *   - "-" (or no -o) is standard output; an existing output that is not a
 *     regular file (/dev/null, a FIFO) is written in place, and a link is
 *     followed (its target is replaced, the link stays).
 * Functions return 0 or a negative errno with err naming the option and
 * the path; they never print and never exit.
 */
#ifndef CT_DECODER_OUTFILE_H
#define CT_DECODER_OUTFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

struct ct_outfile {
    const char *path; /* the file replaced (a link's target); NULL: standard output */
    char real[PATH_MAX];
    char tmp[PATH_MAX];
    FILE *f;  /* what to write to (stdout, or the temporary file) */
    int slot; /* in the interrupt cleanup list, -1 when none */
};

/* 1 when path means standard output (NULL or "-"). */
int ct_out_is_stdout(const char *path);

/*
 * Refuses path (option opt, e.g. "-o") when it is a directory, the same
 * file as one of inputs[0..n) (a trace or a folder's trace named again),
 * or an existing cutrace trace or summary (by its first bytes or its
 * .ctsum name). -EEXIST, -EISDIR or 0.
 */
int ct_out_check(const char *path, const char *opt, char *const *inputs, size_t n, char *err,
                 size_t errlen);

/*
 * Opens the output: standard output, or a new temporary file beside path
 * (mode as an existing file of that name has, else 0666 less the umask),
 * registered for removal on SIGINT/SIGTERM/SIGHUP. o->f is ready to write.
 */
int ct_out_open(struct ct_outfile *o, const char *path, const char *opt, char *err, size_t errlen);

/* The same, for a writer that opens the file by name itself (SQLite):
 * o->tmp is the empty temporary file, o->f is NULL. */
int ct_out_open_path(struct ct_outfile *o, const char *path, const char *opt, char *err,
                     size_t errlen);

/* Flushes, syncs and renames the temporary file into place (standard
 * output: flushes). -EIO with err when a write failed; the temporary file
 * is then removed and the old file stays. */
int ct_out_commit(struct ct_outfile *o, char *err, size_t errlen);

/* Removes the temporary file (nothing at path changes). */
void ct_out_abort(struct ct_outfile *o);

#endif
