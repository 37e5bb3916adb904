/* The report's GPU efficiency section (decoder/export/efficiency_out.c). */
#ifndef CT_EFFICIENCY_OUT_H
#define CT_EFFICIENCY_OUT_H

#include <stddef.h>
#include <stdio.h>

struct ct_report;

/* `cutrace report --json`: per rank `"efficiency":{...},` (figures null
 * with "unavailable" saying why when the rank has no GPM samples), and the
 * job's `"efficiency":{"families":[...]},` inside "job". */
void ct_efficiency_json(FILE *f, const struct ct_report *rep, size_t r);
void ct_efficiency_job_json(FILE *f, const struct ct_report *rep);
/* Text: a "GPU efficiency" section when any rank has GPM figures (one
 * line saying why when GPM was sampled and none has). */
void ct_efficiency_text(FILE *f, const struct ct_report *rep);

#endif
