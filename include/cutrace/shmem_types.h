/*
 * NVSHMEM's element types and reduction operators as cutrace records them
 * (part of the trace format, version 7: a CT_REC_NCCL record of NVSHMEM's
 * carries the index of its type in this list and its operator's enum
 * value). Append only: an index, once written to a trace, names its type
 * forever.
 *
 * CT_SHMEM_TYPES(X) expands X(NAME, SIZE, KIND) once per TYPENAME of
 * NVSHMEM's typed collectives (its host header nvshmemx_coll_api.h and the
 * type lists of nvshmem_api_macros.h), SIZE the element's bytes on LP64
 * (half and bfloat16: 2), KIND which collectives NVSHMEM defines for it:
 *   R  alltoall, broadcast, fcollect only (ptrdiff: no reduction);
 *   S  those and the min, max, sum, prod reductions and reducescatters;
 *   B  those and the and, or, xor ones too (the bitwise types).
 *   M  index 0, "mem": no TYPENAME but the untyped *mem variants (alltoall,
 *      fcollect, broadcast), whose count is bytes.
 */
#ifndef CUTRACE_SHMEM_TYPES_H
#define CUTRACE_SHMEM_TYPES_H

#define CT_SHMEM_TYPES(X)                                                                          \
    X(mem, 1, M)                                                                                   \
    X(float, 4, S)                                                                                 \
    X(double, 8, S)                                                                                \
    X(half, 2, S)                                                                                  \
    X(bfloat16, 2, S)                                                                              \
    X(char, 1, S)                                                                                  \
    X(schar, 1, S)                                                                                 \
    X(short, 2, S)                                                                                 \
    X(int, 4, S)                                                                                   \
    X(long, 8, S)                                                                                  \
    X(longlong, 8, S)                                                                              \
    X(uchar, 1, B)                                                                                 \
    X(ushort, 2, B)                                                                                \
    X(uint, 4, B)                                                                                  \
    X(ulong, 8, B)                                                                                 \
    X(ulonglong, 8, B)                                                                             \
    X(int8, 1, B)                                                                                  \
    X(int16, 2, B)                                                                                 \
    X(int32, 4, B)                                                                                 \
    X(int64, 8, B)                                                                                 \
    X(uint8, 1, B)                                                                                 \
    X(uint16, 2, B)                                                                                \
    X(uint32, 4, B)                                                                                \
    X(uint64, 8, B)                                                                                \
    X(size, 8, B)                                                                                  \
    X(ptrdiff, 8, R)

enum ct_shmem_type {
#define CT_SHMEM_TYPE_ENUM(name, size, kind) CT_SHMEM_T_##name,
    CT_SHMEM_TYPES(CT_SHMEM_TYPE_ENUM)
#undef CT_SHMEM_TYPE_ENUM
        CT_SHMEM_T_COUNT
};

/* Reduction operators, in NVSHMEM's order (the bitwise ones first). */
#define CT_SHMEM_REDOPS(X) X(and) X(or) X(xor) X(min) X(max) X(sum) X(prod)

enum ct_shmem_redop {
#define CT_SHMEM_REDOP_ENUM(op) CT_SHMEM_OP_##op,
    CT_SHMEM_REDOPS(CT_SHMEM_REDOP_ENUM)
#undef CT_SHMEM_REDOP_ENUM
        CT_SHMEM_OP_COUNT
};

#endif
