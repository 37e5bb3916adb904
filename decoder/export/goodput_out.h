/* Text and JSON renderings of a job's goodput (decoder/analysis/goodput.h). */
#ifndef CT_GOODPUT_OUT_H
#define CT_GOODPUT_OUT_H

#include <stdio.h>

struct ct_goodput;

/* Version of the goodput JSON object; bumped on any incompatible change. */
#define CT_GOODPUT_SCHEMA_VERSION 1

/* The object (no newline): `cutrace goodput --json` and report's "goodput". */
void ct_goodput_json(FILE *f, const struct ct_goodput *g);
void ct_goodput_text(FILE *f, const struct ct_goodput *g);

#endif
