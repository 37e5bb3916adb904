/*
 * A process's life as its trace states it (decoder/read/life.c): the
 * metadata and recorder records that say when the image started, which
 * attempt of a restarted job it was, and what ended it, folded into
 * struct ct_life (decoder/read/timeline.h) while the trace is read.
 */
#ifndef CT_LIFE_H
#define CT_LIFE_H

#include <stdint.h>

#include "decoder/read/timeline.h"

void ct_life_init(struct ct_life *l);
/* Folds one process-scope metadata pair (raw time t) in; 0 or -ENOMEM. */
int ct_life_meta(struct ct_life *l, const char *key, const char *value, int64_t t);
/* Folds one of the recorder's error records in. */
void ct_life_error(struct ct_life *l, const char *what, int64_t t);
/* Frees what l holds. */
void ct_life_free(struct ct_life *l);
/* Moves the times by the trace's clock offset. */
void ct_life_finish(struct ct_life *l, int64_t off);

#endif
