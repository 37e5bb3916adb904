/*
 * A job that never calls NCCL and loads no libnccl, run under the shim
 * (which exports nccl* names): its probes for NCCL must fail exactly as
 * they would without cutrace, and it must run untouched.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    const char *names[] = {"ncclAllReduce", "ncclGroupEnd", "ncclCommInitRank", "ncclGetVersion"};
    int found = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        found += dlsym(RTLD_DEFAULT, names[i]) != NULL;
    printf("found %d\n", found);
    return 0;
}
