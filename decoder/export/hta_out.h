/* HTA-compatible figures of Kineto input in the report (decoder/export/hta_out.c). */
#ifndef CT_HTA_OUT_H
#define CT_HTA_OUT_H

#include <stdio.h>

struct ct_rank;
struct ct_report;

/* Writes `"hta":{...},` for the rank's Kineto process (nothing when the
 * rank is not Kineto input in HTA-compatible mode). Schema: docs/kineto.md. */
void ct_hta_json(FILE *f, const struct ct_rank *r);

/* The text report's HTA-compatible section (nothing without Kineto input). */
void ct_hta_text(FILE *f, const struct ct_report *rep);

#endif
