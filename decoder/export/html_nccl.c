/*
 * The HTML report's NCCL section (decoder/export/html_nccl.js draws it):
 * the page's data carry the report's JSON "nccl" section as `cutrace
 * report --json` writes it (decoder/export/nccl_out.c), so that the link
 * matrix and the collectives' choices and split are the JSON's figures, not
 * a second rendering of them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "decoder/export/html_int.h"
#include "decoder/export/nccl_out.h"

void ct_html_nccl_json(FILE *f, const struct ct_report *rep)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        fputs("\"nccl\":null", f);
        return;
    }
    ct_nccl_json(m, rep);
    if (fclose(m)) {
        free(buf);
        fputs("\"nccl\":null", f);
        return;
    }
    /* inside <script>: "<", ">" and "&" occur in JSON only inside strings,
     * where their \u escapes mean the same */
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '<' || buf[i] == '>' || buf[i] == '&')
            fprintf(f, "\\u%04x", (unsigned)buf[i]);
        else
            fputc(buf[i], f);
    }
    free(buf);
}

/* The page's NCCL script (decoder/export/html_nccl.js, one string per
 * line), written where html_page.html has "@NCCLJS@". */
static const char *const script[] = {
#include "decoder/html_nccl.inc" /* generated from export/html_nccl.js */
};

void ct_html_nccl_script(FILE *f)
{
    for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++)
        fputs(script[i], f);
}
