/* What the HTML report's writer (decoder/export/html.c) shares with its
 * critical-path section (export/html_critical_path.c). */
#ifndef CT_EXPORT_HTML_INT_H
#define CT_EXPORT_HTML_INT_H

#include <stdio.h>

#include "decoder/export/export.h"

/* A JSON string that is also safe inside <script>: <, >, & as \u escapes;
 * bytes outside ASCII become '?'. */
void ct_html_str(FILE *f, const char *s);

/* "cp":{...} of the page's data: the section's figures, or its reason. */
void ct_html_cp_json(FILE *f, const struct ct_report *rep, const struct ct_html_cp *cp);

#endif
