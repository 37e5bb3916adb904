/*
 * The table of NVSHMEM's element types (include/cutrace/shmem_types.h)
 * against NVSHMEM's documented lists, and the names the decoder gives a
 * record's type and operator (format v7).
 *
 * The lists below are NVSHMEM's (its host header nvshmemx_coll_api.h
 * declares the on-stream collectives over them, its nvshmem_api_macros.h
 * spells them): the standard RMA types (alltoall, broadcast, fcollect),
 * the bitwise reduction types (and, or, xor) and the standard reduction
 * types (min, max; sum and prod take the same, complex types aside).
 */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "cutrace/format.h"
#include "cutrace/shmem_types.h"
#include "decoder/util/names.h"

static const struct {
    const char *name;
    size_t size; /* sizeof the C type on this (LP64) host; half, bfloat16: 2 */
} rma[] = {
    {"bfloat16", 2},
    {"half", 2},
    {"float", sizeof(float)},
    {"double", sizeof(double)},
    {"char", sizeof(char)},
    {"short", sizeof(short)},
    {"schar", sizeof(signed char)},
    {"int", sizeof(int)},
    {"long", sizeof(long)},
    {"longlong", sizeof(long long)},
    {"uchar", sizeof(unsigned char)},
    {"ushort", sizeof(unsigned short)},
    {"uint", sizeof(unsigned int)},
    {"ulong", sizeof(unsigned long)},
    {"ulonglong", sizeof(unsigned long long)},
    {"int8", 1},
    {"int16", 2},
    {"int32", 4},
    {"int64", 8},
    {"uint8", 1},
    {"uint16", 2},
    {"uint32", 4},
    {"uint64", 8},
    {"size", sizeof(size_t)},
    {"ptrdiff", sizeof(ptrdiff_t)},
};
static const char *const bitwise[] = {"uchar",  "ushort", "uint",   "ulong", "ulonglong",
                                      "int8",   "int16",  "int32",  "int64", "uint8",
                                      "uint16", "uint32", "uint64", "size"};
static const char *const standard_extra[] = {"char",     "schar",    "short", "int",   "long",
                                             "longlong", "bfloat16", "half",  "float", "double"};

static int in(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], name))
            return 1;
    return 0;
}

struct row {
    const char *name;
    size_t size;
    char kind;
};
static const struct row table[] = {
#define ROW(name, size, kind) {#name, size, #kind[0]},
    CT_SHMEM_TYPES(ROW)
#undef ROW
};

START_TEST(the_type_table_is_nvshmems_documented_list)
{
    size_t n = sizeof(table) / sizeof(table[0]);
    ck_assert_uint_eq(n, CT_SHMEM_T_COUNT);
    ck_assert_uint_eq(n, 1 + sizeof(rma) / sizeof(rma[0]));
    ck_assert_str_eq(table[0].name, "mem"); /* the untyped *mem variants: bytes */
    ck_assert_uint_eq(table[0].size, 1);
    ck_assert_int_eq(table[0].kind, 'M');
    for (size_t i = 0; i < sizeof(rma) / sizeof(rma[0]); i++) {
        const struct row *r = NULL;
        for (size_t j = 1; j < n; j++)
            if (!strcmp(table[j].name, rma[i].name))
                r = &table[j];
        ck_assert_msg(r != NULL, "%s missing", rma[i].name);
        ck_assert_msg(r->size == rma[i].size, "%s: %zu bytes, not %zu", r->name, r->size,
                      rma[i].size);
        int bit = in(bitwise, sizeof(bitwise) / sizeof(bitwise[0]), r->name);
        int std =
            bit || in(standard_extra, sizeof(standard_extra) / sizeof(standard_extra[0]), r->name);
        char want = bit ? 'B' : std ? 'S' : 'R';
        ck_assert_msg(r->kind == want, "%s: kind %c, not %c", r->name, r->kind, want);
    }
}
END_TEST

START_TEST(a_records_type_and_operator_are_named_by_its_library)
{
    /* NVSHMEM's (format v7): the flag, then the table's index */
    ck_assert_str_eq(ct_name_comm_lib(CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_float), "nvshmem");
    ck_assert_str_eq(ct_name_comm_dtype(CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_float), "float");
    ck_assert_str_eq(ct_name_comm_dtype(CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_ptrdiff), "ptrdiff");
    ck_assert_str_eq(ct_name_comm_dtype(CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_COUNT), "unknown");
    static const char *const ops[] = {"and", "or", "xor", "min", "max", "sum", "prod"};
    ck_assert_uint_eq(CT_SHMEM_OP_COUNT, 7);
    for (unsigned i = 0; i < 7; i++)
        ck_assert_str_eq(ct_name_comm_redop(CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_int, i), ops[i]);
    char buf[32];
    ck_assert_str_eq(
        ct_name_comm_call(CT_NCCL_DTYPE_NVSHMEM, CT_NCCL_OP_ALLREDUCE, buf, sizeof(buf)),
        "nvshmem:AllReduce");
    ck_assert_str_eq(ct_name_comm_call(CT_NCCL_DTYPE_NVSHMEM, CT_NCCL_OP_COUNT, buf, sizeof(buf)),
                     "nvshmem:other");
    /* NCCL's records are read as before: ncclFloat32 is 7, ncclMax 2 */
    ck_assert_str_eq(ct_name_comm_lib(7), "nccl");
    ck_assert_str_eq(ct_name_comm_dtype(7), "float32");
    ck_assert_str_eq(ct_name_comm_redop(7, 2), "max");
    ck_assert_str_eq(ct_name_comm_call(7, CT_NCCL_OP_ALLREDUCE, buf, sizeof(buf)), "ncclAllReduce");
}
END_TEST

Suite *shmem_types_suite(void)
{
    Suite *s = suite_create("shmem_types");
    TCase *tc = tcase_create("shmem_types");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, the_type_table_is_nvshmems_documented_list);
    tcase_add_test(tc, a_records_type_and_operator_are_named_by_its_library);
    suite_add_tcase(s, tc);
    return s;
}
