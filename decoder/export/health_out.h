/* The report's health section (decoder/export/health_out.c). */
#ifndef CT_HEALTH_OUT_H
#define CT_HEALTH_OUT_H

#include <stddef.h>
#include <stdio.h>

struct ct_report;

/* `cutrace report`: per rank `"health":{...},` or `"health":null,` (JSON),
 * and a "GPU health" text section when any rank has counters. */
void ct_health_json(FILE *f, const struct ct_report *rep, size_t r);
void ct_health_text(FILE *f, const struct ct_report *rep);

#endif
