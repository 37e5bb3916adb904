/*
 * The writer thread: drains per-thread rings, converts tick times to
 * monotonic ns, encodes one chunk per ring visit, compresses it as one zstd
 * frame and appends it with write(). It is the only thread that touches the
 * file. It may allocate and block (it is not the job's thread); it must never
 * make the job wait: producers that outrun it lose records, counted.
 *
 * With a live mapping (src/live.h) nothing it has taken is lost to a
 * SIGKILL: a ring's space is given back only once the frame holding its
 * records is written (the records stay in the mapping until then), the frame
 * in flight is announced in the mapping's header, and so are the clock
 * conversion and what the file holds so far.
 */
#include "src/recorder_int.h"

#include "src/live.h"
#include "src/ringrec.h"
#include "src/strlog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define CT_CHUNK_MAX_RECORDS 65536u /* keeps a chunk's payload a few MiB at most */
#define CT_SYNC_PERIOD_NS    1000000000ull

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void (*ct_writer_failed)(int err);

/* Appends bytes to the file unless an earlier write failed. On failure the
 * file is cut back to what was written whole (a partial frame would read as
 * damage), and whoever asked is told once. */
static int emit_bytes(const uint8_t *p, size_t n)
{
    if (ct_flight_on())
        return ct_flight_keep(p, n, ct_clock_mono_ns());
    if (atomic_load(&ct_rec.write_error))
        return -EIO;
    int rc = ct_file_write(p, n);
    if (rc) {
        int zero = 0;
        if (atomic_compare_exchange_strong(&ct_rec.write_error, &zero, rc)) {
            ct_file_cut(atomic_load(&ct_rec.bytes_written));
            if (ct_writer_failed)
                ct_writer_failed(rc);
        }
        return rc;
    }
    atomic_fetch_add(&ct_rec.bytes_written, n);
    ct_live_progress(atomic_load(&ct_rec.bytes_written), ct_rec.next_seq,
                     atomic_load(&ct_rec.chunks), atomic_load(&ct_rec.records),
                     atomic_load(&ct_rec.dropped));
    return 0;
}

/* The ring whose records the chunk being built holds, and up to where:
 * its tail moves there once the chunk is written (or given up), not
 * before, so that a SIGKILL in between finds them in the live mapping. */
/* The conversion's knots (clock.h): the writer's alone, as its conversion. */
static struct ct_clock_hist g_clock_hist;
static struct ct_ring *g_src;
static uint64_t g_src_pos;

static void release_src(void)
{
    if (g_src && atomic_load_explicit(&g_src->tail, memory_order_relaxed) < g_src_pos)
        atomic_store_explicit(&g_src->tail, g_src_pos, memory_order_release);
}

/* Defines, in the chunk being built, every ready string not yet in the file. */
static int add_new_strings(void)
{
    uint32_t limit = ct_strtab_limit(&ct_strings);
    int contiguous = 1;
    for (uint32_t id = ct_rec.str_scan_from; id < limit; id++) {
        if (ct_rec.str_emitted[id / 8] & (1u << (id % 8))) {
            if (contiguous)
                ct_rec.str_scan_from = id + 1;
            continue;
        }
        const char *s;
        uint32_t len;
        if (ct_strtab_get(&ct_strings, id, &s, &len) != 0) {
            contiguous = 0; /* still being defined by its thread */
            continue;
        }
        int rc = ct_chunk_add_string(&ct_rec.enc, id, s, len);
        if (rc)
            return rc;
        ct_rec.str_emitted[id / 8] |= (uint8_t)(1u << (id % 8));
        if (contiguous)
            ct_rec.str_scan_from = id + 1;
    }
    return 0;
}

/* Under CUTRACE_MAX_POLICY=stop, the bound was reached: one last small
 * chunk (past the bound, like the footer) says so. */
