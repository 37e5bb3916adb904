/*
 * Communication outside NCCL's host API (docs/nccl.md, "Communication
 * kernels"): the table of kernel-name patterns whose kernels count as
 * communication in every analysis, though no NCCL call launched them: the
 * kernels of NCCL's symmetric-memory path, NVSHMEM's on-stream
 * collectives, DeepEP's dispatch and combine, custom all-reduce kernels of
 * vLLM, TensorRT-LLM, PyTorch symmetric memory and Transformer Engine.
 * Built in (comm_kernels.c), extended or replaced by a file
 * (`--comm-kernels FILE`, every analysis command) of lines
 *
 *     # a comment
 *     PATTERN OP        a glob (fnmatch: * ? [...]) over the kernel's whole
 *                       name as recorded (mangled or not), and the op it
 *                       stands for (AllReduce, AllGather, ReduceScatter,
 *                       AlltoAll, Broadcast, Reduce, Gather, Scatter, Send,
 *                       Recv, SendRecv, Other)
 *     no-builtin        drop the built-in table
 *
 * The file's entries are tried before the built-in ones, in file order;
 * the first match decides. One table per process, set once while the
 * command line is read, before any trace is.
 */
#ifndef CT_COMM_KERNELS_H
#define CT_COMM_KERNELS_H

#include <stddef.h>

/* The op name (as listed above) of the first pattern kernel `name`
 * matches, or NULL when none does (or name is NULL). */
const char *ct_comm_kernel_op(const char *name);

/* Adds the entries of file `path` (read whole). 0, or -1 with one line
 * naming the file, the line and what is wrong in err ("FILE:3: unknown op
 * 'Foo'; allowed: AllReduce, ..."), -ENOMEM. */
int ct_comm_kernels_load(const char *path, char *err, size_t errlen);

/* Back to the built-in table alone (tests). */
void ct_comm_kernels_reset(void);

/* The i-th entry of the table in use (file entries first): 1 with its
 * pattern and op, 0 past the end (docs, tests). */
int ct_comm_kernel_entry(size_t i, const char **pattern, const char **op);

#endif
