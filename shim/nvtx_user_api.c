/*
 * The cutrace user API (include/cutrace/cutrace.h): the exported
 * cutrace_api_v1 table. Marks and ranges go to the "cutrace" domain through
 * the NVTX range code (shim/nvtx.c); flush and recording ask the recorder.
 *
 * Never: change the caller's errno; take a lock or allocate on a record
 * path; write to the trace while the recorder is not on.
 */
#include "shim/nvtx_int.h"

#include "cutrace/cutrace.h"

/* ---- the user API (include/cutrace/cutrace.h), domain "cutrace" ---- */

static void api_mark(const char *name)
{
    ct_nvtx_mark(DOMAIN_CUTRACE, msg_ascii(name));
}
static int api_push(const char *name)
{
    return ct_nvtx_range_push(DOMAIN_CUTRACE, msg_ascii(name));
}
static int api_pop(void)
{
    return ct_nvtx_range_pop(DOMAIN_CUTRACE);
}

static int api_flush(unsigned timeout_ms)
{
    CT_ERRNO_SAVE;
    int r = -ENODEV;
    if (rec_begin()) {
        r = ct_recorder_flush(timeout_ms);
        rec_end();
    }
    CT_ERRNO_RESTORE;
    return r;
}

static int api_recording(void)
{
    CT_ERRNO_SAVE;
    int r = ct_shim_recording();
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT const struct cutrace_api_v1 cutrace_api_v1 = {
    sizeof(struct cutrace_api_v1), api_mark, api_push, api_pop, api_flush, api_recording,
};