static void stopped_note(uint32_t lost)
{
    char what[200];
    snprintf(what, sizeof(what),
             "CUTRACE_MAX_MB=%llu reached: recording stopped here (CUTRACE_MAX_POLICY=stop); "
             "%u and later records are counted as dropped",
             (unsigned long long)(ct_rec.cap_max >> 20), lost);
    uint32_t id = ct_intern(what);
    uint64_t now = ct_clock_mono_ns();
    ct_chunk_begin(&ct_rec.enc, (uint64_t)ct_rec.writer_tid, ct_rec.next_seq++, now);
    uint64_t f[CT_ERROR_NFIELDS] = {now, id, (uint64_t)(int64_t)-EFBIG};
    if (ct_chunk_add_string(&ct_rec.enc, id, what, (uint32_t)strlen(what)) ||
        ct_chunk_add_record(&ct_rec.enc, CT_REC_ERROR, f, CT_ERROR_NFIELDS) ||
        ct_chunk_finish(&ct_rec.enc, &ct_rec.payload) ||
        ct_buf_reserve(&ct_rec.frame, ZSTD_compressBound(ct_rec.payload.len)))
        return;
    size_t z = ZSTD_compress2(ct_rec.cctx, ct_rec.frame.p, ct_rec.frame.cap, ct_rec.payload.p,
                              ct_rec.payload.len);
    if (!ZSTD_isError(z) && emit_bytes(ct_rec.frame.p, z) == 0) {
        atomic_fetch_add(&ct_rec.chunks, 1);
        atomic_fetch_add(&ct_rec.records, 1);
        if (id)
            ct_rec.str_emitted[id / 8] |= (uint8_t)(1u << (id % 8));
    }
}

/* Finishes the chunk being built and writes it as one zstd frame. */
static int write_chunk(void)
{
    if (ct_rec.enc.nrecords == 0 && ct_rec.enc.nstrings == 0)
        return 0;
    ct_cap_before_chunk();
    if (ct_rec.cap_note) {
        /* the trace says what CUTRACE_MAX_MB took away */
        char what[160];
        snprintf(what, sizeof(what),
                 "CUTRACE_MAX_MB: dropped the oldest frames (%llu bytes) to stay within the bound",
                 (unsigned long long)ct_rec.cap_note);
        ct_rec.cap_note = 0;
        uint64_t f[CT_ERROR_NFIELDS] = {ct_rec.enc.base_time, ct_intern(what), -EFBIG};
        if (ct_chunk_add_record(&ct_rec.enc, CT_REC_ERROR, f, CT_ERROR_NFIELDS) != 0)
            atomic_fetch_add(&ct_rec.dropped, 1);
    }
    int rc = add_new_strings();
    if (!rc)
        rc = ct_chunk_finish(&ct_rec.enc, &ct_rec.payload);
    if (!rc)
        rc = ct_buf_reserve(&ct_rec.frame, ZSTD_compressBound(ct_rec.payload.len));
    if (rc)
        return rc;
    size_t z = ZSTD_compress2(ct_rec.cctx, ct_rec.frame.p, ct_rec.frame.cap, ct_rec.payload.p,
                              ct_rec.payload.len);
    if (ZSTD_isError(z))
        return -EIO;
    uint32_t nrec = ct_rec.enc.nrecords;
    ct_rec.next_seq++;
    if (!ct_cap_admit(z)) {
        atomic_fetch_add(&ct_rec.dropped, nrec);
        if (ct_rec.cap_stopped && !ct_rec.cap_said) {
            ct_rec.cap_said = 1;
            stopped_note(nrec);
        }
        return 0;
    }
    uint64_t at = atomic_load(&ct_rec.bytes_written);
    if (g_src)
        ct_live_frame_begin(g_src->slot, g_src_pos, at + z);
    rc = emit_bytes(ct_rec.frame.p, z);
    if (rc) {
        ct_live_frame_end();
        atomic_fetch_add(&ct_rec.dropped, nrec);
        return rc;
    }
    ct_cap_wrote(at, z);
    atomic_fetch_add(&ct_rec.chunks, 1);
    atomic_fetch_add(&ct_rec.records, nrec);
    ct_live_progress(atomic_load(&ct_rec.bytes_written), ct_rec.next_seq,
                     atomic_load(&ct_rec.chunks), atomic_load(&ct_rec.records),
                     atomic_load(&ct_rec.dropped));
    ct_live_frame_end();
    return 0;
}

