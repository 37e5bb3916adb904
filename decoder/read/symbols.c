/* ELF symbol tables, read once per file, and the frame -> name lookup. */
#include "decoder/read/symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sym {
    uint64_t addr, size;
    char *name;
};

struct elf_file {
    char *path;
    int ok;
    struct sym *syms;
    size_t nsyms;
    Elf64_Phdr *phdr;
    size_t nphdr;
    struct elf_file *next;
};

static struct elf_file *g_files; /* the decoder is single-threaded here */

static int cmp_sym(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* Reads one symbol table section (and its string table) into f->syms. */
static void load_symtab(struct elf_file *f, int fd, const Elf64_Shdr *sh, const Elf64_Shdr *strsh,
                        uint64_t fsize)
{
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_offset + sh->sh_size > fsize ||
        strsh->sh_offset + strsh->sh_size > fsize || sh->sh_size > (512u << 20))
        return;
    size_t n = sh->sh_size / sizeof(Elf64_Sym);
    Elf64_Sym *st = malloc(sh->sh_size ? sh->sh_size : 1);
    char *strs = malloc(strsh->sh_size + 1);
    if (!st || !strs || read_at(fd, st, sh->sh_size, sh->sh_offset) ||
        read_at(fd, strs, strsh->sh_size, strsh->sh_offset)) {
        free(st);
        free(strs);
        return;
    }
    strs[strsh->sh_size] = 0;
    struct sym *out = realloc(f->syms, (f->nsyms + n) * sizeof(*out));
    if (!out) {
        free(st);
        free(strs);
        return;
    }
    f->syms = out;
    for (size_t i = 0; i < n; i++) {
        if (ELF64_ST_TYPE(st[i].st_info) != STT_FUNC || st[i].st_value == 0 ||
            st[i].st_name >= strsh->sh_size)
            continue;
        f->syms[f->nsyms].addr = st[i].st_value;
        f->syms[f->nsyms].size = st[i].st_size;
        f->syms[f->nsyms].name = strdup(strs + st[i].st_name);
        if (f->syms[f->nsyms].name)
            f->nsyms++;
    }
    free(st);
    free(strs);
}

