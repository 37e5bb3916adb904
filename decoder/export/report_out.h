/* Text and JSON renderings of a report. */
#ifndef CT_REPORT_OUT_H
#define CT_REPORT_OUT_H

#include <stdio.h>

struct ct_report;

/* Version of the JSON document; bumped on any incompatible change. */
#define CT_REPORT_SCHEMA_VERSION 2

/* rank_iters: also each rank's iterations[] (`report --rank-iterations`);
 * the job's steps[] are always there. */
void ct_report_json(FILE *f, const struct ct_report *rep, int rank_iters);
void ct_report_text(FILE *f, const struct ct_report *rep);

#endif
