/*
 * The NVSHMEM wrappers (shim/nvshmem.c) as the dlsym layer sees them.
 */
#ifndef CT_NVSHMEM_H
#define CT_NVSHMEM_H

/* 1 when a dlsym lookup of `name` found `p`, one of our own nvshmem*
 * exports, while no NVSHMEM is in the process: a probe that must fail as
 * it would without us. Not on any hot path (dladdr). */
int ct_shmem_probe_fails(const char *name, void *p);

#endif
