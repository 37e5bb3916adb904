/*
 * CUPTI PM sampling's pure part (pm_sampling_decode.h): the metric table,
 * value scaling, GPU time conversion and image sizing. Never touches
 * CUPTI, a clock or the trace.
 */
#include "shim/pm_sampling_decode.h"

#include <math.h>

/*
 * PM sampling metrics that mean what the GPM metrics recorded by
 * shim/health_gpm.c mean (docs/efficiency.md has the pairs and why):
 * cycles with work, warps resident, a pipe's active cycles and DRAM
 * throughput as a share of their peak over the sample, and PCIe and
 * NVLink bytes per second. Recorded under the GPM counters' names so that
 * every reader of those (attribution, findings, page, rows, diff) reads
 * them unchanged; the recorder metadata `efficiency_source` says which
 * source wrote a device's counters.
 */
const struct ct_pm_metric ct_pm_metrics[CT_PM_NMETRIC] = {
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "gpm_sm_util", "0.01%", 100},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", "gpm_sm_occupancy", "0.01%", 100},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "gpm_tensor_util", "0.01%",
     100},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpm_dram_bw_util", "0.01%", 100},
    {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", "gpm_fp64_util", "0.01%",
     100},
    {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "gpm_fp32_util", "0.01%", 100},
    {"sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed", "gpm_fp16_util", "0.01%",
     100},
    /* the GPU's own direction: what it writes goes out (tx), what it
     * reads comes in (rx) */
    {"pcie__write_bytes.sum.per_second", "gpm_pcie_tx", "KiB/s", 1.0 / 1024},
    {"pcie__read_bytes.sum.per_second", "gpm_pcie_rx", "KiB/s", 1.0 / 1024},
    {"nvltx__bytes.sum.per_second", "gpm_nvlink_tx", "KiB/s", 1.0 / 1024},
    {"nvlrx__bytes.sum.per_second", "gpm_nvlink_rx", "KiB/s", 1.0 / 1024},
};

int ct_pm_counter_value(int m, double v, int64_t *out)
{
    if (m < 0 || m >= CT_PM_NMETRIC || !(v >= 0)) /* NaN too */
        return -1;
    if (ct_pm_metrics[m].scale == 100 && v > 100)
        v = 100;
    double x = v * ct_pm_metrics[m].scale + 0.5;
    *out = x < 9.2e18 ? (int64_t)x : INT64_MAX;
    return 0;
}

uint64_t ct_pm_gpu_to_mono(uint64_t gpu_ns, uint64_t off)
{
    return gpu_ns > off ? gpu_ns - off : 0;
}

int ct_pm_sample_span(uint64_t gpu_start, uint64_t gpu_end, uint64_t off, uint64_t prev_end,
                      uint64_t *start, uint64_t *len)
{
    if (gpu_end <= gpu_start || gpu_start <= off)
        return -1;
    uint64_t s = ct_pm_gpu_to_mono(gpu_start, off), e = s + (gpu_end - gpu_start);
    if (s < prev_end)
        s = prev_end;
    if (e <= s)
        return -1;
    *start = s;
    *len = e - s;
    return 0;
}

uint32_t ct_pm_max_samples(unsigned interval_us, unsigned pass_ms)
{
    if (!interval_us)
        return 16;
    uint64_t n = 4ull * pass_ms * 1000u / interval_us;
    if (n < 16)
        n = 16;
    return n > CT_PM_MAX_SAMPLES ? CT_PM_MAX_SAMPLES : (uint32_t)n;
}
