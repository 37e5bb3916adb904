/*
 * The JSON writer every JSON document of cutrace's goes through (report,
 * diagnose, diff, rows, exports, the HTML page's data): strings are escaped
 * and invalid UTF-8 is replaced, so whatever bytes a trace holds, the
 * output parses; and numbers follow one rule:
 *
 *   a finite number is printed (fixed decimals, or %.6g); a non-finite one
 *   (NaN, +-Inf: a ratio without a denominator, a figure nothing measured)
 *   is null. Never NaN or Infinity, never 0 standing in for "unknown".
 *
 * A figure that is unknown for another reason (a percentage whose
 * denominator is 0, a sentinel -1) is passed as NAN by its writer, so the
 * same rule makes it null. (The HTML page's embedded data are the one
 * exception: its script draws numbers only, decoder/export/html.c.)
 *
 * The writes skip stdio's stream lock (a long report writes millions of
 * pieces): one thread writes a stream at a time.
 */
#ifndef CT_JSON_H
#define CT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

void ct_json_str(FILE *f, const char *s);

/* v with `decimals` decimals (%.Nf), or null. */
void ct_json_num(FILE *f, double v, int decimals);
/* v as %.6g (ratios, p-values, thresholds), an integer exactly, or null. */
void ct_json_num_g(FILE *f, double v);
/* "key":v with `decimals` decimals, or "key":null. */
void ct_json_member(FILE *f, const char *key, double v, int decimals);

/* For writers that assemble a row in one buffer. ct_json_u64_fmt: the
 * decimal digits of a into p (room for 20); their count. ct_json_us_fmt:
 * "k":ns/1000 with 3 decimals, as ct_json_member writes the double
 * ns / 1000.0, and a comma if asked, into b (room for kl + 32); its
 * length, or 0 when |ns| >= 2^50 (then ct_json_member). */
size_t ct_json_u64_fmt(char *p, uint64_t a);
size_t ct_json_us_fmt(char *b, const char *k, size_t kl, int64_t ns, int comma);

#endif
