/*
 * On-demand capture. With CUTRACE_START=paused the shim is installed and
 * its trace open, but wrappers pass calls straight through (the state check
 * every wrapper already makes) until a window opens. Windows open and close
 * through a control file the writer thread polls, written by `cutrace
 * start|stop PID` (DIR/.cutrace-control-PID holding "start" or "stop"), and
 * CUTRACE_DURATION closes a window after that many seconds. Each boundary is
 * a recorder metadata record ("capture" = "start" / "stop") at its time, so
 * the decoder knows which spans of time the trace covers.
 *
 * Light mode (CUTRACE_MODE=light) is the same windows on a duty cycle: the
 * first CUTRACE_LIGHT_WINDOW_MS of every CUTRACE_LIGHT_PERIOD_MS of
 * CLOCK_REALTIME, [k*P, k*P + W). Whole windows rather than one kernel in N:
 * every analysis that needs the GPU's busy set (overlap, idle and its split,
 * launch-bound) is exact inside a window and the pause in between costs a
 * paused shim's two loads per call. The realtime phase makes every rank of
 * a job open and close within one writer poll (5 ms) and its clock error of
 * each other, so all ranks capture the same iterations.
 */
#include "shim/capture.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/gpu.h"
#include "shim/shim.h"
#include "src/ownfd.h"

/* The recent windows, for ct_capture_contains (CUPTI delivers records
 * late, but not by 64 windows); a ring, so a light-mode job running for
 * days keeps its checks. */
#define CT_MAX_WINDOWS     64
#define CT_CONTROL_POLL_NS 50000000ull /* 50 ms */

static atomic_int g_active = -1; /* -1 until the first start decides */
static int g_windowed;           /* paused start or a duration: windows matter */
static _Atomic uint64_t g_win_start[CT_MAX_WINDOWS], g_win_stop[CT_MAX_WINDOWS];
static atomic_uint g_nwin;
static uint64_t g_deadline_ns; /* writer thread only */
static uint64_t g_next_poll_ns;
static uint64_t g_light_slot = UINT64_MAX; /* the duty cycle's period last opened */
static int g_light_open;                   /* the open window is the schedule's */
static char g_control[PATH_MAX + 64];

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Light mode: the period the realtime clock is in, and whether it is inside
 * that period's window. */
static int light_due(uint64_t *slot)
{
    uint64_t rt = realtime_ns(), p = (uint64_t)ct_cfg.light_period_ms * 1000000ull;
    *slot = rt / p;
    return rt % p < (uint64_t)ct_cfg.light_window_ms * 1000000ull;
}

int ct_capture_initial_state(void)
{
    int active = atomic_load(&g_active);
    if (active < 0) {
        uint64_t slot;
        active = ct_cfg.light ? light_due(&slot) : !ct_cfg.start_paused;
        if (ct_cfg.light && active) {
            g_light_slot = slot;
            g_light_open = 1;
        }
        atomic_store(&g_active, active);
        g_windowed = ct_cfg.start_paused || ct_cfg.duration_s > 0 || ct_cfg.light;
    }
    return active ? CT_SHIM_ON : CT_SHIM_PAUSED;
}

static void boundary(const char *what, uint64_t ns)
{
    uint64_t f[CT_META_NFIELDS] = {ns, CT_SCOPE_RECORDER, 0, ct_intern("capture"), ct_intern(what)};
    ct_emit(CT_REC_META, CT_RF_NS, f, CT_META_NFIELDS);
}

static void open_window(uint64_t now_ns)
{
    unsigned n = atomic_load(&g_nwin);
    /* a reader of the slot being reused sees either window whole, or a
     * start after the old stop: outside, for one late record at most */
    atomic_store(&g_win_start[n % CT_MAX_WINDOWS], now_ns);
    atomic_store(&g_win_stop[n % CT_MAX_WINDOWS], 0);
    atomic_store(&g_nwin, n + 1);
    atomic_store(&g_active, 1);
    /* CUPTI collects again before the first call can be recorded */
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_activities(1);
    int expected = CT_SHIM_PAUSED;
    atomic_compare_exchange_strong(&ct_shim_state, &expected, CT_SHIM_ON);
    g_deadline_ns = ct_cfg.duration_s ? now_ns + (uint64_t)ct_cfg.duration_s * 1000000000ull : 0;
    boundary("start", now_ns);
}

