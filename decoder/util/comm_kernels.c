/*
 * The table of kernel-name patterns that count as communication
 * (decoder/util/comm_kernels.h; docs/nccl.md, "Communication kernels"):
 * the built-in entries, each with where its names come from, and the
 * loader of a user's file.
 */
#include "decoder/util/comm_kernels.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    const char *pattern, *op;
};

/* Globs over the whole name: `*x*` finds x in a mangled name too (its
 * identifiers appear verbatim, after their lengths). Keep the more
 * specific entries first. */
static const struct entry builtin[] = {
    /* NCCL 2.27+ symmetric-memory kernels (ncclSymk_AllReduce_AGxLLMC_R_sum_bf16) */
    {"ncclSymk_AllReduce*", "AllReduce"},
    {"ncclSymk_AllGather*", "AllGather"},
    {"ncclSymk_ReduceScatter*", "ReduceScatter"},
    {"ncclSymk_*", "Other"},
    /* NVSHMEM's on-stream collectives (nvshmemx_*_on_stream) */
    {"*alltoall*_on_stream_kernel*", "AlltoAll"},
    {"*fcollect*_on_stream_kernel*", "AllGather"},
    {"*rdxn*_on_stream_kernel*", "AllReduce"},
    {"*reduce*_on_stream_kernel*", "AllReduce"},
    {"*broadcast*_on_stream_kernel*", "Broadcast"},
    {"*barrier*_on_stream_kernel*", "Other"},
    {"*sync*_on_stream_kernel*", "Other"},
    {"*wait_until*_on_stream_kernel*", "Other"},
    /* DeepEP's expert-parallel dispatch and combine (deep_ep::intranode::dispatch,
     * deep_ep::internode::combine, deep_ep::internode_ll::dispatch, their notify
     * kernels); deep_ep::layout (the routing's bookkeeping) is compute */
    {"*deep_ep*intranode*", "AlltoAll"},
    {"*deep_ep*internode*", "AlltoAll"},
    /* vLLM's custom all-reduce (vllm::cross_device_reduce_1stage/_2stage) */
    {"*cross_device_reduce_*stage*", "AllReduce"},
    /* TensorRT-LLM's custom all-reduce (tensorrt_llm::kernels::oneShotAllReduceKernel,
     * twoShotAllReduceKernel) and its fused all-reduce (allreduce_fusion_kernel_*,
     * FlashInfer/SGLang's ar_fusion_kernel) */
    {"*oneShotAllReduceKernel*", "AllReduce"},
    {"*twoShotAllReduceKernel*", "AllReduce"},
    {"*allreduce_fusion_kernel*", "AllReduce"},
    {"*ar_fusion_kernel*", "AllReduce"},
    /* PyTorch symmetric memory (c10d::symmetric_memory::one_shot_all_reduce_kernel,
     * two_shot_all_reduce_kernel, multimem_all_reduce_kernel, ...) */
    {"*one_shot_all_reduce_kernel*", "AllReduce"},
    {"*two_shot_all_reduce_kernel*", "AllReduce"},
    {"*multimem_all_reduce_kernel*", "AllReduce"},
    {"*multimem_one_shot_all_reduce_kernel*", "AllReduce"},
    {"*multimem_all_gather_kernel*", "AllGather"},
    /* Transformer Engine's userbuffers (comm-GEMM overlap):
     * userbuffers_fp16_sum_inplace_gpu_rr_rs, ..._rr_ag, ... */
    {"*userbuffers_*_rs*", "ReduceScatter"},
    {"*userbuffers_*_ag*", "AllGather"},
    {"*userbuffers_*", "Other"},
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static const char *const ops[] = {
    "AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "Broadcast", "Reduce",
    "Gather",    "Scatter",   "Send",          "Recv",     "SendRecv",  "Other",
};

/* Answers remembered per thread: readers ask once per kernel record (a
 * PyTorch trace of millions), and a name tried against every pattern costs
 * some thirty fnmatch calls. A slot holds a name's address and hash (an
 * address reused for another name has another hash) with the table's
 * generation when answered; loading or resetting the table moves it. */
#define CACHE_SLOTS 1024
static __thread struct {
    const char *name;
    uint64_t hash;
    const char *op;
    unsigned gen;
} cache[CACHE_SLOTS];
static unsigned generation = 1; /* changes only while the command line is read */

static struct entry *user; /* the files' entries, strings in user_text */
static size_t nuser;
static char **user_text; /* one buffer per file loaded */
static size_t ntext;
static int no_builtin;

static const char *lookup(const char *name)
{
    for (size_t i = 0; i < nuser; i++)
        if (!fnmatch(user[i].pattern, name, 0))
            return user[i].op;
    for (size_t i = 0; !no_builtin && i < NBUILTIN; i++)
        if (!fnmatch(builtin[i].pattern, name, 0))
            return builtin[i].op;
    return NULL;
}

const char *ct_comm_kernel_op(const char *name)
{
    if (!name)
        return NULL;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    size_t i = (size_t)((h ^ (uintptr_t)name) % CACHE_SLOTS);
    if (cache[i].gen == generation && cache[i].name == name && cache[i].hash == h)
        return cache[i].op;
    const char *op = lookup(name);
    cache[i].name = name;
    cache[i].hash = h;
    cache[i].op = op;
    cache[i].gen = generation;
    return op;
}

int ct_comm_kernel_entry(size_t i, const char **pattern, const char **op)
{
    const struct entry *e = i < nuser                             ? &user[i]
                            : !no_builtin && i - nuser < NBUILTIN ? &builtin[i - nuser]
                                                                  : NULL;
    if (!e)
        return 0;
    *pattern = e->pattern;
    *op = e->op;
    return 1;
}

void ct_comm_kernels_reset(void)
{
    for (size_t i = 0; i < ntext; i++)
        free(user_text[i]);
    free(user_text);
    free(user);
    user = NULL;
    user_text = NULL;
    nuser = ntext = 0;
    no_builtin = 0;
    generation++;
}

static const char *op_named(const char *s)
{
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (!strcmp(ops[i], s))
            return ops[i];
    return NULL;
}

/* One line (NUL-terminated, in place): 0, or -1 with err set. */
static int parse_line(char *line, const char *path, size_t no, char *err, size_t errlen,
                      struct entry **v, size_t *n, size_t *cap, int *drop)
{
    char *save = NULL, *pat = strtok_r(line, " \t\r", &save);
    if (!pat || *pat == '#')
        return 0;
    char *op = strtok_r(NULL, " \t\r", &save), *extra = op ? strtok_r(NULL, " \t\r", &save) : NULL;
    if (!strcmp(pat, "no-builtin") && !op) {
        *drop = 1;
        return 0;
    }
    if (!op) {
        snprintf(err, errlen, "%s:%zu: '%s': expected PATTERN OP (or no-builtin)", path, no, pat);
        return -1;
    }
    if (extra && *extra != '#') {
        snprintf(err, errlen, "%s:%zu: '%s' after the op: expected PATTERN OP", path, no, extra);
        return -1;
    }
    const char *known = op_named(op);
    if (!known) {
        int k = snprintf(err, errlen, "%s:%zu: unknown op '%s'; allowed:", path, no, op);
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && k > 0 && (size_t)k < errlen; i++)
            k += snprintf(err + k, errlen - (size_t)k, "%s %s", i ? "," : "", ops[i]);
        return -1;
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        struct entry *p = realloc(*v, c * sizeof(*p));
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = (struct entry){pat, known};
    return 0;
}

int ct_comm_kernels_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                return -ENOMEM;
            }
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(text);
        return -1;
    }
    text[len] = '\0';
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: not a text file (a NUL byte)", path);
        free(text);
        return -1;
    }
    struct entry *v = NULL;
    size_t n = 0, vcap = 0, no = 0;
    int drop = 0, rc = 0;
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        rc = parse_line(line, path, ++no, err, errlen, &v, &n, &vcap, &drop);
    }
    char **t = rc ? NULL : realloc(user_text, (ntext + 1) * sizeof(*t));
    struct entry *u = rc || !t ? NULL : realloc(user, (nuser + n + 1) * sizeof(*u));
    if (t)
        user_text = t;
    if (rc || !t || !u) {
        free(v);
        free(text);
        return rc ? rc : -ENOMEM;
    }
    user = u;
    if (n)
        memcpy(user + nuser, v, n * sizeof(*v));
    nuser += n;
    user_text[ntext++] = text;
    no_builtin |= drop;
    generation++;
    free(v);
    return 0;
}