static int flush_chunk(void)
{
    int rc = write_chunk();
    release_src();
    return rc;
}

static uint64_t to_ns(uint64_t v, unsigned flags)
{
    return (flags & CT_RF_NS) ? v : ct_clock_conv_ns(&ct_rec.conv, v);
}

/* Adds one in-memory record to the chunk, converting its time fields. */
static void add_record(unsigned kind, unsigned flags, const uint64_t *w, unsigned nwords)
{
    uint64_t f[CT_MAX_FIELDS];
    nwords = ct_ringrec_fields(kind, flags, w, nwords, &ct_rec.conv, ct_clock_tsc, f);
    if (!nwords)
        return; /* cannot happen with our own emitters; never trust it anyway */
    ct_flight_saw(kind, f);
    ct_file_saw(kind, f);
    if (ct_rec.enc.nrecords >= CT_CHUNK_MAX_RECORDS) {
        uint64_t tid = ct_rec.enc.tid;
        flush_chunk();
        ct_chunk_begin(&ct_rec.enc, tid, ct_rec.next_seq, f[0]);
    }
    if (ct_chunk_add_record(&ct_rec.enc, kind, f, nwords) != 0)
        atomic_fetch_add(&ct_rec.dropped, 1);
}

static void add_drop(uint64_t count, unsigned reason, uint64_t now_ns)
{
    uint64_t f[CT_DROP_NFIELDS] = {now_ns, count, reason};
    add_record(CT_REC_DROP, CT_RF_NS, f, CT_DROP_NFIELDS);
    atomic_fetch_add(&ct_rec.dropped, count);
}

static uint64_t first_time(const struct ct_ring *r, uint64_t pos, uint64_t head, uint64_t dflt)
{
    while (pos < head) {
        const struct ct_rec_hdr *h = (const void *)(r->data + (pos & r->mask));
        if (h->kind != 0 && h->nwords > 0)
            return to_ns(((const uint64_t *)(h + 1))[0], h->flags);
        pos += 8u + (uint64_t)h->nwords * 8u;
    }
    return dflt;
}

/* Encodes and writes whatever the ring holds (or nothing, if not due). */
static void drain_ring(unsigned slot, uint64_t now_ns, int force)
{
    struct ct_ring *r = atomic_load_explicit(&ct_rec.rings[slot], memory_order_acquire);
    if (!r)
        return;
    int exited = atomic_load_explicit(&r->state, memory_order_acquire) == CT_RING_EXITED;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t dropped = atomic_load_explicit(&r->dropped, memory_order_relaxed);
    uint64_t avail = head - tail;
    int due = force || exited || avail >= r->size / 4 ||
              (avail > 0 && now_ns - r->last_drain_ns >= (uint64_t)ct_rec.flush_ms * 1000000u);
    if (due && (avail > 0 || dropped != r->dropped_reported)) {
        ct_chunk_begin(&ct_rec.enc, r->tid, ct_rec.next_seq, first_time(r, tail, head, now_ns));
        g_src = r;
        g_src_pos = tail;
        uint64_t pos = tail;
        while (pos < head) {
            const struct ct_rec_hdr *h = (const void *)(r->data + (pos & r->mask));
            if (h->kind != 0 && ct_rec.enc.nrecords >= CT_CHUNK_MAX_RECORDS) {
                /* a full chunk holds the records before pos */
                flush_chunk();
                ct_chunk_begin(&ct_rec.enc, r->tid, ct_rec.next_seq,
                               first_time(r, pos, head, now_ns));
            }
            if (h->kind != 0)
                add_record(h->kind, h->flags, (const uint64_t *)(h + 1), h->nwords);
            pos += 8u + (uint64_t)h->nwords * 8u;
            g_src_pos = pos;
        }
        /* The ring's space goes back once the chunk is written (flush_chunk):
         * until then a SIGKILL leaves the records in the live mapping. */
        if (dropped != r->dropped_reported) {
            add_drop(dropped - r->dropped_reported, CT_DROP_RING_FULL, now_ns);
            r->dropped_reported = dropped;
        }
        flush_chunk();
        g_src = NULL;
        r->last_drain_ns = now_ns;
    }
    if (due && exited) {
        atomic_store(&ct_rec.rings[slot], NULL);
        ct_ring_destroy(r);
    }
}

