/*
 * What the Chrome trace-event writer (decoder/export/chrome.c) shares with
 * its counter tracks (export/chrome_counters.c) and NCCL's proxy tracks
 * (export/chrome_nccl.c): the writer's state.
 */
#ifndef CT_EXPORT_CHROME_INT_H
#define CT_EXPORT_CHROME_INT_H

#include <stdint.h>
#include <stdio.h>

#include "decoder/export/export.h"
#include "decoder/read/tracefile.h"

#define CT_GPU_TID(dev, stream)                                                                    \
    (0x40000000u + ((uint32_t)(dev)&0xff) * 0x100000u + ((uint32_t)(stream)&0xfffff))
/* A stream's NCCL ops (their plugin or NCCL-record intervals) have a track
 * of their own beside the stream's kernels: the kernel NCCL launched for an
 * op is on the stream, and the op's own interval would overlap it there.
 * Track key: the stream with this bit; tid: the stream's with bit 31. */
#define CT_NCCL_TRACK          (1ull << 40)
#define CT_TRACK_TID(dev, key) (CT_GPU_TID(dev, key) | ((key)&CT_NCCL_TRACK ? 0x80000000u : 0))

/* GPU intervals of one stream can overlap (a receive waiting for its peer
 * beside a kernel on the simulated device, graph replays, clock error);
 * Perfetto drops a slice that overlaps its track's previous one without
 * nesting, so those go to extra "lane" tracks of the stream. */
#define CT_LANES 4

struct track {
    int64_t dev;
    uint64_t stream;
    int64_t lane_end[CT_LANES];
    int named; /* lanes whose thread_name is written (lane 0 by thread_meta) */
};

struct cdelta {
    int64_t ts;
    uint32_t series; /* index into tracks; UINT32_MAX: the rank's NCCL bandwidth */
    int32_t dq;      /* queue depth change */
    double bw;       /* bandwidth change, GB/s */
};

struct synth {
    int64_t s, e;
    size_t rec; /* the NCCL record */
};

struct ct_chrome_writer {
    FILE *f;
    struct ct_trace *t;
    const struct ct_export_src *src;
    uint64_t flow_base;
    int64_t shift;
    struct track *tracks;
    size_t ntracks, tcap;
    struct cdelta *cd;
    size_t ncd, cdcap;
    const struct ct_export_sel *sel; /* what to write (--ranks, --window) */
    int *first;                      /* no event written yet in the file */
    int later_proc;                  /* not the rank's first trace: counter names say the pid */
    int nccl_proxy;                  /* export --nccl-proxy: the proxy tracks */
    size_t *info;                    /* NCCL_INFO records by correlation id (chrome_nccl.c) */
    size_t ninfo;
    size_t *tags; /* NCCL_TAG records by correlation id (chrome_nccl.c) */
    size_t ntags;
};

/* Whether the span [s, e] of trace ns lies in the selected window. */
static inline int ct_chrome_in(const struct ct_chrome_writer *w, int64_t s, int64_t e)
{
    return ct_export_in(w->sel, s + w->shift, e + w->shift);
}

/* Starts an event: {"ph":..,"pid":..,"tid":..,"ts":..,"name":.. */
void ct_chrome_ev(struct ct_chrome_writer *w, const char *ph, uint32_t tid, int64_t ts_trace,
                  const char *name);

/* ns since time zero as the file's µs with three decimals (exact ns). */
void ct_chrome_ts(FILE *f, int64_t ns);

/* chrome_critical_path.c: x->cp's slices and flows, after every trace's
 * events (first: no event written yet). 0, -ENOMEM or -EIO. */
int ct_chrome_critical_path(FILE *f, const struct ct_export_job *x, int *first);

/* chrome_counters.c: the trace's counter tracks, written after its
 * other events: NCCL bandwidth and queue depths from w->cd, then the
 * health counters. */
void ct_chrome_counters(struct ct_chrome_writer *w);
void ct_chrome_health_counters(struct ct_chrome_writer *w);

/* chrome_nccl.c: w->info, the trace's NCCL_INFO records by correlation id
 * (0 or -ENOMEM; the caller frees w->info); the descriptor of the op of
 * correlation id corr, or NULL; with export --nccl-proxy, the proxy
 * tracks of the trace, written after its other events (0 or -ENOMEM). */
int ct_chrome_nccl_index(struct ct_chrome_writer *w);
const struct ct_record *ct_chrome_nccl_info(const struct ct_chrome_writer *w, uint64_t corr);
int ct_chrome_nccl_proxy(struct ct_chrome_writer *w);
/* chrome_nccl.c: the user tag (profiler ABI v7) of the op of correlation
 * id corr into *tag: 1, or 0 when it has none (w->tags, built by
 * ct_chrome_nccl_index with w->info; the caller frees both). */
int ct_chrome_nccl_tag(const struct ct_chrome_writer *w, uint64_t corr, uint64_t *tag);

#endif
