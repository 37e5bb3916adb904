/*
 * One row of the rows' JSON lines, parsed (decoder/compare/fleet_row.c).
 */
#ifndef CT_FLEET_ROW_H
#define CT_FLEET_ROW_H

#include <stddef.h>

enum { CT_JNULL, CT_JNUM, CT_JSTR, CT_JBOOL };

struct ct_jv {
    const char *key;
    const char *s; /* string value, or the number's text */
    double num;
    int type;
};

/* One parsed row: members of the top-level object; members of a nested
 * object (labels) have key "labels:KEY". Strings point into scratch. */
struct ct_jrow {
    struct ct_jv *v;
    size_t n, cap;
    char *scratch;
    size_t slen, scap;
};

/* Parses one line into r (its arrays reused; the caller frees r->v and
 * r->scratch): 0, -EINVAL (not one JSON object of the rows' shape),
 * -ENOMEM. */
int ct_jrow_parse(struct ct_jrow *r, const char *line, size_t n);
/* The member key, NULL when absent. */
const struct ct_jv *ct_jrow_get(const struct ct_jrow *r, const char *key);
/* Its text (a string, or a number as written), NULL when absent or null. */
const char *ct_jrow_str(const struct ct_jrow *r, const char *key);
/* Its number, NaN when absent or not a number. */
double ct_jrow_num(const struct ct_jrow *r, const char *key);

#endif
