/* What the HTML report's writer (decoder/export/html.c) shares with its
 * critical-path section (export/html_critical_path.c) and its timeline
 * rows (export/html_timeline.c). */
#ifndef CT_EXPORT_HTML_INT_H
#define CT_EXPORT_HTML_INT_H

#include <stdio.h>

#include "decoder/export/export.h"

/* A JSON string that is also safe inside <script>: <, >, & as \u escapes;
 * bytes outside ASCII become '?'. */
void ct_html_str(FILE *f, const char *s);

/* "cp":{...} of the page's data: the section's figures, or its reason. */
void ct_html_cp_json(FILE *f, const struct ct_report *rep, const struct ct_html_cp *cp);

/* Rank r's timeline (rep->rr[r]) as "rows":[...],"zoom":{...}|null:
 * raw intervals when the rank has at most limit of them, else binned, with
 * the slowest step's window [zlo, zhi] (ns since time zero; zlo > zhi:
 * none) written again for the zoom. Format in html_timeline.c. Opens the
 * rank while it reads it. 0, or -ENOMEM with empty rows and "tl_why". */
int ct_html_timeline(FILE *f, const struct ct_report *rep, size_t r, size_t limit, int64_t zlo,
                     int64_t zhi);

/* GPU efficiency (html_efficiency.c): a drawn rank's ",\"eff\":{...}" (its
 * activity lines), the page's "\"eff_fam\":{...}" (the job's kernel
 * families), and the page script that draws them. */
void ct_html_eff_rank_json(FILE *f, const struct ct_report *rep, size_t r);
void ct_html_eff_json(FILE *f, const struct ct_report *rep);
void ct_html_eff_script(FILE *f);

/* NCCL (html_nccl.c): the page's "\"nccl\":{...}" (the report's JSON
 * section, escaped for <script>) and the page script that draws it. */
void ct_html_nccl_json(FILE *f, const struct ct_report *rep);
void ct_html_nccl_script(FILE *f);

#endif
