#ifndef W_SYMS_H
#define W_SYMS_H

struct w_sym {
    const char *exported, *base;
    int version, per_thread;
    void (*linked)(void);
};
extern const struct w_sym w_syms[];
const struct w_sym *w_sym_find(const char *exported);

#endif
