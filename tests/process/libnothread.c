/*
 * Test interposer: pthread_create fails with EAGAIN when libcutrace.so calls
 * it (its writer thread), as when a process has hit its thread limit; every
 * other caller gets the real one. Preloaded after the shim.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    Dl_info info;
    if (dladdr(__builtin_return_address(0), &info) && info.dli_fname &&
        strstr(info.dli_fname, "libcutrace"))
        return EAGAIN;
    void *real = dlsym(RTLD_NEXT, "pthread_create");
    create_fn f;
    memcpy(&f, &real, sizeof(f));
    return f ? f(t, a, fn, arg) : ENOSYS;
}
