/* `unit_report SUITE`: the decoder's suites (decoder/), one meson test each
 * (runner.h). The analysis suites build their timelines by hand
 * (timeline_builder.h). */
#include "tests/unit/runner.h"

Suite *intervals_suite(void);
Suite *demangle_suite(void);
Suite *progress_suite(void);
Suite *extract_suite(void);
Suite *sorting_suite(void);
Suite *job_suite(void);
Suite *breakdown_suite(void);
Suite *bubbles_suite(void);
Suite *stalls_suite(void);
Suite *stragglers_suite(void);
Suite *collectives_suite(void);
Suite *iterations_suite(void);
Suite *clock_suite(void);
Suite *options_suite(void);
Suite *goodput_suite(void);
Suite *critical_path_suite(void);
Suite *diagnose_replay_suite(void);
Suite *diagnose_light_suite(void);
Suite *provenance_suite(void);
Suite *json_suite(void);
Suite *html_suite(void);
Suite *salvaged_suite(void);
Suite *efficiency_suite(void);
Suite *efficiency_streams_suite(void);
Suite *nccl_links_suite(void);
Suite *nccl_channel_phases_suite(void);
Suite *xfer_model_suite(void);
Suite *speed_of_light_suite(void);
Suite *comm_kernels_suite(void);
Suite *shmem_types_suite(void);
Suite *shmem_ops_suite(void);

static const struct th_suite suites[] = {
    {"intervals", intervals_suite},
    {"demangle", demangle_suite},
    {"progress", progress_suite},
    {"extract", extract_suite},
    {"sorting", sorting_suite},
    {"job", job_suite},
    {"breakdown", breakdown_suite},
    {"bubbles", bubbles_suite},
    {"stalls", stalls_suite},
    {"stragglers", stragglers_suite},
    {"collectives", collectives_suite},
    {"iterations", iterations_suite},
    {"clock", clock_suite},
    {"options", options_suite},
    {"goodput", goodput_suite},
    {"critical_path", critical_path_suite},
    {"diagnose_replay", diagnose_replay_suite},
    {"diagnose_light", diagnose_light_suite},
    {"salvaged", salvaged_suite},
    {"nccl_links", nccl_links_suite},
    {"nccl_channel_phases", nccl_channel_phases_suite},
    {"xfer_model", xfer_model_suite},
    {"speed_of_light", speed_of_light_suite},
    {"provenance", provenance_suite},
    {"json", json_suite},
    {"html", html_suite},
    {"efficiency", efficiency_suite},
    {"efficiency_streams", efficiency_streams_suite},
    {"comm_kernels", comm_kernels_suite},
    {"shmem_types", shmem_types_suite},
    {"shmem_ops", shmem_ops_suite},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return th_run_suites(suites, argc, argv);
}
