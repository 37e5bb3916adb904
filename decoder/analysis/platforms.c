/*
 * Interconnect peaks by recorded device name (platforms.h). Only parts
 * whose NVLink is the GPU's full complement on its baseboard (SXM and
 * superchip modules): a PCIe card's or an NVL card's NVLink bridge, an
 * export variant (H800, H20) or a name not below has no entry, and what
 * needs a peak says so rather than guess. Figures: NVIDIA's (sources in
 * docs/efficiency.md, "NVLink peaks").
 *
 * Rules match on the name as cuDeviceGetName gives it: the SXM H100 is
 * "NVIDIA H100 80GB HBM3" (or "... SXM5 ..."), the SXM H200 "NVIDIA H200";
 * the PCIe and NVL cards say "PCIe" and "NVL"; GH200 and GB200 contain
 * "H200" and "B200" and are told apart first.
 */
#include "decoder/analysis/platforms.h"

#include <stddef.h>
#include <string.h>

static const struct ct_platform table[] = {
    {"H100 SXM", "NVLink 4, 18 links", 900}, {"H200 SXM", "NVLink 4, 18 links", 900},
    {"B200", "NVLink 5, 18 links", 1800},    {"GB200", "NVLink 5, 18 links", 1800},
    {"GB300", "NVLink 5, 18 links", 1800},
};

const struct ct_platform *ct_platform_of(const char *name)
{
    if (!name || !*name || strstr(name, "PCIe") || strstr(name, "NVL") || strstr(name, "GH200"))
        return NULL;
    if (strstr(name, "GB300"))
        return &table[4];
    if (strstr(name, "GB200"))
        return &table[3];
    if (strstr(name, "B200"))
        return &table[2];
    if (strstr(name, "H200"))
        return &table[1];
    if (strstr(name, "H100") && (strstr(name, "HBM3") || strstr(name, "SXM")))
        return &table[0];
    return NULL;
}
