/*
 * A job's probes for NVSHMEM by dlsym, run under the shim (which exports
 * nvshmem* names): `w_noshmem` loads no NVSHMEM, and its probes must fail
 * as they would without cutrace; `w_noshmem load` first loads
 * libnvshmem_host.so.3 (RTLD_GLOBAL), and then they succeed. Prints
 * "found N".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "load") &&
        !dlopen("libnvshmem_host.so.3", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "w_noshmem: %s\n", dlerror());
        return 2;
    }
    const char *names[] = {"nvshmemx_float_sum_reduce_on_stream", "nvshmemx_barrier_on_stream",
                           "nvshmemx_alltoallmem_on_stream", "nvshmem_team_destroy"};
    int found = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        found += dlsym(RTLD_DEFAULT, names[i]) != NULL;
    printf("found %d\n", found);
    return 0;
}
