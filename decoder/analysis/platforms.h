/* The platforms cutrace knows the interconnect peaks of, by the device
 * name the trace recorded (decoder/analysis/platforms.c; the table and its
 * sources are in docs/efficiency.md, "NVLink peaks"). */
#ifndef CT_PLATFORMS_H
#define CT_PLATFORMS_H

struct ct_platform {
    const char *label;  /* "H100 SXM" */
    const char *nvlink; /* "NVLink 4, 18 links" */
    double nvlink_gbs;  /* NVLink peak, total bidirectional (tx + rx), GB/s (1e9 B/s) */
};

/* The entry whose rule matches device name `name` (cuDeviceGetName's:
 * "NVIDIA H100 80GB HBM3"), or NULL: no entry (another part, a PCIe or
 * NVL card, an unknown name). */
const struct ct_platform *ct_platform_of(const char *name);

#endif
