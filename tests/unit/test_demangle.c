/* Suite "demangle": kernel names as the report's kernel table shows them. */
#include <check.h>

#include "decoder/util/demangle.h"

static void eq(const char *in, const char *want)
{
    char buf[256];
    ck_assert_str_eq(ct_demangle(in, buf, sizeof(buf)), want);
}

START_TEST(plain_names_pass_through)
{
    eq("gemm_kernel", "gemm_kernel");
    eq("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    eq("", "");
}
END_TEST

START_TEST(nested_names_and_templates)
{
    eq("_Z6kernelPfi", "kernel");
    eq("_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_"
       "13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseE"
       "RKT_EUliE_EEviT1_",
       "at::native::elementwise_kernel<...>");
    eq("_ZN7cutlass7Kernel2I26cutlass_80_tensorop_s1688gemmEEvNT_6ParamsE",
       "cutlass::Kernel2<...>");
    eq("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<...>::push_back");
    eq("_ZN12_GLOBAL__N_16reduceEPf", "(anonymous namespace)::reduce");
}
END_TEST

START_TEST(unparseable_names_are_kept)
{
    eq("_Z", "_Z");
    eq("_ZN3foo", "_ZN3foo");
    eq("_Z999x", "_Z999x");
}
END_TEST

Suite *demangle_suite(void)
{
    Suite *s = suite_create("demangle");
    TCase *tc = tcase_create("names");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, plain_names_pass_through);
    tcase_add_test(tc, nested_names_and_templates);
    tcase_add_test(tc, unparseable_names_are_kept);
    suite_add_tcase(s, tc);
    return s;
}
