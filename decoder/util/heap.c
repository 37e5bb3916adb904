/*
 * Transparent huge pages for the analyses' heap. A report holds one rank's
 * records in arrays of tens to hundreds of MB; with 4 KiB pages a third of
 * its CPU time went to page faults (measured: 0.28 -> 0.22 CPU s for 1 M
 * records, docs/report.md). Where the kernel gives huge pages only on
 * request (transparent_hugepage=madvise, the common default), glibc asks
 * for them when started with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc
 * 2.35 and later; older ones ignore it). Tunables are read only at start,
 * so the command re-executes itself once with it set, then puts the
 * caller's GLIBC_TUNABLES back, so nothing it starts inherits ours.
 * Before that, the heap is grown once by a reserve (untouched pages cost
 * nothing) and the kernel asked for huge pages in it (reserve_huge): the
 * re-execution, a second start-up, was 3 % of a 1 M-record report's CPU;
 * it remains for where the reserve cannot be had. CUTRACE_HUGEPAGES=0
 * turns both off; a failed exec just runs on.
 *
 * Then the heap is set up so that freed arrays are reused instead of
 * fresh pages faulted in and zeroed (ct_heap_tune): the analyses free and
 * allocate arrays of the same few sizes many times over.
 */
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/util/heap.h"

#define MARK    "CUTRACE_INTERNAL_TUNABLES" /* the caller's value, "-" for unset */
#define TUNABLE "glibc.malloc.hugetlb=1"

/* Whether huge pages come only on request (madvise). */
static int thp_on_request(void)
{
    char buf[128] = "";
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strstr(buf, "[madvise]") != NULL;
}

static void restore(const char *orig)
{
    if (!strcmp(orig, "-"))
        unsetenv("GLIBC_TUNABLES");
    else
        setenv("GLIBC_TUNABLES", orig, 1);
}

/* How many of the operands are traces or summaries, counting a folder's
 * own entries (one level: the common layout), stopping at `enough`. */
static size_t traces_named(char **argv, size_t enough)
{
    size_t n = 0;
    for (size_t i = 2; argv[i] && n < enough; i++) {
        struct stat st;
        if (argv[i][0] == '-' || stat(argv[i], &st))
            continue;
        if (!S_ISDIR(st.st_mode)) {
            n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && n < enough && (e = readdir(d));) {
            size_t l = strlen(e->d_name);
            n += (l > 8 && !strcmp(e->d_name + l - 8, ".cutrace")) ||
                 (l > 6 && !strcmp(e->d_name + l - 6, ".ctsum"));
        }
        if (d)
            closedir(d);
    }
    return n;
}

/* The heap's reserve for huge pages (reserve_huge), and whether it was had. */
#define RESERVE  (1ul << 30)
#define HUGE_2MB (2ul << 20)
static int reserved;

/*
 * Grows the heap (glibc's main arena, by brk) by RESERVE at once and asks
 * for transparent huge pages in it: what glibc.malloc.hugetlb=1 does at
 * every growth. Untouched, the reserve is address space only; it stays
 * the heap's (ct_heap_tune keeps free memory below the trim threshold),
 * since memory the heap grows into later is not advised. 1 when had.
 */
static int reserve_huge(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* a block from the heap, not a mapping */
    mallopt(M_TRIM_THRESHOLD, (int)(RESERVE + (RESERVE >> 1)));
    mallopt(M_TOP_PAD, (int)RESERVE);
    void *b = malloc(1 << 20);
    uintptr_t lo = ((uintptr_t)b + HUGE_2MB - 1) & ~(uintptr_t)(HUGE_2MB - 1);
    uintptr_t hi = (uintptr_t)sbrk(0);
    /* the block is in the heap and the heap reaches past the reserve */
    int ok = b && (uintptr_t)b < hi && hi - lo >= RESERVE / 2 &&
             madvise((void *)lo, hi - lo, MADV_HUGEPAGE) == 0;
    free(b);
    mallopt(M_TOP_PAD, 64 << 20);
    return ok;
}

void ct_hugepages(char **argv, size_t spill_traces)
{
    const char *mark = getenv(MARK);
    if (mark) { /* the re-executed process: the tunable is in effect */
        restore(mark);
        unsetenv(MARK);
        return;
    }
    const char *off = getenv("CUTRACE_HUGEPAGES");
    const char *orig = getenv("GLIBC_TUNABLES");
    if ((off && !strcmp(off, "0")) || (orig && strstr(orig, "glibc.malloc.hugetlb")) ||
        !thp_on_request())
        return;
    /* a job large enough to be spilled keeps many small arrays per rank,
     * and the holes between them would each pin a 2 MB page: measured on
     * 1024 ranks, 3.2 GB peak with huge pages against 1.2 GB without */
    if (spill_traces && traces_named(argv, spill_traces) >= spill_traces)
        return;
    if ((reserved = reserve_huge()))
        return;
    char *want = malloc((orig ? strlen(orig) + 1 : 0) + sizeof(TUNABLE));
    if (!want)
        return;
    sprintf(want, "%s%s%s", orig ? orig : "", orig && *orig ? ":" : "", TUNABLE);
    char *keep = strdup(orig ? orig : "-");
    if (keep && !setenv(MARK, keep, 1) && !setenv("GLIBC_TUNABLES", want, 1))
        execv("/proc/self/exe", argv);
    /* still here: run on as we are */
    if (keep)
        restore(keep);
    unsetenv(MARK);
    free(keep);
    free(want);
}

/*
 * One arena, and arrays up to 32 MiB (glibc's largest mmap threshold) from
 * the heap rather than from their own mappings: the decoding threads'
 * arenas and glibc's default threshold (which starts at 128 KiB) gave each
 * growing or short-lived array fresh mappings, so a third of a report's
 * CPU time went to the kernel zeroing pages (docs/report.md: 13 000 page
 * faults -> 1 000 for 1 M records). Freed memory stays for reuse up to
 * 256 MiB. The decoding threads allocate rarely (arrays double), so one
 * arena's lock is not contended.
 */
void ct_heap_tune(void)
{
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    /* with the reserve, past it: the heap must not give it back */
    mallopt(M_TRIM_THRESHOLD, reserved ? (int)(RESERVE + (RESERVE >> 1)) : 256 << 20);
}
