/*
 * Output files (decoder/util/outfile.h): a temporary file beside the
 * output, renamed into place when complete; inputs and traces never
 * overwritten.
 */
#include "decoder/util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cutrace/format.h"

/* Temporary files to remove if a signal ends the command: a command has
 * one or two outputs open at a time (-o and --rows). */
#define OUT_SLOTS 4
static char g_tmp[OUT_SLOTS][PATH_MAX];
static atomic_int g_used[OUT_SLOTS];
static atomic_int g_handlers;

static void on_signal(int sig)
{
    for (int i = 0; i < OUT_SLOTS; i++)
        if (atomic_load(&g_used[i]))
            unlink(g_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int slot_take(const char *tmp)
{
    if (!atomic_exchange(&g_handlers, 1)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
            struct sigaction old;
            /* a signal the caller ignores (nohup) stays ignored */
            if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                sigaction(sigs[i], &sa, NULL);
        }
    }
    for (int i = 0; i < OUT_SLOTS; i++)
        if (!atomic_load(&g_used[i])) {
            snprintf(g_tmp[i], sizeof(g_tmp[i]), "%s", tmp);
            atomic_store(&g_used[i], 1);
            return i;
        }
    return -1;
}

static void slot_drop(int slot)
{
    if (slot >= 0)
        atomic_store(&g_used[slot], 0);
}

int ct_out_is_stdout(const char *path)
{
    return !path || !strcmp(path, "-");
}

/* 1 when the file at path starts like a cutrace trace. */
static int is_trace(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    unsigned char b[16];
    ssize_t n = read(fd, b, sizeof(b));
    close(fd);
    return n == (ssize_t)sizeof(b) && !memcmp(b + 8, CT_FILE_MAGIC, 8);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

int ct_out_check(const char *path, const char *opt, char *const *inputs, size_t n, char *err,
                 size_t errlen)
{
    if (ct_out_is_stdout(path))
        return 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return 0; /* a new file (or an unwritable place: ct_out_open says so) */
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s %s: is a directory; expected a file name", opt, path);
        return -EISDIR;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat in;
        if (stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
            snprintf(err, errlen, "%s %s: is one of the inputs; give another output file", opt,
                     path);
            return -EEXIST;
        }
    }
    if (S_ISREG(st.st_mode) &&
        (is_trace(path) || ends_with(path, ".cutrace") || ends_with(path, ".ctsum"))) {
        snprintf(err, errlen,
                 "%s %s: is a cutrace trace or summary, which an output never replaces; give "
                 "another output file",
                 opt, path);
        return -EEXIST;
    }
    return 0;
}

/* An existing output that is not a regular file (/dev/null, a FIFO, a
 * terminal) is written in place: a rename would replace the device. */
static int open_direct(struct ct_outfile *o, const char *path, const char *opt, char *err,
                       size_t errlen)
{
    o->f = fopen(path, "w");
    if (!o->f) {
        int e = errno;
        snprintf(err, errlen, "%s %s: %s", opt, path, strerror(e));
        return -e;
    }
    return 0;
}

static int open_tmp(struct ct_outfile *o, const char *given, const char *opt, char *err,
                    size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->slot = -1;
    struct stat st;
    if (stat(given, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->path = given;
        return open_direct(o, given, opt, err, errlen);
    }
    /* a link is followed: the file it names is replaced, the link stays */
    const char *path = given;
    if (realpath(given, o->real))
        path = o->real;
    o->path = path;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    int w = snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.tmp-XXXXXX", (int)dirlen, path,
                     slash ? slash + 1 : path);
    if (w < 0 || (size_t)w >= sizeof(o->tmp)) {
        snprintf(err, errlen, "%s %s: path too long", opt, path);
        return -ENAMETOOLONG;
    }
    /* the mode an existing file has, else what fopen would give */
    mode_t mode;
    if (stat(path, &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(022);
        umask(mask);
        mode = 0666 & ~mask;
    }
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s %s: %s", opt, given, strerror(e));
        return -e;
    }
    (void)fchmod(fd, mode); /* when it fails the file stays 0600: safe, and still written */
    o->slot = slot_take(o->tmp);
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        ct_out_abort(o);
        snprintf(err, errlen, "%s %s: %s", opt, path, strerror(e));
        return -e;
    }
    return 0;
}

int ct_out_open(struct ct_outfile *o, const char *path, const char *opt, char *err, size_t errlen)
{
    if (ct_out_is_stdout(path)) {
        memset(o, 0, sizeof(*o));
        o->slot = -1;
        o->f = stdout;
        return 0;
    }
    return open_tmp(o, path, opt, err, errlen);
}

int ct_out_open_path(struct ct_outfile *o, const char *path, const char *opt, char *err,
                     size_t errlen)
{
    int rc = open_tmp(o, path, opt, err, errlen);
    if (!rc) {
        fclose(o->f);
        o->f = NULL;
    }
    return rc;
}

int ct_out_commit(struct ct_outfile *o, char *err, size_t errlen)
{
    if (!o->tmp[0]) { /* standard output, or a device or FIFO written in place */
        int bad = o->f && (fflush(o->f) != 0 || ferror(o->f));
        if (o->f && o->f != stdout && fclose(o->f) != 0)
            bad = 1;
        if (o->f != stdout)
            o->f = NULL;
        if (bad)
            snprintf(err, errlen, "error writing %s", o->path ? o->path : "standard output");
        return bad ? -EIO : 0;
    }
    int bad = 0;
    if (o->f) {
        bad = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
        if (fclose(o->f) != 0)
            bad = 1;
        o->f = NULL;
    }
    if (bad || rename(o->tmp, o->path) != 0) {
        int e = bad ? EIO : errno;
        snprintf(err, errlen, "%s: %s; the file was left as it was", o->path,
                 bad ? "error writing it (disk full?)" : strerror(e));
        ct_out_abort(o);
        return -e;
    }
    slot_drop(o->slot);
    o->slot = -1;
    o->tmp[0] = 0;
    return 0;
}

void ct_out_abort(struct ct_outfile *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    slot_drop(o->slot);
    o->slot = -1;
    o->tmp[0] = 0;
}
