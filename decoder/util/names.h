/* Names for the format's enums, as dump and reports print them. */
#ifndef CT_NAMES_H
#define CT_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

const char *ct_name_copy_kind(uint64_t v);
const char *ct_name_gpu_type(uint64_t v);
const char *ct_name_gpu_source(uint64_t v);
/* enum ct_nccl_phase_id: "initial_sync", "compute", "final_sync" */
const char *ct_name_nccl_phase(uint64_t v);
/* enum ct_nccl_net_transport: "ib", "socket" */
const char *ct_name_nccl_net_transport(uint64_t v);
const char *ct_name_family(uint64_t v);
const char *ct_name_nccl_op(uint64_t v);
const char *ct_name_nccl_dtype(uint64_t v);
const char *ct_name_nccl_redop(uint64_t v);
/* A CT_REC_NCCL record's library ("nccl", "nvshmem"), datatype and
 * reduction operator by its dtype field (format v7: NVSHMEM's collectives
 * carry CT_NCCL_DTYPE_NVSHMEM and NVSHMEM's type and operator), and its
 * call's name ("ncclAllReduce", "nvshmem:AllReduce", "nvshmem:other" for a
 * barrier or sync) written into buf. */
const char *ct_name_comm_lib(uint64_t dtype);
const char *ct_name_shmem_type(uint64_t v);
const char *ct_name_comm_dtype(uint64_t dtype);
const char *ct_name_comm_redop(uint64_t dtype, uint64_t redop);
const char *ct_name_comm_call(uint64_t dtype, uint64_t op, char *buf, size_t n);
const char *ct_name_fd_type(uint64_t v);
const char *ct_name_scope(uint64_t v);
const char *ct_name_drop_reason(uint64_t v);
const char *ct_name_clock_source(uint64_t v);
/* A signal number as the recording (Linux) host numbered it: "SIGTERM",
 * or "signal 42" for one without a name here; written into buf (16 bytes
 * are enough), which is returned. */
const char *ct_name_signal(long v, char *buf, size_t n);

/* A rank list as text reports print it: " 3,100-103,517" (sorted, runs of
 * consecutive ranks as A-B: a finding on a thousand ranks stays one line;
 * the JSON lists them all). */
void ct_ranks_text(FILE *f, const int *ranks, size_t n);

#endif
