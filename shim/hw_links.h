/*
 * What the interconnect can carry (shim/hw_links.c): read once on the
 * writer thread and recorded as metadata for the report's speed of light.
 */
#ifndef CT_SHIM_HW_LINKS_H
#define CT_SHIM_HW_LINKS_H

/* Device dev's active NVLink links, from NVML (nvml_lib: its dlopen
 * handle; handle: the device's nvmlDevice_t). */
void ct_hw_links_device(void *nvml_lib, int dev, void *handle);
/* The host's active RDMA ports and their rates, from sysfs. */
void ct_hw_links_host(void);

#endif
