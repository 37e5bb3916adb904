/*
 * What a trace says about its process (shim/meta.c): the metadata written
 * first in every trace, the launcher's identity for the file name, and the
 * run the process belongs to.
 */
#ifndef CT_SHIM_META_H
#define CT_SHIM_META_H

#include <stddef.h>

/* The process metadata written first in every trace. */
struct ct_meta_kv;
size_t ct_meta_process(struct ct_meta_kv *kv, size_t max, char *strbuf, size_t strbuf_len);
/* Launcher identity for the file name. */
struct ct_launcher {
    char job[64];
    char host[64];
    long rank, local_rank, world_size; /* -1 when unknown */
};
void ct_launcher_detect(struct ct_launcher *l);

/*
 * The run this process belongs to (metadata run_id and run_id_source;
 * docs/runs.md), first that applies:
 *   1. CUTRACE_RUN_ID as `cutrace run` or the user set it ("cutrace");
 *   2. the launch's own identity, shared by every rank of one launch and
 *      new for the next: Slurm's job and step ("slurm-JOB.STEP"), PMIx's
 *      namespace (Open MPI 5, "pmix-NS"), Open MPI 4's job ("ompi-ID");
 *   3. the "auto-..." identity a traced ancestor exported ("inherited");
 *   4. a new one ("auto"), which ct_run_id_export puts in the environment
 *      so that the processes this one starts (torchrun's ranks, a
 *      launcher's children) share it.
 * Writes at most CT_RUN_ID_MAX bytes to out.
 */
void ct_run_identity(char *out, size_t n, const char **source);
/* At load (our constructor, before main): exports a new "auto-..."
 * CUTRACE_RUN_ID when rule 4 applies. */
void ct_run_id_export(void);

#endif
