/*
 * Each collective's speed of light: the bus bandwidth its links can carry
 * (decoder/analysis/speed_of_light.c; docs/nccl.md, "Speed of light").
 */
#ifndef CT_SPEED_OF_LIGHT_H
#define CT_SPEED_OF_LIGHT_H

struct ct_report;

/* Fills sol_gbps, sol_pct, sol_basis and sol_reason of every rep->coll row
 * (ct_collectives_table's). 0 or -ENOMEM. */
int ct_speed_of_light(struct ct_report *rep);

#endif
