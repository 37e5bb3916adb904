/*
 * A small Itanium C++ ABI demangler for kernel names in reports: it renders
 * the qualified function name and elides template arguments ("<...>") and
 * parameters, which is what a kernel table needs to group instances
 * (`_ZN2at6native18elementwise_kernelILi128ELi4EZ...EEvT_` ->
 * "at::native::elementwise_kernel<...>"). No C++ runtime dependency.
 */
#ifndef CT_DEMANGLE_H
#define CT_DEMANGLE_H

#include <stddef.h>

/*
 * Writes the readable form of `name` into out (always NUL-terminated).
 * Names that are not mangled (no "_Z" prefix, e.g. extern "C" kernels) or
 * that this subset cannot parse are copied unchanged. Returns out.
 * Thread-safe (no state).
 */
char *ct_demangle(const char *name, char *out, size_t outlen);

#endif
