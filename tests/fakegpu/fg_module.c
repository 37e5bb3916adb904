/*
 * fg_module.c - modules, libraries, functions and kernels, which here are
 * nothing but names: any image loads, any name asked for exists, and the
 * name decides how long a launch takes (fg_kernel_duration_ns).  The same
 * (module, name) or (library, name) always yields the same handle.
 *
 * Objects are never freed, only unregistered on unload, because captured
 * graphs keep pointers to function names.
 */
#include "fg_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FG_DEFAULT_KERNEL_NS 5000
#define FG_UNSCALED_PREFIX   "ncclDevKernel_"

typedef struct fg_module fg_module;
typedef struct fg_library fg_library;

typedef struct fg_func {
    char *name;
    fg_module *mod;
} fg_func;

struct fg_module {
    fg_ctx *ctx;
    fg_library *lib; /* owning library, for cuLibraryGetModule modules */
    fg_func **funcs;
    size_t nfuncs, capfuncs;
};

typedef struct fg_kernel {
    char *name;
    fg_library *lib;
    fg_func *func; /* cuKernelGetFunction's answer, made on first request */
} fg_kernel;

struct fg_library {
    fg_module *mod;
    fg_kernel **kernels;
    size_t nkernels, capkernels;
};

/*
 * "<anything>__<N>us" lasts N microseconds, "<anything>__<N>ns" N
 * nanoseconds, anything else 5 us; FAKEGPU_KERNEL_SCALE multiplies the
 * result except for NCCL device kernels, whose simulated collectives own
 * their timing.
 */
int64_t fg_kernel_duration_ns(const char *name)
{
    int64_t ns = FG_DEFAULT_KERNEL_NS;
    size_t n = strlen(name);
    if (n > 4) {
        const char *unit = name + n - 2;
        int64_t mult = strcmp(unit, "us") == 0 ? 1000 : strcmp(unit, "ns") == 0 ? 1 : 0;
        const char *p = unit;
        while (p > name && isdigit((unsigned char)p[-1]))
            p--;
        if (mult && p < unit && p - name >= 2 && p[-1] == '_' && p[-2] == '_') {
            errno = 0;
            unsigned long long v = strtoull(p, NULL, 10);
            if (errno == 0 && v <= (unsigned long long)(INT64_MAX / 1000))
                ns = (int64_t)v * mult;
        }
    }
    if (strncmp(name, FG_UNSCALED_PREFIX, sizeof FG_UNSCALED_PREFIX - 1) != 0)
        ns = (int64_t)llround((double)ns * fg.kernel_scale);
    return ns;
}

const char *fg_func_name(CUfunction f)
{
    switch (fg_handle_type(f)) {
    case FG_H_FUNC: return ((fg_func *)f)->name;
    case FG_H_KERNEL: /* CUDA 12 lets a CUkernel stand for a CUfunction */
        return ((fg_kernel *)f)->name;
    default: return NULL;
    }
}

static fg_module *fg_module_new(fg_ctx *ctx, fg_library *lib)
{
    fg_module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->ctx = ctx;
    m->lib = lib;
    fg_handle_add(m, FG_H_MODULE);
    return m;
}

static fg_func *fg_module_func(fg_module *m, const char *name)
{
    for (size_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0)
            return m->funcs[i];
    fg_func *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(name)) ||
        !fg_grow((void **)&m->funcs, &m->capfuncs, m->nfuncs + 1, sizeof *m->funcs)) {
        if (f)
            free(f->name);
        free(f);
        return NULL;
    }
    f->mod = m;
    m->funcs[m->nfuncs++] = f;
    fg_handle_add(f, FG_H_FUNC);
    return f;
}

/* ------------------------------------------------------------- modules */

static CUresult fg_module_load(CUmodule *module, const void *image)
{
    FG_ENTER();
    fg_ctx *c;
    if (!module || !image)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fg_module *m = fg_module_new(c, NULL);
    if (!m)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    *module = (CUmodule)m;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    return fg_module_load(module, fname);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    return fg_module_load(module, image);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return fg_module_load(module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return fg_module_load(module, fatCubin);
}

static void fg_module_unregister(fg_module *m)
{
    for (size_t i = 0; i < m->nfuncs; i++)
        fg_handle_del(m->funcs[i]);
    fg_handle_del(m);
    fg_retire(m);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    FG_ENTER();
    fg_module *m = (fg_module *)hmod;
    if (fg_handle_type(m) != FG_H_MODULE || m->lib)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_module_unregister(m);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    FG_ENTER();
    if (!hfunc || !name)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_handle_type(hmod) != FG_H_MODULE)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_func *f = fg_module_func((fg_module *)hmod, name);
    if (!f)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    *hfunc = (CUfunction)f;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    FG_ENTER();
    if (!mode)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    *mode = CU_MODULE_EAGER_LOADING;
    FG_RETURN(CUDA_SUCCESS);
}