static struct elf_file *load(const char *path)
{
    for (struct elf_file *f = g_files; f; f = f->next)
        if (!strcmp(f->path, path))
            return f;
    struct elf_file *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->path = strdup(path);
    f->next = g_files;
    g_files = f;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat stt;
    Elf64_Ehdr eh;
    if (fd < 0 || fstat(fd, &stt) != 0 || read_at(fd, &eh, sizeof(eh), 0) ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
        eh.e_shnum > 65000 || eh.e_phnum > 4096) {
        if (fd >= 0)
            close(fd);
        return f;
    }
    uint64_t fsize = (uint64_t)stt.st_size;
    Elf64_Shdr *sh = calloc(eh.e_shnum ? eh.e_shnum : 1, sizeof(*sh));
    f->phdr = calloc(eh.e_phnum ? eh.e_phnum : 1, sizeof(*f->phdr));
    if (sh && f->phdr && !read_at(fd, sh, eh.e_shnum * sizeof(*sh), eh.e_shoff) &&
        !read_at(fd, f->phdr, eh.e_phnum * sizeof(*f->phdr), eh.e_phoff)) {
        f->nphdr = eh.e_phnum;
        /* .symtab has static functions too; .dynsym when stripped */
        for (int pass = 0; pass < 2 && f->nsyms == 0; pass++) {
            unsigned want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
            for (unsigned i = 0; i < eh.e_shnum; i++)
                if (sh[i].sh_type == want && sh[i].sh_link < eh.e_shnum)
                    load_symtab(f, fd, &sh[i], &sh[sh[i].sh_link], fsize);
        }
        qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
        f->ok = 1;
    }
    free(sh);
    close(fd);
    return f;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_module(const void *a, const void *b)
{
    const struct ct_module *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_stack(const void *a, const void *b)
{
    const struct ct_stack_ref *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->time > y->time) - (x->time < y->time);
}

/* One pass over the metadata: mappings and stacks, sorted for lookups. */
static void index_trace(struct ct_trace *t)
{
    if (t->sym_indexed)
        return;
    t->sym_indexed = 1;
    size_t nm = 0, ns = 0;
    for (size_t i = 0; i < t->nmeta; i++) {
        nm += t->meta[i].f[CT_META_SCOPE] == CT_SCOPE_MODULE;
        ns += t->meta[i].f[CT_META_SCOPE] == CT_SCOPE_STACK;
    }
    t->mods = calloc(nm ? nm : 1, sizeof(*t->mods));
    t->stacks = calloc(ns ? ns : 1, sizeof(*t->stacks));
    if (!t->mods || !t->stacks)
        return;
    for (size_t i = 0; i < t->nmeta; i++) {
        const struct ct_record *m = &t->meta[i];
        const char *v = ct_reader_string(&t->rd, m->f[CT_META_VALUE]);
        if (m->f[CT_META_SCOPE] == CT_SCOPE_STACK) {
            t->stacks[t->nstacks++] =
                (struct ct_stack_ref){m->f[CT_META_SCOPE_ID], m->f[CT_META_TIME], m->tid, v};
        } else if (m->f[CT_META_SCOPE] == CT_SCOPE_MODULE) {
            unsigned long long a, b, off;
            if (sscanf(v, "%llx %llx %llx", &a, &b, &off) == 3 && a < b)
                t->mods[t->nmods++] =
                    (struct ct_module){a, b, off, ct_reader_string(&t->rd, m->f[CT_META_KEY])};
        }
    }
    qsort(t->mods, t->nmods, sizeof(*t->mods), cmp_module);
    qsort(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack);
}

void ct_symbolize(struct ct_trace *t, uint64_t ip, char *out, size_t n)
{
    index_trace(t);
    size_t lo = 0, hi = t->nmods;
    while (lo < hi) { /* last mapping starting at or below ip */
        size_t mid = lo + (hi - lo) / 2;
        if (t->mods[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && ip < t->mods[lo - 1].end) {
        const struct ct_module *mod = &t->mods[lo - 1];
        uint64_t a = mod->start, off = mod->offset;
        const char *path = mod->path;
        struct elf_file *f = load(path);
        uint64_t file_off = ip - a + off;
        if (f && f->ok) {
            for (size_t p = 0; p < f->nphdr; p++) {
                const Elf64_Phdr *ph = &f->phdr[p];
                if (ph->p_type != PT_LOAD || file_off < ph->p_offset ||
                    file_off >= ph->p_offset + ph->p_filesz)
                    continue;
                uint64_t vaddr = file_off - ph->p_offset + ph->p_vaddr;
                size_t sym_lo = 0, sym_hi = f->nsyms;
                while (sym_lo < sym_hi) { /* last symbol at or below vaddr */
                    size_t mid = sym_lo + (sym_hi - sym_lo) / 2;
                    if (f->syms[mid].addr <= vaddr)
                        sym_lo = mid + 1;
                    else
                        sym_hi = mid;
                }
                if (sym_lo > 0) {
                    const struct sym *s = &f->syms[sym_lo - 1];
                    if (s->size == 0 || vaddr < s->addr + s->size) {
                        snprintf(out, n, "%s+0x%llx (%s)", s->name,
                                 (unsigned long long)(vaddr - s->addr), base(path));
                        return;
                    }
                }
                snprintf(out, n, "0x%llx (%s)", (unsigned long long)vaddr, base(path));
                return;
            }
        }
        snprintf(out, n, "0x%llx (%s)", (unsigned long long)file_off, base(path));
        return;
    }
    snprintf(out, n, "0x%llx", (unsigned long long)ip);
}

static const char *find_stack(struct ct_trace *t, uint64_t corr, uint32_t tid, uint64_t time)
{
    index_trace(t);
    struct ct_stack_ref key = {corr, time, tid, NULL};
    size_t lo = 0, hi = t->nstacks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_stack(&t->stacks[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nstacks && cmp_stack(&t->stacks[lo], &key) == 0 ? t->stacks[lo].frames : NULL;
}

const char *ct_trace_stack(struct ct_trace *t, uint64_t corr)
{
    if (!corr)
        return NULL;
    index_trace(t);
    size_t lo = 0, hi = t->nstacks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->stacks[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nstacks && t->stacks[lo].corr == corr ? t->stacks[lo].frames : NULL;
}

const char *ct_trace_io_stack(struct ct_trace *t, uint32_t tid, uint64_t start_ns)
{
    return find_stack(t, 0, tid, start_ns);
}
