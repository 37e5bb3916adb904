/* Minimal JSON output: strings are escaped and invalid UTF-8 is replaced,
 * so whatever bytes a trace holds, the output parses. */
#ifndef CT_JSON_H
#define CT_JSON_H

#include <stdio.h>

void ct_json_str(FILE *f, const char *s);

#endif