/* ----------------------------------------------------------- libraries */

static CUresult fg_library_load(CUlibrary *library, const void *code)
{
    FG_ENTER();
    if (!library || !code)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_library *l = calloc(1, sizeof *l);
    if (!l)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    fg_handle_add(l, FG_H_LIBRARY);
    *library = (CUlibrary)l;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return fg_library_load(library, code);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return fg_library_load(library, fileName);
}

static fg_library *fg_library_get(CUlibrary h)
{
    return fg_handle_type(h) == FG_H_LIBRARY ? (fg_library *)h : NULL;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    FG_ENTER();
    fg_library *l = fg_library_get(library);
    if (!l)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    for (size_t i = 0; i < l->nkernels; i++)
        fg_handle_del(l->kernels[i]);
    if (l->mod)
        fg_module_unregister(l->mod);
    fg_handle_del(l);
    fg_retire(l);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    FG_ENTER();
    if (!pKernel || !name)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_library *l = fg_library_get(library);
    if (!l)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    for (size_t i = 0; i < l->nkernels; i++) {
        if (strcmp(l->kernels[i]->name, name) == 0) {
            *pKernel = (CUkernel)l->kernels[i];
            FG_RETURN(CUDA_SUCCESS);
        }
    }
    fg_kernel *k = calloc(1, sizeof *k);
    if (!k || !(k->name = strdup(name)) ||
        !fg_grow((void **)&l->kernels, &l->capkernels, l->nkernels + 1, sizeof *l->kernels)) {
        if (k)
            free(k->name);
        free(k);
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    k->lib = l;
    l->kernels[l->nkernels++] = k;
    fg_handle_add(k, FG_H_KERNEL);
    *pKernel = (CUkernel)k;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    FG_ENTER();
    fg_library *l = fg_library_get(lib);
    if (!count)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!l)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *count = (unsigned)l->nkernels; /* the kernels asked for so far */
    FG_RETURN(CUDA_SUCCESS);
}

/* Locked.  Libraries are context-independent; their module binds to the
 * context current when it is first needed. */
static fg_module *fg_library_module(fg_library *l)
{
    if (!l->mod)
        l->mod = fg_module_new(fg_current_ctx(), l);
    return l->mod;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    FG_ENTER();
    fg_library *l = fg_library_get(library);
    if (!pMod)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!l)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_module *m = fg_library_module(l);
    if (!m)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    *pMod = (CUmodule)m;
    FG_RETURN(CUDA_SUCCESS);
}

static fg_kernel *fg_kernel_get(CUkernel h)
{
    return fg_handle_type(h) == FG_H_KERNEL ? (fg_kernel *)h : NULL;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    FG_ENTER();
    fg_kernel *k = fg_kernel_get(kernel);
    if (!pFunc)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!k)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (!k->func) {
        fg_module *m = fg_library_module(k->lib);
        if (!m || !(k->func = fg_module_func(m, k->name)))
            FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    *pFunc = (CUfunction)k->func;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    FG_ENTER();
    fg_kernel *k = fg_kernel_get(kernel);
    if (!pLib)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!k)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *pLib = (CUlibrary)k->lib;
    FG_RETURN(CUDA_SUCCESS);
}

/* ------------------------------------------------------- names and attrs */

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    FG_ENTER();
    if (!name)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    const char *n = fg_func_name(hfunc);
    if (!n)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *name = n;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
    FG_ENTER();
    fg_kernel *k = fg_kernel_get(hfunc);
    if (!name)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!k)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *name = k->name;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    FG_ENTER();
    if (!hmod)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_handle_type(hfunc) != FG_H_FUNC)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *hmod = (CUmodule)((fg_func *)hfunc)->mod;
    FG_RETURN(CUDA_SUCCESS);
}

/* Plausible values for a small sm_90 kernel. */
static int fg_func_attr_value(CUfunction_attribute attrib)
{
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: return 49152;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return -1;
    default: return 0;
    }
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    FG_ENTER();
    if (!pi || attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_func_name(hfunc))
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *pi = fg_func_attr_value(attrib);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
    FG_ENTER();
    if (!pi || attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_kernel_get(kernel))
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *pi = fg_func_attr_value(attrib);
    FG_RETURN(CUDA_SUCCESS);
}

/* Setters accept and forget: nothing here depends on them. */
CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)value;
    FG_ENTER();
    if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    FG_RETURN(fg_func_name(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                      CUdevice dev)
{
    (void)val;
    FG_ENTER();
    if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    FG_RETURN(fg_kernel_get(kernel) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    FG_ENTER();
    FG_RETURN(fg_func_name(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}