static void emit_clock_record(void)
{
    struct ct_clock_pair p;
    ct_clock_pair_take(&p);
    ct_clock_conv_update(&ct_rec.conv, &p);
    ct_clock_publish(&ct_rec.conv);
    uint64_t f[CT_CLOCK_NFIELDS] = {p.mono_ns, p.real_ns, ct_clock_tsc ? p.ticks : 0, 0,
                                    (uint64_t)-1};
    ct_emit(CT_REC_CLOCK, CT_RF_NS, f, CT_CLOCK_NFIELDS);
    ct_rec.last_sync_ns = p.mono_ns;
}

/* For the string log's trim: the id is defined in a chunk already written. */
static int str_in_file(void *ctx, uint32_t id)
{
    (void)ctx;
    return id / 8 < (size_t)ct_strings.max_ids / 8 + 1 &&
           (ct_rec.str_emitted[id / 8] & (1u << (id % 8)));
}

static void writer_pass(int force)
{
    struct ct_clock_pair p;
    ct_clock_pair_take(&p);
    ct_clock_conv_update(&ct_rec.conv, &p);
    ct_clock_publish(&ct_rec.conv);
    ct_live_conv_set(&ct_rec.conv);
    if (p.mono_ns - ct_rec.last_sync_ns >= CT_SYNC_PERIOD_NS)
        emit_clock_record();
    uint64_t nb = atomic_load(&ct_rec.no_buffer_drops);
    if (nb != ct_rec.no_buffer_reported) {
        uint64_t f[CT_DROP_NFIELDS] = {p.mono_ns, nb - ct_rec.no_buffer_reported,
                                       CT_DROP_NO_BUFFER};
        if (ct_emit(CT_REC_DROP, CT_RF_NS, f, CT_DROP_NFIELDS) == 0) {
            atomic_fetch_add(&ct_rec.dropped, nb - ct_rec.no_buffer_reported);
            ct_rec.no_buffer_reported = nb;
        }
    }
    ct_live_beat(p.mono_ns, ct_strtab_limit(&ct_strings));
    unsigned hwm = atomic_load(&ct_rec.nrings_hwm);
    for (unsigned i = 0; i < hwm; i++)
        drain_ring(i, p.mono_ns, force);
    /* every chunk built is written now: the log lets go of what they define */
    ct_strlog_trim(atomic_load(&ct_strings.log), str_in_file, NULL);
}

static void write_footer(void)
{
    if (ct_flight_on())
        return; /* each window written gets its own footer */
    uint8_t f[8 + CT_FOOTER_SIZE];
    put_le32(f, CT_SKIP_MAGIC_FOOTER);
    put_le32(f + 4, CT_FOOTER_SIZE);
    memcpy(f + 8, CT_FOOTER_MAGIC, 8);
    put_le64(f + 16, atomic_load(&ct_rec.chunks));
    put_le64(f + 24, atomic_load(&ct_rec.records));
    put_le64(f + 32, atomic_load(&ct_rec.dropped));
    put_le64(f + 40, ct_clock_mono_ns());
    emit_bytes(f, sizeof(f));
}

static unsigned poll_ms(void)
{
    unsigned p = ct_rec.flush_ms / 10;
    return p < 1 ? 1 : p > 5 ? 5 : p;
}

static void (*_Atomic g_ticks[CT_WRITER_TICKS])(uint64_t now_ns);
static pthread_mutex_t g_ticks_mu = PTHREAD_MUTEX_INITIALIZER;

