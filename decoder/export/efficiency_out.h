/* The report's GPU efficiency section (decoder/export/efficiency_out.c). */
#ifndef CT_EFFICIENCY_OUT_H
#define CT_EFFICIENCY_OUT_H

#include <stddef.h>
#include <stdio.h>

struct ct_report;
struct ct_eff_family;

/* `cutrace report --json`: per rank `"efficiency":{...},` (figures null
 * with "unavailable" saying why when the rank has no GPM samples), and the
 * job's `"efficiency":{"families":[...]},` inside "job". */
void ct_efficiency_json(FILE *f, const struct ct_report *rep, size_t r);
void ct_efficiency_job_json(FILE *f, const struct ct_report *rep);
/* Text: a "GPU efficiency" section when any rank has GPM figures (one
 * line saying why when GPM was sampled and none has). */
void ct_efficiency_text(FILE *f, const struct ct_report *rep);

/* The job's kernel families: every rank's merged by name (times summed,
 * values weighted by attributed time), by attributed time; the count (0
 * on allocation failure), *out the caller's to free (names borrowed from
 * rep). */
size_t ct_efficiency_job_families(const struct ct_report *rep, struct ct_eff_family **out);

#endif
