/* Ring records to format fields (ringrec.h). */
#include "src/ringrec.h"

#include "src/ring.h"

/* The format's fields of a packed API record (see ring.h). */
static void unpack_api(const uint64_t *w, unsigned flags, uint64_t *f)
{
    f[CT_API_START] = w[CT_PA_START];
    f[CT_API_END] = w[CT_PA_END];
    f[CT_API_CORR] = w[CT_PA_CORR];
    f[CT_API_STREAM] = w[CT_PA_STREAM];
    f[CT_API_NAME] = (uint32_t)w[CT_PA_NAME_FAMILY];
    f[CT_API_FAMILY] = (w[CT_PA_NAME_FAMILY] >> 32) & 0xff;
    f[CT_API_FLAGS] = (w[CT_PA_NAME_FAMILY] >> 40) & 0xff;
    f[CT_API_COPY_KIND] = (w[CT_PA_NAME_FAMILY] >> 48) & 0xff;
    f[CT_API_RESULT] = (uint64_t)(int64_t)(int32_t)(uint32_t)w[CT_PA_RESULT_DEV];
    f[CT_API_DEVICE] = (uint64_t)(int64_t)(int32_t)(uint32_t)(w[CT_PA_RESULT_DEV] >> 32);
    if (flags & CT_RF_SDEV) {
        f[CT_API_STREAM] = w[CT_PA_STREAM] & ((1ull << 48) - 1);
        f[CT_API_DEVICE] = (uint64_t)(int64_t)((int)(w[CT_PA_STREAM] >> 48) - 1);
    }
    f[CT_API_KERNEL] = (uint32_t)w[CT_PA_KERNEL_SHMEM];
    f[CT_API_SHMEM] = w[CT_PA_KERNEL_SHMEM] >> 32;
    f[CT_API_GRID_X] = (uint32_t)w[CT_PA_GRID_XY];
    f[CT_API_GRID_Y] = w[CT_PA_GRID_XY] >> 32;
    f[CT_API_GRID_Z] = (uint32_t)w[CT_PA_GRID_Z_BLK_X];
    f[CT_API_BLOCK_X] = w[CT_PA_GRID_Z_BLK_X] >> 32;
    f[CT_API_BLOCK_Y] = (uint32_t)w[CT_PA_BLK_YZ];
    f[CT_API_BLOCK_Z] = w[CT_PA_BLK_YZ] >> 32;
    f[CT_API_BYTES] = w[CT_PA_BYTES];
}

unsigned ct_ringrec_fields(unsigned kind, unsigned flags, const uint64_t *w, unsigned nwords,
                           const struct ct_clock_conv *conv, int tsc, uint64_t *out)
{
    uint64_t unpacked[CT_API_NFIELDS];
    if (kind == CT_REC_API && (flags & CT_RF_PACKED)) {
        if (nwords != CT_PA_NWORDS)
            return 0;
        unpack_api(w, flags, unpacked);
        w = unpacked;
        nwords = CT_API_NFIELDS;
    }
    if (kind == 0 || kind >= CT_REC_KIND_COUNT || nwords != ct_kind_table[kind].nfields)
        return 0; /* cannot happen with our own emitters; never trust it anyway */
    const uint8_t *codec = ct_kind_table[kind].codec;
    for (unsigned i = 0; i < nwords; i++) {
        uint64_t v = w[i];
        switch (codec[i]) {
        case CT_CODEC_TIME:
        case CT_CODEC_END: v = ct_ringrec_ns(v, flags, conv, tsc); break;
        case CT_CODEC_OTIME:
        case CT_CODEC_OEND: v = v ? ct_ringrec_ns(v, flags, conv, tsc) : 0; break;
        default: break;
        }
        out[i] = v;
    }
    return nwords;
}