static void close_window(uint64_t now_ns)
{
    int expected = CT_SHIM_ON;
    atomic_compare_exchange_strong(&ct_shim_state, &expected, CT_SHIM_PAUSED);
    atomic_store(&g_active, 0);
    /* paused kernels run uninstrumented; a kernel still running now may
     * lose its GPU record (counted as untimed by the report) */
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_activities(0);
    /* The stop time is taken once no new call can begin recording: every
     * recorded call starts before it (one in flight may end after it). */
    uint64_t t = ct_clock_ns_now();
    if (t > now_ns)
        now_ns = t;
    unsigned n = atomic_load(&g_nwin);
    if (n > 0)
        atomic_store(&g_win_stop[(n - 1) % CT_MAX_WINDOWS], now_ns);
    g_deadline_ns = 0;
    g_light_open = 0;
    boundary("stop", now_ns);
}

int ct_capture_windowed(void)
{
    return g_windowed;
}

int ct_capture_contains(uint64_t ns)
{
    if (!g_windowed)
        return 1;
    unsigned n = atomic_load(&g_nwin);
    for (unsigned i = n; i > 0 && n - i < CT_MAX_WINDOWS; i--) { /* newest first */
        uint64_t a = atomic_load(&g_win_start[(i - 1) % CT_MAX_WINDOWS]);
        uint64_t b = atomic_load(&g_win_stop[(i - 1) % CT_MAX_WINDOWS]);
        if (ns >= a && (b == 0 || ns <= b))
            return 1;
    }
    return 0;
}

/* Reads and removes the control file, if any: "start" or "stop". */
static void poll_control(uint64_t now_ns)
{
    char cmd[16] = "";
    const char *why;
    long n = ct_own_read_trusted(g_control, cmd, sizeof(cmd), &why);
    if (n == -1)
        return;
    /* removed when ours to remove (the folder lets us), obeyed only when
     * it is ours: in a shared folder another user could plant one (a start
     * in a paused job, a stop in a recording one) */
    unlink(g_control);
    if (n == -2) {
        static int said;
        if (!said++) {
            char what[400];
            snprintf(what, sizeof(what),
                     "cutrace: ignored %.160s: %s (a control file is obeyed only when it is a "
                     "regular file of this process's user, writable by no one else)",
                     g_control, why);
            ct_emit_error(what, -EPERM);
        }
        return;
    }
    if (n <= 0)
        return;
    int active = atomic_load(&g_active) == 1;
    if (!strncmp(cmd, "dump", 4))
        ct_recorder_flight_request(CT_FLIGHT_DUMP_NOW);
    else if (!strncmp(cmd, "start", 5) && !active)
        open_window(now_ns);
    else if (!strncmp(cmd, "stop", 4) && active)
        close_window(now_ns);
}

/* Writer thread, every pass. */
static void tick(uint64_t now_mono)
{
    uint64_t now = ct_clock_ns_now();
    (void)now_mono;
    if (g_deadline_ns && now >= g_deadline_ns && atomic_load(&g_active) == 1)
        close_window(now);
    if (ct_cfg.light) {
        /* the schedule opens each period's window once and closes only its
         * own: `cutrace start` / `stop` still work in between */
        uint64_t slot;
        int due = light_due(&slot), active = atomic_load(&g_active) == 1;
        if (due && !active && slot != g_light_slot) {
            open_window(now);
            g_light_slot = slot;
            g_light_open = 1;
        } else if (!due && active && g_light_open) {
            close_window(now);
        }
    }
    if (now >= g_next_poll_ns) {
        g_next_poll_ns = now + CT_CONTROL_POLL_NS;
        poll_control(now);
    }
}

void ct_capture_started(int after_fork)
{
    snprintf(g_control, sizeof(g_control), "%s/.cutrace-control-%d", ct_cfg.output, (int)getpid());
    if (!g_windowed) {
        /* recording throughout: nothing to mark; the flight recorder still
         * listens for `cutrace dump-now` */
        if (ct_cfg.flight_s)
            ct_writer_tick_add(tick);
        return;
    }
    uint64_t now = ct_clock_ns_now();
    if (atomic_load(&g_active) == 1) {
        if (after_fork) {
            boundary("start", now); /* the child's trace is inside a window */
            g_deadline_ns = 0;
        } else {
            open_window(now); /* running with a duration: the first window */
        }
    }
    ct_writer_tick_add(tick);
}