int ct_writer_tick_add(void (*fn)(uint64_t now_ns))
{
    int rc = -ENOSPC;
    pthread_mutex_lock(&g_ticks_mu);
    for (unsigned i = 0; i < CT_WRITER_TICKS; i++) {
        void (*cur)(uint64_t) = atomic_load(&g_ticks[i]);
        if (cur == fn) {
            rc = 0;
            break;
        }
        if (!cur) {
            atomic_store(&g_ticks[i], fn);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&g_ticks_mu);
    return rc;
}

static void run_ticks(void)
{
    for (unsigned i = 0; i < CT_WRITER_TICKS; i++) {
        void (*fn)(uint64_t) = atomic_load(&g_ticks[i]);
        if (!fn)
            break;
        fn(ct_clock_mono_ns());
    }
}

void (*ct_writer_hang)(const char *what, const char *path);

void ct_recorder_flight_request(int reason)
{
    ct_flight_request(reason);
}

/* Hang detection and flight-recorder requests, once per writer loop. */
static void flight_work(int fatal)
{
    static const char *const why[] = {"request", "SIGUSR2", "cutrace dump-now", "a suspected hang",
                                      "a fatal signal"};
    uint64_t now = ct_clock_mono_ns();
    char what[256];
    int req = fatal ? CT_FLIGHT_FATAL : ct_flight_take_request();
    int hang = ct_flight_hang_check(now, what, sizeof(what));
    if (hang) {
        ct_emit_error(what, 0);
        if (!req)
            req = CT_FLIGHT_HANG;
    }
    char path[4200] = "";
    if (req && ct_flight_on()) {
        writer_pass(1); /* the latest records into the window */
        if (ct_flight_dump(why[req <= CT_FLIGHT_FATAL ? req : 0], now, path, sizeof(path)))
            path[0] = 0;
    }
    if (hang && ct_writer_hang)
        ct_writer_hang(what, path);
}

#if defined(__SANITIZE_ADDRESS__)
/* Dekker pair: the writer announces a pass, then looks for a fork; the
 * forking thread announces the fork, then waits out a pass in progress. */
static _Atomic int g_fork_hold, g_in_pass;

void ct_recorder_fork_prepare(void)
{
    atomic_store(&g_fork_hold, 1);
    struct timespec t = {0, 100000L};
    for (int i = 0; i < 1000 && atomic_load(&g_in_pass); i++)
        nanosleep(&t, NULL);
}

void ct_recorder_fork_done(void)
{
    atomic_store(&g_fork_hold, 0);
}

static void passes_begin(void)
{
    for (;;) {
        atomic_store(&g_in_pass, 1);
        if (!atomic_load(&g_fork_hold))
            return;
        atomic_store(&g_in_pass, 0);
        struct timespec t = {0, 100000L};
        nanosleep(&t, NULL);
    }
}

static void passes_end(void)
{
    atomic_store(&g_in_pass, 0);
}
#else
void ct_recorder_fork_prepare(void)
{
}
void ct_recorder_fork_done(void)
{
}
static void passes_begin(void)
{
}
static void passes_end(void)
{
}
#endif

/* Where the rings live, once in the trace (recorder metadata "buffers":
 * shm, dir or private), and why not in a live mapping when one was asked
 * for. */
static void say_buffers(void)
{
    const char *path = ct_live_where_path(), *shm = ct_live_shm_dir();
    size_t sl = strlen(shm);
    const char *where = !ct_live_on()                                ? "private"
                        : !strncmp(path, shm, sl) && path[sl] == '/' ? "shm"
                                                                     : "dir";
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_RECORDER, 0, ct_intern("buffers"),
                                   ct_intern(where)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
    if (!ct_live_on() && ct_rec.live_why[0]) {
        char what[900];
        snprintf(what, sizeof(what),
                 "cutrace: no live mapping (%s): the buffers are in private memory, and a "
                 "SIGKILL loses the records not yet written",
                 ct_rec.live_why);
        ct_emit_error(what, -ENOSPC);
    }
}

/* Threads whose ring could not be in the live mapping: said once. */
static void say_private_rings(void)
{
    if (ct_rec.private_said || !ct_live_on())
        return;
    uint64_t n = ct_live_private_rings();
    if (!n)
        return;
    ct_rec.private_said = 1;
    char what[300];
    snprintf(what, sizeof(what),
             "cutrace: a thread's buffer could not be in the live mapping (its folder is full, or "
             "it has no free slot): that thread's buffer is in private memory, and a SIGKILL "
             "loses its records not yet written (%llu thread%s so far)",
             (unsigned long long)n, n == 1 ? "" : "s");
    ct_emit_error(what, -ENOSPC);
}

/* The fatal signal a handler asked a flush for (ct_recorder_flush_fatal),
 * as process metadata at the time it arrived. */
static void emit_fatal_signal(void)
{
    int sig = atomic_exchange(&ct_rec.fatal_sig, 0);
    if (!sig)
        return;
    char v[16];
    snprintf(v, sizeof(v), "%d", sig);
    uint64_t f[CT_META_NFIELDS] = {atomic_load(&ct_rec.fatal_ticks), CT_SCOPE_PROCESS, 0,
                                   ct_intern("signal"), ct_intern(v)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

static void *writer_main(void *arg)
{
    (void)arg;
    /* The job's signals are for the job's threads. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    ct_tls_guard = 1;
    ct_rec.writer_tid = (pid_t)syscall(SYS_gettid);
    ct_thread_ring_register();
    emit_clock_record();
    say_buffers();
    passes_end(); /* begun by ct_writer_spawn: the thread's start allocates too */
    for (;;) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += (long)poll_ms() * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&ct_rec.mu);
        while (!ct_rec.stop_req && ct_rec.flush_req == ct_rec.flush_done &&
               pthread_cond_timedwait(&ct_rec.cv, &ct_rec.mu, &dl) == 0)
            ;
        int stop = ct_rec.stop_req;
        uint64_t flush = ct_rec.flush_req;
        pthread_mutex_unlock(&ct_rec.mu);
        int forced = stop || flush != ct_rec.flush_done;
        passes_begin();
        if (!atomic_load(&ct_rec.paused) || forced)
            writer_pass(forced);
        uint64_t areq = atomic_load(&ct_rec.async_req);
        /* a signal handler waits for this pass and, when it finishes the
         * trace, for the footer after it */
        int finish = atomic_load(&ct_rec.finish_req);
        if (areq != atomic_load(&ct_rec.async_done) || finish) {
            emit_fatal_signal();
            writer_pass(1);
            writer_pass(1);
            if (ct_flight_on()) /* a fatal signal: the window is all there is */
                flight_work(1);
            atomic_store(&ct_rec.async_done, areq);
        }
        if (finish) {
            passes_end();
            break;
        }
        flight_work(0);
        say_private_rings();
        run_ticks();
        if (flush != ct_rec.flush_done) {
            /* A second pass picks up what the first one's own records added. */
            writer_pass(1);
            pthread_mutex_lock(&ct_rec.mu);
            ct_rec.flush_done = flush;
            pthread_cond_broadcast(&ct_rec.done_cv);
            pthread_mutex_unlock(&ct_rec.mu);
        }
        passes_end();
        if (stop)
            break;
    }
    passes_begin();
    emit_fatal_signal(); /* one that came while stopping */
    emit_clock_record();
    writer_pass(1);
    write_footer();
    ct_writer_close();
    passes_end();
    atomic_store(&ct_rec.writer_done, 1);
    return NULL;
}

int ct_writer_spawn(void)
{
    ct_rec.writer_pid = (pid_t)syscall(SYS_getpid);
    atomic_store(&ct_rec.finish_req, 0);
    atomic_store(&ct_rec.writer_done, 0);
    passes_begin();
    int rc = pthread_create(&ct_rec.thread, NULL, writer_main, NULL);
    if (rc)
        passes_end();
    return rc;
}

static int write_header(const struct ct_recorder_config *cfg, const struct ct_clock_pair *p)
{
    uint8_t h[8 + CT_HEADER_MIN_SIZE];
    memset(h, 0, sizeof(h));
    const uint32_t size = CT_HEADER_MIN_SIZE;
    put_le32(h, CT_SKIP_MAGIC_HEADER);
    put_le32(h + 4, size);
    memcpy(h + 8, CT_FILE_MAGIC, 8);
    h[16] = (uint8_t)CT_FORMAT_VERSION;
    h[17] = (uint8_t)(CT_FORMAT_VERSION >> 8);
    h[18] = (uint8_t)size;
    h[19] = (uint8_t)(size >> 8);
    uint64_t features = cfg->features | (ct_clock_tsc ? CT_FEAT_TSC : 0);
    put_le64(h + 24, features);
    put_le32(h + 32, ct_clock_source());
    put_le64(h + 40, 0); /* TSC rate: the clock records carry (ticks, ns) pairs */
    put_le64(h + 48, p->mono_ns);
    put_le64(h + 56, p->real_ns);
    put_le32(h + 64, cfg->pid);
    put_le32(h + 68, cfg->gen);
    return emit_bytes(h, sizeof(h));
}

static int write_meta_chunk(const struct ct_meta_kv *meta, size_t nmeta, uint64_t now_ns)
{
    uint64_t tid = (uint64_t)syscall(SYS_gettid);
    ct_chunk_begin(&ct_rec.enc, tid, ct_rec.next_seq, now_ns);
    for (size_t i = 0; i < nmeta; i++) {
        uint64_t f[CT_META_NFIELDS] = {now_ns, meta[i].scope, meta[i].scope_id,
                                       ct_intern(meta[i].key), ct_intern(meta[i].value)};
        add_record(CT_REC_META, CT_RF_NS, f, CT_META_NFIELDS);
    }
    return flush_chunk();
}

int ct_writer_open(const struct ct_recorder_config *cfg, const struct ct_meta_kv *meta,
                   size_t nmeta)
{
    ct_flight_init(cfg);
    /* a forked child's copy of its parent's drain in progress means nothing */
    g_src = NULL;
    int frc = ct_file_open(cfg);
    if (frc)
        return frc;
    /* the trace's name is ours now: its live mapping (not for the flight
     * recorder, whose window lives in the writer's memory) */
    ct_rec.live_why[0] = 0;
    if (!ct_flight_on()) {
        struct ct_live_cfg lc = {cfg->path, cfg->buffers, ct_rec.ring_bytes, cfg->pid, cfg->gen};
        ct_live_open(&lc, ct_rec.live_why, sizeof(ct_rec.live_why));
        if (ct_rec.file_created)
            ct_live_file_created();
    }
    ct_rec.private_said = 0;
    atomic_store(&ct_rec.write_error, 0);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!cctx) {
        ct_writer_close();
        return -ENOMEM;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, cfg->zstd_level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ct_rec.cctx = cctx;
    struct ct_clock_pair p;
    ct_clock_pair_take(&p);
    ct_clock_conv_init(&ct_rec.conv, &p, &g_clock_hist);
    ct_live_conv_set(&ct_rec.conv);
    ct_rec.last_sync_ns = p.mono_ns;
    ct_cap_init(0, 0);
    int rc = write_header(cfg, &p);
    if (!rc)
        rc = write_meta_chunk(meta, nmeta, p.mono_ns);
    if (rc) {
        ct_writer_close();
        return rc;
    }
    /* the bound applies from here: the header and metadata are never dropped */
    ct_flight_head_done();
    ct_cap_init(ct_flight_on() ? 0 : cfg->max_bytes, cfg->max_stop);
    ct_rec.cap_said = 0;
    return 0;
}

void ct_writer_close(void)
{
    ct_file_close();
    ct_live_close(); /* the footer is written, or there is no trace to finish */
    ZSTD_freeCCtx(ct_rec.cctx);
    ct_rec.cctx = NULL;
    ct_chunk_enc_free(&ct_rec.enc);
    ct_buf_free(&ct_rec.payload);
    ct_buf_free(&ct_rec.frame);
    ct_cap_free();
    ct_flight_free();
}
