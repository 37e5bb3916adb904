/*
 * Threads and their rings: the thread-local lookup, the registry the writer
 * scans, thread exit, and start/stop of the whole recorder. The fast path
 * (ct_thread_ring, ct_emit) is inline in recorder.h.
 */
#include "src/recorder_int.h"

#include "src/live.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "src/config.h"

#define CT_RING_DEAD ((struct ct_ring *)1) /* thread exiting: stop recording */

struct ct_rec_state ct_rec = {.file_slot = -1};
struct ct_strtab ct_strings;
__thread int ct_tls_guard __attribute__((tls_model("initial-exec")));
__thread struct ct_ring *ct_tls_ring __attribute__((tls_model("initial-exec")));

static void count_no_buffer(void)
{
    atomic_fetch_add_explicit(&ct_rec.no_buffer_drops, 1, memory_order_relaxed);
}

/* pthread key destructor: the thread is going away; hand its ring over. */
static void thread_exit(void *arg)
{
    struct ct_ring *r = arg;
    ct_tls_ring = CT_RING_DEAD;
    if (r)
        atomic_store_explicit(&r->state, CT_RING_EXITED, memory_order_release);
}

struct ct_ring *ct_thread_ring_slow(void)
{
    if (!atomic_load_explicit(&ct_rec.running, memory_order_acquire))
        return NULL;
    if (ct_tls_ring == CT_RING_DEAD) {
        count_no_buffer();
        return NULL;
    }
    /* mmap and gettid may set errno; the caller's caller must not see it. */
    int saved = errno;
    struct ct_ring *r = ct_thread_ring_register();
    errno = saved;
    return r;
}

struct ct_ring *ct_thread_ring_register(void)
{
    if ((uintptr_t)ct_tls_ring > 1)
        return ct_tls_ring;
    /* First record of this thread: map its ring (in the live mapping when
     * there is one, so that its records outlive a SIGKILL) and publish it. */
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    struct ct_ring *r = ct_live_ring_new(ct_rec.ring_bytes, tid);
    if (!r)
        r = ct_ring_create(ct_rec.ring_bytes, tid);
    if (!r) {
        ct_tls_ring = CT_RING_DEAD;
        count_no_buffer();
        return NULL;
    }
    for (unsigned i = 0; i < CT_MAX_RINGS; i++) {
        struct ct_ring *expected = NULL;
        if (atomic_compare_exchange_strong(&ct_rec.rings[i], &expected, r)) {
            unsigned hwm = atomic_load(&ct_rec.nrings_hwm);
            while (hwm < i + 1 && !atomic_compare_exchange_weak(&ct_rec.nrings_hwm, &hwm, i + 1))
                ;
            ct_tls_ring = r;
            pthread_setspecific(ct_rec.exit_key, r);
            return r;
        }
    }
    ct_ring_destroy(r);
    ct_tls_ring = CT_RING_DEAD;
    count_no_buffer();
    return NULL;
}

void ct_rings_reset(void)
{
    for (unsigned i = 0; i < CT_MAX_RINGS; i++) {
        struct ct_ring *r = atomic_exchange(&ct_rec.rings[i], NULL);
        ct_ring_destroy(r);
    }
    atomic_store(&ct_rec.nrings_hwm, 0);
}

int ct_recorder_start(const struct ct_recorder_config *cfg, const struct ct_meta_kv *meta,
                      size_t nmeta)
{
    if (atomic_load(&ct_rec.running))
        return -EALREADY;
    ct_clock_init(cfg->clock);
    ct_rec.ring_bytes = cfg->ring_bytes ? cfg->ring_bytes : (size_t)1 << 20;
    ct_rec.flush_ms = cfg->flush_ms ? cfg->flush_ms : CT_FLUSH_MS_DEFAULT;
    ct_rec.zstd_level = cfg->zstd_level;
    uint32_t max_strings = cfg->max_strings ? cfg->max_strings : 1u << 20;
    /* A restart after stop (tests, on-demand capture) starts a new file with
     * a new string table; ids of the old file mean nothing in the new one. */
    if (ct_strings.slots)
        ct_strtab_destroy(&ct_strings);
    size_t string_bytes = cfg->string_bytes ? cfg->string_bytes : (size_t)64 << 20;
    int rc = ct_strtab_init(&ct_strings, max_strings, string_bytes);
    if (rc)
        return rc;
    ct_rec.str_emitted = calloc((size_t)max_strings / 8 + 1, 1);
    if (!ct_rec.str_emitted) {
        rc = -ENOMEM;
        goto fail_strings;
    }
    ct_rec.str_emitted[0] = 1; /* id 0 is "" and never defined */
    ct_rec.str_scan_from = 1;
    rc = pthread_key_create(&ct_rec.exit_key, thread_exit);
    if (rc) {
        rc = -rc;
        goto fail_bitmap;
    }
    rc = ct_writer_open(cfg, meta, nmeta);
    if (rc)
        goto fail_key;
    pthread_mutex_init(&ct_rec.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ct_rec.cv, &ca);
    pthread_cond_init(&ct_rec.done_cv, &ca);
    pthread_condattr_destroy(&ca);
    ct_rec.stop_req = 0;
    atomic_store(&ct_rec.running, 1);
    rc = ct_writer_spawn();
    if (rc) {
        atomic_store(&ct_rec.running, 0);
        rc = -rc;
        ct_writer_close();
        goto fail_key;
    }
    return 0;
fail_key:
    pthread_key_delete(ct_rec.exit_key);
fail_bitmap:
    free(ct_rec.str_emitted);
    ct_rec.str_emitted = NULL;
fail_strings:
    ct_strtab_destroy(&ct_strings);
    return rc;
}

