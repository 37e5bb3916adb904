/* Text and JSON renderings of a report. */
#ifndef CT_REPORT_OUT_H
#define CT_REPORT_OUT_H

#include <stdio.h>

struct ct_report;

/* Version of the JSON document; bumped on any incompatible change. */
#define CT_REPORT_SCHEMA_VERSION 1

void ct_report_json(FILE *f, const struct ct_report *rep);
void ct_report_text(FILE *f, const struct ct_report *rep);

#endif
