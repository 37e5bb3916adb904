/*
 * fn_kphases.c - the fake NCCL's kernel channels: when each channel of an
 * op's kernel starts and stops on the GPU (README.md, "Kernel channels",
 * is the contract the tests compare against).
 *
 * Default: every channel starts with the kernel and stops at the op's end,
 * as before. FAKEGPU_NCCL_CH_SETUP_US="S[:G]": channel c starts S + c x G
 * microseconds after its kernel (a kernel's launch and setup before its
 * first channel runs, and the channels' start spread); the transfer then
 * begins when the last channel has started on the latest rank, so the
 * op's transfer adds S + (channels - 1) x G. FAKEGPU_NCCL_SLOW_CHANNEL=
 * "C:F" (F >= 1): channel C of every ring op (AllReduce, AllGather,
 * ReduceScatter) carries its share F times slower on every rank (a ring's
 * channel is a pipeline through every rank: one slow hop paces it on
 * all), so it stops (F - 1) x K x D after the others (K steps of D, the
 * ring's schedule in fn_links.c) and the op ends with it. The other
 * channels, and every channel's proxy steps, keep the ring's schedule,
 * ending K x D after the transfer began. FAKEGPU_NCCL_SLOW_SEQ="M:R:US":
 * every kernel op whose sequence number is R modulo M carries US
 * microseconds more transfer on every rank (with FAKEGPU_NCCL_USER_TAG and
 * FAKEGPU_NCCL_USER_TAG_MOD=M: the ops of one user tag made slower), its
 * channels stopping with it.
 *
 * Nothing here locks: the knobs are read once, before any communicator.
 */
#include "fn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fn_kp_state; /* 0 not read, 1 good, -1 malformed (under fn_kp_once) */
static double fn_kp_setup_ns, fn_kp_stagger_ns, fn_kp_slow_factor = 1;
static int fn_kp_slow_ch = -1;
static unsigned long long fn_kp_seq_mod, fn_kp_seq_rem; /* FAKEGPU_NCCL_SLOW_SEQ; mod 0: none */
static double fn_kp_seq_extra_ns;
static pthread_once_t fn_kp_once = PTHREAD_ONCE_INIT;

/* "A[:B]" of non-negative numbers; false when malformed. */
static bool fn_kp_pair(const char *v, double *a, double *b, bool b_needed)
{
    char *end;
    *a = strtod(v, &end);
    if (end == v || *a < 0 || !isfinite(*a))
        return false;
    if (*end == 0)
        return !b_needed;
    if (*end != ':')
        return false;
    const char *q = end + 1;
    *b = strtod(q, &end);
    return end != q && *end == 0 && *b >= 0 && isfinite(*b);
}

static void fn_kp_read(void)
{
    bool ok = true;
    const char *v = getenv("FAKEGPU_NCCL_CH_SETUP_US");
    if (v && *v) {
        double s = 0, g = 0;
        ok = fn_kp_pair(v, &s, &g, false);
        fn_kp_setup_ns = s * 1e3, fn_kp_stagger_ns = g * 1e3;
    }
    v = getenv("FAKEGPU_NCCL_SLOW_CHANNEL");
    if (ok && v && *v) {
        double c = -1, f = 1;
        ok = fn_kp_pair(v, &c, &f, true) && c == floor(c) && c < FN_MAX_CHANNELS && f >= 1;
        fn_kp_slow_ch = ok ? (int)c : -1;
        fn_kp_slow_factor = ok ? f : 1;
    }
    v = getenv("FAKEGPU_NCCL_SLOW_SEQ");
    if (ok && v && *v) {
        double us = -1;
        char tail;
        ok = sscanf(v, "%llu:%llu:%lf%c", &fn_kp_seq_mod, &fn_kp_seq_rem, &us, &tail) == 3 &&
             fn_kp_seq_mod > 0 && fn_kp_seq_rem < fn_kp_seq_mod && us >= 0 && isfinite(us);
        fn_kp_seq_extra_ns = ok ? us * 1e3 : 0;
        if (!ok)
            fn_kp_seq_mod = 0;
    }
    fn_kp_state = ok ? 1 : -1;
}

bool fn_kphases_load(void)
{
    pthread_once(&fn_kp_once, fn_kp_read);
    if (fn_kp_state < 0)
        fn_set_error("fake NCCL: FAKEGPU_NCCL_CH_SETUP_US wants US[:US], "
                     "FAKEGPU_NCCL_SLOW_CHANNEL CHANNEL:FACTOR (FACTOR >= 1) and "
                     "FAKEGPU_NCCL_SLOW_SEQ M:R:US (R < M)");
    return fn_kp_state > 0;
}

void fn_kphases_plan(struct fn_op *op)
{
    struct fn_plan *p = &op->plan;
    p->slow_extra_ns = 0;
    if (op->ce || fn_kp_state <= 0)
        return;
    double setup = fn_kp_setup_ns + (fn_prof_channels - 1) * fn_kp_stagger_ns;
    if (p->ksteps > 0 && !p->in_switch && fn_kp_slow_ch >= 0 && fn_kp_slow_ch < fn_prof_channels)
        p->slow_extra_ns = llround((fn_kp_slow_factor - 1) * p->ksteps * p->step_ns);
    op->xfer_ns += llround(setup) + p->slow_extra_ns;
    if (fn_kp_seq_mod && op->seq % fn_kp_seq_mod == fn_kp_seq_rem)
        op->xfer_ns += llround(fn_kp_seq_extra_ns);
}

int64_t fn_kphases_ch_start(const struct fn_launch *l, int ch)
{
    return l->start_ns + llround(fn_kp_setup_ns + ch * fn_kp_stagger_ns);
}

int64_t fn_kphases_ch_stop(const struct fn_op *op, int ch)
{
    return ch == fn_kp_slow_ch ? op->p_end_ns : op->p_end_ns - op->plan.slow_extra_ns;
}