static void deadline_in(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int ct_recorder_flush(unsigned timeout_ms)
{
    if (!atomic_load(&ct_rec.running))
        return -ENODEV;
    struct timespec dl;
    deadline_in(&dl, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&ct_rec.mu);
    uint64_t want = ++ct_rec.flush_req;
    pthread_cond_signal(&ct_rec.cv);
    while (ct_rec.flush_done < want && rc == 0)
        rc = pthread_cond_timedwait(&ct_rec.done_cv, &ct_rec.mu, &dl);
    pthread_mutex_unlock(&ct_rec.mu);
    return rc ? -ETIMEDOUT : 0;
}

int ct_recorder_stop(unsigned timeout_ms)
{
    int expected = 1;
    if (!atomic_compare_exchange_strong(&ct_rec.running, &expected, 0))
        return atomic_load(&ct_rec.write_error);
    pthread_mutex_lock(&ct_rec.mu);
    ct_rec.stop_req = 1;
    pthread_cond_signal(&ct_rec.cv);
    pthread_mutex_unlock(&ct_rec.mu);
    struct timespec rt;
    /* pthread_timedjoin_np takes CLOCK_REALTIME. */
    clock_gettime(CLOCK_REALTIME, &rt);
    rt.tv_sec += timeout_ms / 1000 + 1;
    if (pthread_timedjoin_np(ct_rec.thread, NULL, &rt) != 0) {
        /* The writer is stuck (e.g. in a blocked write): leave it, never
         * hold the job's exit hostage. */
        return -ETIMEDOUT;
    }
    free(ct_rec.str_emitted);
    ct_rec.str_emitted = NULL;
    pthread_key_delete(ct_rec.exit_key);
    return atomic_load(&ct_rec.write_error);
}

int ct_recorder_running(void)
{
    return atomic_load_explicit(&ct_rec.running, memory_order_acquire);
}

void ct_recorder_pause_writer(int paused)
{
    atomic_store(&ct_rec.paused, paused);
}

void ct_recorder_stats(struct ct_recorder_stats *s)
{
    s->chunks = atomic_load(&ct_rec.chunks);
    s->records = atomic_load(&ct_rec.records);
    s->dropped = atomic_load(&ct_rec.dropped);
    s->bytes_written = atomic_load(&ct_rec.bytes_written);
    s->write_error = atomic_load(&ct_rec.write_error);
    s->file_created = ct_rec.file_created;
}

void ct_emit_error(const char *what, int64_t code)
{
    uint64_t f[CT_ERROR_NFIELDS];
    f[CT_ERROR_TIME] = ct_clock_now();
    f[CT_ERROR_WHAT] = ct_intern(what);
    f[CT_ERROR_CODE] = (uint64_t)code;
    ct_emit(CT_REC_ERROR, 0, f, CT_ERROR_NFIELDS);
}

/* The writer of this process, alive, and not the caller: whom a signal
 * handler may ask for something. */
static int writer_answers(void)
{
    return ct_rec.writer_pid == (pid_t)syscall(SYS_getpid) &&
           (pid_t)syscall(SYS_gettid) != ct_rec.writer_tid && !atomic_load(&ct_rec.writer_done);
}

/* Sleeps in 1 ms steps until *what reaches want, at most timeout_ms. */
static int wait_for(_Atomic uint64_t *what, uint64_t want, unsigned timeout_ms)
{
    for (unsigned waited = 0; waited < timeout_ms; waited++) {
        if (atomic_load(what) >= want)
            return 0;
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return atomic_load(what) >= want ? 0 : -ETIMEDOUT;
}

int ct_recorder_flush_async(unsigned timeout_ms)
{
    if (!atomic_load(&ct_rec.running) || !writer_answers())
        return -ENODEV; /* not recording, a forked child without its writer, or the writer */
    uint64_t want = atomic_fetch_add(&ct_rec.async_req, 1) + 1;
    return wait_for(&ct_rec.async_done, want, timeout_ms);
}

int ct_recorder_flush_fatal(int sig, unsigned timeout_ms)
{
    atomic_store(&ct_rec.fatal_ticks, ct_clock_now());
    atomic_store(&ct_rec.fatal_sig, sig);
    return ct_recorder_flush_async(timeout_ms);
}

int ct_recorder_finish_signal(int sig, unsigned timeout_ms)
{
    /* also while ct_recorder_stop is under way (running is 0 then): its
     * footer is as good, and worth the wait */
    if (!writer_answers())
        return -ENODEV;
    int zero = 0;
    if (atomic_compare_exchange_strong(&ct_rec.fatal_sig, &zero, sig))
        atomic_store(&ct_rec.fatal_ticks, ct_clock_now());
    atomic_store(&ct_rec.finish_req, 1);
    for (unsigned waited = 0; waited < timeout_ms; waited++) {
        if (atomic_load(&ct_rec.writer_done))
            return 0;
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&ct_rec.writer_done) ? 0 : -ETIMEDOUT;
}

void ct_recorder_lineage(int (*ancestor_gpu)(void))
{
    ct_rec.ancestor_gpu = ancestor_gpu;
}

void ct_recorder_drop_inherited(void)
{
    ct_file_drop_inherited();
    /* the forking thread's ring, when it is in the parent's live mapping, is
     * the parent's: this child must neither write it nor mark it exited */
    struct ct_ring *r = ct_tls_ring;
    if ((uintptr_t)r > 1 && r->slot >= 0) {
        ct_tls_ring = NULL;
        pthread_setspecific(ct_rec.exit_key, NULL);
    }
    ct_live_drop_inherited();
}

int ct_recorder_restart_after_fork(const struct ct_recorder_config *cfg,
                                   const struct ct_meta_kv *meta, size_t nmeta)
{
    /* Only this thread exists now; the parent's writer does not. Its locks
     * may have been held at fork time, so they are made anew. */
    atomic_store(&ct_rec.running, 0);
    pthread_mutex_init(&ct_rec.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ct_rec.cv, &ca);
    pthread_cond_init(&ct_rec.done_cv, &ca);
    pthread_condattr_destroy(&ca);
    struct ct_ring *mine = (uintptr_t)ct_tls_ring > 1 ? ct_tls_ring : NULL;
    if (mine && mine->slot >= 0) {
        /* in the parent's live mapping: the parent's, not reused here */
        mine = NULL;
        ct_tls_ring = NULL;
        pthread_setspecific(ct_rec.exit_key, NULL);
    }
    for (unsigned i = 0; i < CT_MAX_RINGS; i++) {
        struct ct_ring *r = atomic_exchange(&ct_rec.rings[i], NULL);
        if (r && r != mine && r->slot >= 0)
            ct_live_ring_forget(r); /* the parent's, shared: only our view of it goes */
        else if (r && r != mine)
            ct_ring_destroy(r); /* threads that do not exist in the child */
    }
    ct_live_drop_inherited();
    atomic_store(&ct_rec.nrings_hwm, 0);
    if (mine) {
        /* The parent's records in it belong to the parent's trace. */
        atomic_store(&mine->head, 0);
        atomic_store(&mine->tail, 0);
        mine->cached_tail = 0;
        mine->limit = 0;
        atomic_store(&mine->dropped, 0);
        mine->dropped_reported = 0;
        mine->tid = (uint32_t)syscall(SYS_gettid);
        atomic_store(&ct_rec.rings[0], mine);
        atomic_store(&ct_rec.nrings_hwm, 1);
    }
    ct_file_drop_inherited(); /* the parent's file: not ours to finish */
    ZSTD_freeCCtx(ct_rec.cctx);
    ct_rec.cctx = NULL;
    if (ct_rec.str_emitted) {
        memset(ct_rec.str_emitted, 0, (size_t)ct_strings.max_ids / 8 + 1);
        ct_rec.str_emitted[0] = 1;
    }
    ct_rec.str_scan_from = 1;
    ct_rec.next_seq = 0;
    ct_rec.stop_req = 0;
    ct_rec.flush_req = ct_rec.flush_done = 0;
    ct_rec.no_buffer_reported = atomic_load(&ct_rec.no_buffer_drops);
    atomic_store(&ct_rec.chunks, 0);
    atomic_store(&ct_rec.records, 0);
    atomic_store(&ct_rec.dropped, 0);
    atomic_store(&ct_rec.bytes_written, 0);
    atomic_store(&ct_rec.async_req, 0);
    atomic_store(&ct_rec.async_done, 0);
    atomic_store(&ct_rec.paused, 0);
    ct_rec.ring_bytes = cfg->ring_bytes ? cfg->ring_bytes : ct_rec.ring_bytes;
    int rc = ct_writer_open(cfg, meta, nmeta);
    if (rc)
        return rc;
    atomic_store(&ct_rec.running, 1);
    rc = ct_writer_spawn();
    if (rc) {
        atomic_store(&ct_rec.running, 0);
        ct_writer_close();
        return -rc;
    }
    return 0;
}
