/*
 * One record as a ring holds it (ring.h: header, words, packed API layout,
 * raw clock ticks) turned into the format's fields (cutrace/format.h). The
 * writer does it for every record it drains; a salvage does the same for
 * the records a dead process left in its rings, so both read them alike.
 * Pure function: no state, no allocation.
 */
#ifndef CT_RINGREC_H
#define CT_RINGREC_H

#include <stdint.h>

#include "cutrace/format.h"
#include "src/clock.h"

/*
 * Fills out (CT_MAX_FIELDS) with the fields of the record of `kind` whose
 * nwords words are at w; times are converted with conv when tsc is set
 * (the ring's times are TSC ticks) and the record is not CT_RF_NS.
 * Returns the kind's field count, or 0 for a record that is not one
 * (a pad, an unknown kind, a length the kind does not have).
 */
unsigned ct_ringrec_fields(unsigned kind, unsigned flags, const uint64_t *w, unsigned nwords,
                           const struct ct_clock_conv *conv, int tsc, uint64_t *out);

/* A ring time in trace ns. */
static inline uint64_t ct_ringrec_ns(uint64_t v, unsigned flags, const struct ct_clock_conv *conv,
                                     int tsc)
{
    if (!tsc || (flags & 0x01 /* CT_RF_NS */))
        return v;
    return ct_clock_conv_at(conv, v);
}

#endif
