/*
 * The "real" ncclAllReduce of bench_nccl_proxy: a library the bench links,
 * so that the shim (preloaded, found first) wraps the bench's call as it
 * wraps NCCL's, records the op and gives it a correlation id, and then
 * calls this, inside which the bench starts its profiler Coll event, as
 * NCCL starts it inside the call: the bench's proxy steps then belong to a
 * recorded op, the only ones whose steps are recorded raw
 * (CUTRACE_NCCL_STEPS). Nothing else of NCCL is here.
 */
#include <stddef.h>

/* set by the bench: what "NCCL" does inside the call */
void (*bench_nccl_inside)(void);

int ncclAllReduce(const void *sb, void *rb, size_t count, int dtype, int op, void *comm,
                  void *stream);
int ncclAllReduce(const void *sb, void *rb, size_t count, int dtype, int op, void *comm,
                  void *stream)
{
    (void)sb, (void)rb, (void)count, (void)dtype, (void)op, (void)comm, (void)stream;
    if (bench_nccl_inside)
        bench_nccl_inside();
    return 0;
}
