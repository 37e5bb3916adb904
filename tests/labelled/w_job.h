/*
 * Shared by the labelled job's files: w_job.c (the launcher, the ranks and
 * most cases, whose schedules its top comment states) and w_job_graphs.c
 * (the cases that replay CUDA graphs: serve, graph).
 */
#ifndef W_JOB_H
#define W_JOB_H

#include <cuda.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_job: %s failed: %d\n", #x, rc_);                                    \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

struct rank {
    int r, n;
    CUmodule mod;
    CUstream c, m;    /* compute, communication */
    CUdeviceptr a, b; /* 16 MiB each */
    ncclComm_t comm;  /* NULL for one rank */
};

/* CLOCK_MONOTONIC, ns. */
int64_t wj_now_ns(void);
/* Launches the module's kernel `name` (its duration in its name) on s. */
void wj_kernel(struct rank *k, CUstream s, const char *name);
/* Step i's ProfilerStep#i range opens and closes (none with W_JOB_NO_STEPS=1). */
void wj_step_begin(int i);
void wj_step_pop(void);
/* W_JOB_STEPS, else the case's own count dflt. */
int wj_steps(int dflt);

/* w_job_graphs.c */
void wj_serve(struct rank *k);
void wj_graph(struct rank *k);

#endif
