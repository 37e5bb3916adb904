/*
 * hw_links.c - what the interconnect can carry, read once on the writer
 * thread: each device's active NVLink links from NVML, and the host's RDMA
 * ports and their rates from sysfs. The report sets each collective's bus
 * bandwidth against them ("speed of light", docs/nccl.md); nothing here
 * samples, and a reading that cannot be had is recorded with its reason.
 *
 * Recorded (metadata): per device `nvlink_links` (active links) or
 * `nvlink_unavailable`; per process `nic_gbps` (the active ports' rates
 * summed, Gb/s) with `nic_ports` (port=Gb/s, ...), or `nic_unavailable`.
 * CUTRACE_TEST_SYSFS replaces /sys (tests: a made-up port tree).
 */
#include "shim/hw_links.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/shim.h"
#include "src/ownfd.h"

/* NVML's NVML_NVLINK_MAX_LINKS (18 from Hopper on); links past a device's
 * own answer NVML_ERROR_INVALID_ARGUMENT and are not counted. */
#define MAX_LINKS                 18
#define NVML_SUCCESS_             0
#define NVML_ERROR_NOT_SUPPORTED_ 3

static void meta(uint64_t scope, uint64_t id, const char *key, const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_mono_ns(), scope, id, ct_intern(key), ct_intern(value)};
    ct_emit(CT_REC_META, CT_RF_NS, f, CT_META_NFIELDS);
}

void ct_hw_links_device(void *nvml_lib, int dev, void *handle)
{
    typedef int (*state_fn)(void *, unsigned, unsigned *);
    state_fn state = NULL;
    void *p = nvml_lib ? dlsym(nvml_lib, "nvmlDeviceGetNvLinkState") : NULL;
    memcpy(&state, &p, sizeof(p));
    if (!state) {
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "nvlink_unavailable",
             "NVML has no nvmlDeviceGetNvLinkState");
        return;
    }
    int active = 0, answered = 0, rc0 = 0;
    for (unsigned l = 0; l < MAX_LINKS; l++) {
        unsigned on = 0;
        int rc = state(handle, l, &on);
        if (l == 0)
            rc0 = rc;
        if (rc != NVML_SUCCESS_)
            continue;
        answered++;
        active += on == 1;
    }
    char buf[64];
    if (!answered) {
        snprintf(buf, sizeof(buf), "%s (NVML %d)",
                 rc0 == NVML_ERROR_NOT_SUPPORTED_ ? "no NVLink on this device" : "NVML refused",
                 rc0);
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "nvlink_unavailable", buf);
        return;
    }
    snprintf(buf, sizeof(buf), "%d", active);
    meta(CT_SCOPE_DEVICE, (uint64_t)dev, "nvlink_links", buf);
}

/* The rate in Gb/s of an active port dir (…/ports/N), or 0. */
static double port_gbps(const char *dir)
{
    char path[1000], buf[128];
    snprintf(path, sizeof(path), "%s/state", dir);
    if (ct_own_read_small(path, buf, sizeof(buf)) <= 0 || !strstr(buf, "ACTIVE"))
        return 0;
    snprintf(path, sizeof(path), "%s/rate", dir);
    double g = 0;
    if (ct_own_read_small(path, buf, sizeof(buf)) <= 0 || sscanf(buf, "%lf Gb/sec", &g) != 1 ||
        !(g > 0) || g > 1e5)
        return 0;
    return g;
}

void ct_hw_links_host(void)
{
    const char *root = getenv("CUTRACE_TEST_SYSFS");
    char base[300], list[512] = "";
    snprintf(base, sizeof(base), "%s/class/infiniband", root && *root ? root : "/sys");
    DIR *d = opendir(base);
    if (!d) {
        meta(CT_SCOPE_PROCESS, 0, "nic_unavailable",
             "no /sys/class/infiniband (no RDMA NIC, or a container without them)");
        return;
    }
    double total = 0;
    size_t at = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char ports[600];
        snprintf(ports, sizeof(ports), "%s/%.200s/ports", base, e->d_name);
        DIR *pd = opendir(ports);
        if (!pd)
            continue;
        struct dirent *pe;
        while ((pe = readdir(pd))) {
            if (pe->d_name[0] == '.')
                continue;
            char dir[900];
            snprintf(dir, sizeof(dir), "%s/%.200s", ports, pe->d_name);
            double g = port_gbps(dir);
            if (!(g > 0))
                continue;
            total += g;
            int w = snprintf(list + at, sizeof(list) - at, "%s%.60s/%.20s=%g", at ? "," : "",
                             e->d_name, pe->d_name, g);
            if (w > 0 && (size_t)w < sizeof(list) - at)
                at += (size_t)w;
        }
        closedir(pd);
    }
    closedir(d);
    if (!(total > 0)) {
        meta(CT_SCOPE_PROCESS, 0, "nic_unavailable",
             "no active RDMA port in /sys/class/infiniband");
        return;
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "%g", total);
    meta(CT_SCOPE_PROCESS, 0, "nic_gbps", buf);
    meta(CT_SCOPE_PROCESS, 0, "nic_ports", list);
}
