/*
 * cutrace trace file format, version 7 — the only contract between the
 * recorder (libcutrace.so) and the decoder (`cutrace`).
 *
 * Every format change bumps CT_FORMAT_VERSION and adds a golden file under
 * tests/golden that must decode forever. All integers are little-endian.
 *
 * Versions: 1 (kinds META..ERROR); 2 adds CT_REC_COUNTER (health counters
 * sampled beside the timeline); 3 adds the salvage frame (a trace completed
 * from the live mapping of a process that died, below) and the live mapping
 * itself; 4 adds CT_REC_NCCL_INFO and CT_REC_NCCL_PROXY (NCCL's own
 * account of an op from its profiler plugin: algorithm, protocol and
 * channels; proxy steps per channel, peer and direction); 5 adds
 * CT_REC_NCCL_CHANNEL (each kernel channel's start and stop on the GPU's
 * timer), CT_REC_NCCL_NET (the network transport's work per ProxyOp and
 * queue pair or socket), CT_REC_NCCL_PHASE (a kernel channel's barrier
 * phases, profiler ABI v7) and CT_REC_NCCL_TAG (an op's user tag, v7); 6 adds
 * CT_REC_NCCL_STEP (one raw proxy step, on request: CUTRACE_NCCL_STEPS);
 * 7 lets a CT_REC_NCCL record be another library's collective (NVSHMEM's
 * on-stream collectives: CT_NCCL_DTYPE_NVSHMEM in its dtype field, below),
 * so that a reader of version 6 or older, which would call it NCCL's,
 * refuses the file. Nothing else changed: a version 1 to 6 file is a
 * version 7 file without those, and readers accept all seven.
 *
 * ## File layout
 *
 * A trace file is a valid concatenation of zstd frames, so `zstd -dc FILE`
 * shows the raw chunk payloads:
 *
 *   [file header]   zstd skippable frame, magic CT_SKIP_MAGIC_HEADER
 *   [chunk]*        ordinary zstd frames (magic 0xFD2FB528), one per chunk,
 *                   written with the content size and the XXH64 checksum flag
 *   [salvaged]      after a salvage only (version 3): the chunks recovered
 *                   from the process's live mapping, then the salvage frame
 *   [footer]        optional zstd skippable frame, magic CT_SKIP_MAGIC_FOOTER,
 *                   written by a clean shutdown or by a salvage
 *
 * A file cut anywhere (the job was SIGKILLed, the disk filled up) decodes up
 * to its last complete frame; the reader reports "truncated at offset N".
 * Other skippable frames (magics 0x184D2A50..0x184D2A5F not used here) are
 * ignored by readers of this version, which leaves room for additive
 * extensions without a version bump.
 *
 * ## File header (skippable frame)
 *
 *   off  size  field
 *     0     4  CT_SKIP_MAGIC_HEADER (0x184D2A50)
 *     4     4  payload length, >= CT_HEADER_MIN_SIZE (64)
 *     8     8  magic "CUTRACE\0"
 *    16     2  format version (CT_FORMAT_VERSION). A reader refuses versions
 *              newer than its own.
 *    18     2  header payload size as written (== payload length)
 *    20     4  flags, reserved, 0
 *    24     8  feature bits (CT_FEAT_*)
 *    32     4  clock source (enum ct_clock_source) the recorder read
 *    36     4  reserved, 0
 *    40     8  TSC frequency in Hz, 0 when not recorded (CT_REC_CLOCK records
 *              carry (ticks, ns) pairs from which the rate follows)
 *    48     8  CLOCK_MONOTONIC ns at recorder start
 *    56     8  CLOCK_REALTIME ns at recorder start
 *    64     4  pid of the recording process
 *    68     4  exec generation of that pid (0 for the first image)
 *              (72 bytes in all: the payload is 64 bytes)
 *
 * Timestamps in records are always CLOCK_MONOTONIC nanoseconds of the host
 * ("the trace clock"): when the recorder reads the TSC, its writer converts
 * ticks to nanoseconds before encoding, anchored to (TSC, monotonic) pairs it
 * takes as it runs. Clock-sync records (CT_REC_CLOCK) give (monotonic,
 * realtime) pairs at start, about every second and at the end, so traces of
 * many hosts can be aligned.
 *
 * ## Chunk (payload of one zstd frame)
 *
 * Each chunk decodes on its own (its timestamps are relative to its own base)
 * except for strings, which are defined once per file in the first chunk that
 * needs them. Varints are unsigned LEB128 (at most 10 bytes); "zigzag" maps
 * signed n to (n << 1) ^ (n >> 63). All arithmetic is modulo 2^64.
 *
 *   varint  magic CT_CHUNK_MAGIC
 *   varint  tid of the recording thread (Linux thread id)
 *   varint  chunk sequence number in this file, from 0
 *   varint  base time, ns (the initial "previous time" of every kind)
 *   varint  number of string definitions that follow
 *           each: varint id, varint length, then that many bytes (UTF-8, no
 *           NUL). Ids start at 1 and are defined once per file, in or before
 *           the first chunk whose records use them (not necessarily in
 *           increasing order); id 0 is the empty string.
 *   varint  number of records that follow, n
 *   n bytes one kind byte per record (enum ct_record_kind), in record order
 *   then, for each kind present in increasing kind order, for each of that
 *   kind's fields in table order, one column holding that field of every
 *   record of the kind (count c), in record order:
 *     1 byte  width w, 0..8: bytes per value (0 = every value is 0)
 *     w * c   byte planes: byte 0 of every value, then byte 1 of every value,
 *             ... (values little-endian, after the field's codec below)
 *
 * Columns and byte planes keep random low bytes apart from near-constant
 * high bytes and constant fields, which is what lets zstd approach the
 * entropy of the timestamps (docs/performance.md, bench (c): bytes per record).
 *
 * ## Field codecs (enum ct_codec)
 *
 *   CT_CODEC_U      the value
 *   CT_CODEC_I      zigzag (signed)
 *   CT_CODEC_STR    the string id
 *   CT_CODEC_TIME   zigzag of (value - previous time of this kind);
 *                   the value becomes the previous time of this kind
 *   CT_CODEC_END    zigzag of (value - the record's latest TIME or
 *                   OTIME value); used for ends of spans; the value becomes
 *                   the previous time of this kind
 *   CT_CODEC_OTIME  optional time: 0 when absent, else 1 + zigzag(value -
 *                   previous time of this kind), which it then becomes
 *   CT_CODEC_OEND   optional end: 0 when absent, else 1 + zigzag(value - the
 *                   record's latest TIME/OTIME value), which it then becomes
 *
 * "Previous time of this kind" starts at the chunk's base time for every
 * kind, so a span's start is coded against the end of the previous span of
 * the same kind: back-to-back GPU intervals cost the gap, not the clock.
 * Within a record, "latest TIME/OTIME value" starts as the previous time of
 * this kind.
 *   CT_CODEC_SEQ    zigzag of (value - previous value of the same
 *                   field of the same kind in the chunk, initially 0); used
 *                   for correlation ids and sequence numbers
 *
 * ## Footer (skippable frame, optional)
 *
 *   off  size  field
 *     0     4  CT_SKIP_MAGIC_FOOTER (0x184D2A5F)
 *     4     4  payload length (>= 40)
 *     8     8  magic "CTFOOTER"
 *    16     8  number of chunks written
 *    24     8  number of records written
 *    32     8  records dropped (all reasons)
 *    40     8  CLOCK_MONOTONIC ns at shutdown (after a salvage: the time of the
 *              last record recovered)
 *
 * ## Salvage frame (skippable, version 3)
 *
 * A process killed by SIGKILL (or dead any other way that runs no handler)
 * leaves a trace without footer and, beside it, its live mapping (below).
 * A salvage (`cutrace salvage`, `cutrace run` after its job, the shim of a
 * later process of the job) completes the trace: the bytes the process
 * wrote whole, then one chunk per ring of the records recovered from the
 * mapping (sequence numbers going on; string definitions the file lacked
 * in the first), then this frame, then a footer. Commands that only read
 * do the same in memory, leaving the files as they are.
 *
 *   off  size  field
 *     0     4  CT_SKIP_MAGIC_SALVAGE (0x184D2A5E)
 *     4     4  payload length (>= CT_SALVAGE_SIZE, 72)
 *     8     8  magic "CTSALVAG"
 *    16     8  offset of the first recovered chunk: where the process's own
 *              writing ended
 *    24     8  records recovered from the mapping
 *    32     8  records that were being written at the instant of death: their
 *              ring's commit marker (the head) did not cover them, so they
 *              were dropped, never decoded
 *    40     8  string definitions the mapping's log could not hold (records
 *              naming them show "")
 *    48     8  records the rings had counted as dropped and the writer had not
 *              reported yet (also in a drop record of the recovered chunks)
 *    56     8  time of the last record recovered (trace clock)
 *    64     4  the signal that ended the process, 0 when not known (the
 *              salvage found the process gone)
 *    68     4  flags: CT_SALVAGE_GPU_PENDING when GPU times were still queued
 *              in the process (CUPTI's buffers, event pairs) and died with it:
 *              ops recovered without a GPU interval were never timed, not idle
 *    72     8  CLOCK_REALTIME ns of the salvage
 *
 * ## Live mapping (version 3)
 *
 * While a process records, its per-thread rings live in a file mapping made
 * at start, 0600 with O_EXCL|O_NOFOLLOW|O_CLOEXEC: in /dev/shm as
 * "cutrace-<uid>-<folder dev>-<folder inode>-<FNV-1a 64 of the trace's
 * name, hex>.live", or beside the trace as "<name>.cutrace-live"
 * (CUTRACE_BUFFERS). A clean end (footer written) removes it. Host byte
 * order: only the machine that wrote it reads it (src/live.h is its C form).
 *
 *   off            what
 *   0              header: magic "CTLIVE1\0", version 1, pid, exec generation,
 *                  the process's start time (field 22 of /proc/PID/stat) and
 *                  boot id (a salvage never touches the mapping of a process
 *                  that lives), uid, clock (TSC or monotonic), ring size,
 *                  where the regions below are, the trace's folder (dev,
 *                  inode) and name, the writer's latest tick conversion, the
 *                  frame it is writing (ring slot, that ring's tail once the
 *                  frame is written, the trace's length then), the trace's
 *                  length written whole, the next chunk sequence number, the
 *                  footer's counts so far, the GPU timing mode
 *   4096           slot table: one u32 per ring slot (0 free, 1 being set up,
 *                  2 a ring is there)
 *   65536          string log: the definitions the file does not have yet
 *                  (src/strlog.h): a 64-byte header (head, tail, lost, size),
 *                  then entries (u32 id, 0 until committed; u32 length;
 *                  bytes, padded to 8) from tail to head
 *   +1 MiB         the deferred trace's first bytes, while its file is not
 *                  created (CUTRACE_HOST_TRACE_KB), up to 4 MiB
 *   +4 MiB         ring slots: slot i at rings_off + i * (4096 + ring bytes):
 *                  the ring's control block (head at 0: bytes committed, the
 *                  commit marker; pending at 16: the head after the record
 *                  being written; dropped at 24; tail at 64: bytes the writer
 *                  let go, once their frame was written; dropped_reported at
 *                  72; size at 136; tid at 152; state at 156), then its data:
 *                  records as the writer reads them (src/ring.h), times in
 *                  ticks of the header's clock
 */
#ifndef CUTRACE_FORMAT_H
#define CUTRACE_FORMAT_H

#include <stdint.h>

#define CT_FORMAT_VERSION     7u
#define CT_FORMAT_VERSION_MIN 1u         /* oldest version readers still accept */
#define CT_FILE_MAGIC         "CUTRACE"  /* 8 bytes with its NUL */
#define CT_FOOTER_MAGIC       "CTFOOTER" /* 8 bytes, no NUL */
#define CT_SKIP_MAGIC_HEADER  0x184D2A50u
#define CT_SKIP_MAGIC_FOOTER  0x184D2A5Fu
/* Frames dropped in place to keep the file within CUTRACE_MAX_MB: a
 * skippable frame (its interior punched out of the file) where the oldest
 * chunks were. Readers skip it; `info` reports the bytes dropped. */
#define CT_SKIP_MAGIC_DROPPED 0x184D2A5Du
/* The salvage frame (version 3): the chunks before it, back to its offset,
 * were recovered from a dead process's live mapping. */
#define CT_SKIP_MAGIC_SALVAGE  0x184D2A5Eu
#define CT_SALVAGE_MAGIC       "CTSALVAG" /* 8 bytes, no NUL */
#define CT_SALVAGE_SIZE        72u        /* payload bytes of a v3 salvage frame */
#define CT_SALVAGE_GPU_PENDING 1u
#define CT_SKIP_MAGIC_MIN      0x184D2A50u
#define CT_SKIP_MAGIC_MAX      0x184D2A5Fu
#define CT_ZSTD_MAGIC          0xFD2FB528u
#define CT_HEADER_MIN_SIZE     64u         /* payload bytes of a v1 header */
#define CT_FOOTER_SIZE         40u         /* payload bytes of a v1 footer */
#define CT_CHUNK_MAGIC         0x4354u     /* "CT" */
#define CT_MAX_FIELDS          20          /* most fields any kind has */
#define CT_MAX_CHUNK_BYTES     (64u << 20) /* readers refuse larger chunks */

/* Feature bits in the header: what this recorder could capture. */
enum ct_feature {
    CT_FEAT_TSC = 1u << 0,  /* record times came from a calibrated TSC */
    CT_FEAT_CUDA = 1u << 1, /* CUDA driver interception enabled */
    CT_FEAT_NCCL = 1u << 2,
    CT_FEAT_IO = 1u << 3,
    CT_FEAT_NVTX = 1u << 4,
    CT_FEAT_GPU_TIMING = 1u << 5, /* GPU interval records may be present */
};

enum ct_clock_source {
    CT_CLOCK_MONOTONIC = 0, /* clock_gettime(CLOCK_MONOTONIC) */
    CT_CLOCK_TSC = 1,       /* rdtsc, converted to monotonic ns by the writer */
};

enum ct_codec {
    CT_CODEC_U = 1,
    CT_CODEC_I,
    CT_CODEC_STR,
    CT_CODEC_TIME,
    CT_CODEC_END,
    CT_CODEC_OTIME,
    CT_CODEC_OEND,
    CT_CODEC_SEQ,
};

/* Record kinds. 0 is never written (in memory it pads a ring). */
enum ct_record_kind {
    CT_REC_META = 1,     /* one key/value of process, device, comm metadata */
    CT_REC_CLOCK,        /* clock sync pair */
    CT_REC_API,          /* a CUDA driver call (host span) */
    CT_REC_GPU,          /* a GPU-side interval */
    CT_REC_NCCL,         /* an NCCL collective or point-to-point call */
    CT_REC_IO,           /* a file/pipe/socket operation or host wait */
    CT_REC_NVTX_RANGE,   /* push/pop or start/end range */
    CT_REC_NVTX_MARK,    /* instantaneous mark */
    CT_REC_DROP,         /* records lost, with why */
    CT_REC_ERROR,        /* something of the recorder's own failed */
    CT_REC_COUNTER,      /* a sampled health counter (format version 2) */
    CT_REC_NCCL_INFO,    /* NCCL's algorithm, protocol, channels of an op (version 4) */
    CT_REC_NCCL_PROXY,   /* an op's proxy steps on one channel to or from one peer (version 4) */
    CT_REC_NCCL_CHANNEL, /* one kernel channel of an op: its GPU start and stop (version 5) */
    CT_REC_NCCL_NET,     /* a ProxyOp's network work on one queue pair or socket (version 5) */
    CT_REC_NCCL_PHASE,   /* one barrier phase of a kernel channel (version 5) */
    CT_REC_NCCL_TAG,     /* an op's user tag (version 5) */
    CT_REC_NCCL_STEP,    /* one proxy step with its states' times, on request (version 6) */
    CT_REC_KIND_COUNT
};

/*
 * Meta scopes may be added without a version bump (older readers print an
 * unknown scope as "unknown"); fields and kinds may not.
 *
 * Field tables. The index enums give each field's position; the codec of
 * each field is listed beside it and in ct_kind_table below.
 */

/* CT_REC_META: one key/value pair. Consecutive META records with the same
 * (time, scope, scope_id) form one metadata object. */
enum ct_meta_field {
    CT_META_TIME,     /* TIME  when it was recorded */
    CT_META_SCOPE,    /* U     enum ct_meta_scope */
    CT_META_SCOPE_ID, /* U     device ordinal, communicator hash, ... (0 for process) */
    CT_META_KEY,      /* STR   e.g. "host", "rank", "cmdline", "name", "uuid" */
    CT_META_VALUE,    /* STR   the value as text */
    CT_META_NFIELDS
};
enum ct_meta_scope {
    CT_SCOPE_PROCESS = 0,
    CT_SCOPE_DEVICE = 1,
    CT_SCOPE_COMM = 2,
    CT_SCOPE_THREAD = 3,
    CT_SCOPE_RECORDER = 4, /* recorder configuration and state */
    CT_SCOPE_STREAM = 5,   /* a stream, scope_id = its stable id (keys: device, nonblocking) */
    CT_SCOPE_STACK = 6,    /* host call stack of the call whose correlation id is scope_id:
                            * key "frames", value "0x<ip>;0x<ip>;..." innermost first; the
                            * string table stores each distinct stack once. scope_id 0: the
                            * stack of the I/O span of the same thread that starts at this
                            * record's time (I/O records carry no correlation id) */
    CT_SCOPE_MODULE = 7,   /* an executable mapping, scope_id = its start address: key = the
                            * file's path, value "<start> <end> <file offset>" in hex */
    /* the GPU record just before it on the same thread (same time: its start) ran as node
     * scope_id of an executable CUDA graph (CUPTI's graphNodeId); key "node", value "" */
    CT_SCOPE_GRAPH_NODE = 8,
    /* dependencies of a graph as instantiated, in its executable nodes' ids (those of
     * CT_SCOPE_GRAPH_NODE): key "edges", value "F>T F>T ..." (hex ids; F "?" when the
     * predecessor's executable node is not known, e.g. a node inside a child graph);
     * several records when long. scope_id 0 */
    CT_SCOPE_GRAPH = 9,
};

/* CT_REC_CLOCK */
enum ct_clock_field {
    CT_CLOCK_MONO,      /* TIME  CLOCK_MONOTONIC ns */
    CT_CLOCK_REAL,      /* SEQ   CLOCK_REALTIME ns at the same instant */
    CT_CLOCK_TSC_TICKS, /* SEQ   raw TSC at the same instant (0 if none) */
    CT_CLOCK_GPU,       /* SEQ   GPU timestamp at the same instant (0 if none) */
    CT_CLOCK_DEVICE,    /* I     device of CT_CLOCK_GPU, -1 if none */
    CT_CLOCK_NFIELDS
};

/* CT_REC_API: a driver entry point as called. */
enum ct_api_field {
    CT_API_START,     /* TIME  host enter */
    CT_API_END,       /* END   host exit */
    CT_API_NAME,      /* STR   entry point as called, e.g. cuLaunchKernel_ptsz */
    CT_API_CORR,      /* SEQ   correlation id, unique per process, joins GPU records */
    CT_API_FAMILY,    /* U     enum ct_api_family */
    CT_API_RESULT,    /* I     CUresult returned */
    CT_API_DEVICE,    /* I     device ordinal, -1 unknown */
    CT_API_STREAM,    /* U     stable stream id (0 = none) */
    CT_API_KERNEL,    /* STR   kernel name (launches) */
    CT_API_GRID_X,    /* U     launches: grid x; copies (v5): a batch's count, else 0 */
    CT_API_GRID_Y,    /* U     launches: grid y; copies (v5): a failed batch's failIdx + 1 */
    CT_API_GRID_Z,    /* U */
    CT_API_BLOCK_X,   /* U */
    CT_API_BLOCK_Y,   /* U */
    CT_API_BLOCK_Z,   /* U */
    CT_API_SHMEM,     /* U     dynamic shared memory bytes */
    CT_API_BYTES,     /* U     bytes copied, set or allocated; event id with CT_APIF_EVENT */
    CT_API_COPY_KIND, /* U     enum ct_copy_kind */
    CT_API_FLAGS,     /* U     CT_APIF_* */
    CT_API_NFIELDS
};
enum ct_api_family {
    CT_FAM_OTHER = 0,
    CT_FAM_LAUNCH = 1,
    CT_FAM_MEMCPY = 2,
    CT_FAM_MEMSET = 3,
    CT_FAM_SYNC = 4,
    CT_FAM_ALLOC = 5,
    CT_FAM_GRAPH = 6,
    CT_FAM_MODULE = 7,
};
enum ct_copy_kind {
    CT_COPY_NONE = 0,
    CT_COPY_HTOD = 1,
    CT_COPY_DTOH = 2,
    CT_COPY_DTOD = 3,
    CT_COPY_HTOH = 4,
    CT_COPY_PEER = 5,
};
enum ct_api_flags {
    CT_APIF_PER_THREAD = 1u << 0, /* a _ptsz/_ptds entry point */
    CT_APIF_ASYNC = 1u << 1,      /* an *Async variant */
    CT_APIF_CAPTURED = 1u << 2,   /* issued to a stream under capture */
    CT_APIF_FREE = 1u << 3,       /* a free in the alloc family */
    /* CT_API_BYTES holds an event id, not bytes: the CUevent handle's value
     * (sync family: cuEventRecord*, cuStreamWaitEvent*, and
     * cuEventSynchronize, the one of them without CT_APIF_ASYNC: older
     * recorders left it without, and the decoder then takes that sync to
     * wait for every stream), the same in an event's records and in every
     * wait on it. As in CUDA, a wait depends on the latest record of its id before
     * it in the process (recording an event again moves it; a destroyed
     * event's handle may come back for a new one, which the same rule
     * covers). 0 only for a call given no event (the driver refused it). */
    CT_APIF_EVENT = 1u << 4,
    /* a cuStreamSynchronize* of the legacy default stream (NULL without
     * _ptsz, or CU_STREAM_LEGACY): it waits for what every blocking stream
     * had before it, not for its stream's work alone */
    CT_APIF_LEGACY = 1u << 5,
};

/* CT_REC_GPU: when an op really ran on the device. */
enum ct_gpu_field {
    CT_GPU_START,     /* TIME  GPU start on the trace clock */
    CT_GPU_END,       /* END   GPU end */
    CT_GPU_DEVICE,    /* I     device ordinal */
    CT_GPU_STREAM,    /* U     stable stream id */
    CT_GPU_CORR,      /* SEQ   correlation id of the API record */
    CT_GPU_TYPE,      /* U     enum ct_gpu_type */
    CT_GPU_NAME,      /* STR   kernel name */
    CT_GPU_BYTES,     /* U */
    CT_GPU_COPY_KIND, /* U     enum ct_copy_kind */
    CT_GPU_SOURCE,    /* U     enum ct_gpu_source */
    CT_GPU_NFIELDS
};
enum ct_gpu_type {
    CT_GPU_KERNEL = 1,
    CT_GPU_MEMCPY = 2,
    CT_GPU_MEMSET = 3,
    CT_GPU_NCCL = 4,
    CT_GPU_SYNC = 5,
    CT_GPU_GRAPH = 6,
};
enum ct_gpu_source {
    CT_SRC_CUPTI = 1,
    CT_SRC_EVENTS = 2,
    CT_SRC_NCCL_PLUGIN = 3,
    /* an event pair around a blocking host call (a synchronous copy with a
     * host end): the interval spans the host call, pageable staging
     * included, not only the transfer CUPTI would time */
    CT_SRC_EVENTS_BLOCKING = 4,
};

/* CT_REC_NCCL */
enum ct_nccl_field {
    CT_NCCL_START,     /* TIME  host enter */
    CT_NCCL_END,       /* END   host exit */
    CT_NCCL_OP,        /* U     enum ct_nccl_op */
    CT_NCCL_COMM,      /* U     communicator hash, identical on every rank */
    CT_NCCL_SEQ,       /* SEQ   per-communicator sequence number */
    CT_NCCL_COUNT,     /* U     element count */
    CT_NCCL_DTYPE,     /* U     ncclDataType_t value, or CT_NCCL_DTYPE_NVSHMEM | type */
    CT_NCCL_BYTES,     /* U */
    CT_NCCL_REDOP,     /* U     ncclRedOp_t value (NVSHMEM: enum ct_shmem_redop) */
    CT_NCCL_ROOT,      /* I     root rank, -1 if none */
    CT_NCCL_PEER,      /* I     peer rank, -1 if none */
    CT_NCCL_STREAM,    /* U     stable stream id */
    CT_NCCL_GROUP,     /* U     group id, 0 outside a group */
    CT_NCCL_CORR,      /* SEQ   correlation id */
    CT_NCCL_RANK,      /* I     this rank in the communicator */
    CT_NCCL_NRANKS,    /* U */
    CT_NCCL_GPU_START, /* OTIME GPU start when known */
    CT_NCCL_GPU_END,   /* OEND  GPU end when known */
    CT_NCCL_NFIELDS
};
enum ct_nccl_op {
    CT_NCCL_OP_ALLREDUCE = 1,
    CT_NCCL_OP_BROADCAST,
    CT_NCCL_OP_REDUCE,
    CT_NCCL_OP_ALLGATHER,
    CT_NCCL_OP_REDUCESCATTER,
    CT_NCCL_OP_ALLTOALL,
    CT_NCCL_OP_GATHER,
    CT_NCCL_OP_SCATTER,
    CT_NCCL_OP_SEND,
    CT_NCCL_OP_RECV,
    CT_NCCL_OP_BCAST,
    CT_NCCL_OP_COUNT
};
/* Version 7: a CT_REC_NCCL record whose dtype has this bit is NVSHMEM's
 * collective (nvshmemx_*_on_stream), not NCCL's: the dtype's low byte is
 * the index of its type in CT_SHMEM_TYPES (include/cutrace/shmem_types.h),
 * the redop an enum ct_shmem_redop (-1 without one), the communicator the
 * NVSHMEM team, the op what the collective is in NCCL's terms (a
 * reduction: AllReduce; fcollect: AllGather; alltoall: AlltoAll;
 * broadcast: Broadcast; reducescatter: ReduceScatter; barrier and sync:
 * CT_NCCL_OP_COUNT, "other", 0 bytes). */
#define CT_NCCL_DTYPE_NVSHMEM 0x10000u

/* CT_REC_IO */
enum ct_io_field {
    CT_IO_START,   /* TIME */
    CT_IO_END,     /* END */
    CT_IO_OP,      /* STR   libc name: read, pread64, poll, ... */
    CT_IO_FD,      /* I */
    CT_IO_FD_TYPE, /* U     enum ct_fd_type */
    CT_IO_PATH,    /* STR   path, or pipe:[ino] / socket:[ino] */
    CT_IO_BYTES,   /* U     bytes requested */
    CT_IO_RESULT,  /* I     return value (-errno on failure) */
    CT_IO_OFFSET,  /* I     file offset, -1 if none */
    CT_IO_NFIELDS
};
enum ct_fd_type {
    CT_FD_UNKNOWN = 0,
    CT_FD_FILE = 1,
    CT_FD_PIPE = 2,
    CT_FD_SOCKET = 3,
    CT_FD_CHAR = 4,
    CT_FD_DIR = 5,
    CT_FD_OTHER = 6,
};

/* CT_REC_NVTX_RANGE */
enum ct_nvtx_range_field {
    CT_NVTX_START,   /* TIME */
    CT_NVTX_END,     /* END */
    CT_NVTX_DOMAIN,  /* STR */
    CT_NVTX_MESSAGE, /* STR */
    CT_NVTX_DEPTH,   /* U     nesting depth for push/pop, 0 for start/end */
    CT_NVTX_NFIELDS
};

/* CT_REC_NVTX_MARK */
enum ct_nvtx_mark_field {
    CT_MARK_TIME,    /* TIME */
    CT_MARK_DOMAIN,  /* STR */
    CT_MARK_MESSAGE, /* STR */
    CT_MARK_NFIELDS
};

/* CT_REC_DROP */
enum ct_drop_field {
    CT_DROP_TIME,   /* TIME  when the writer noticed */
    CT_DROP_COUNT,  /* U     records lost since the previous DROP of this reason */
    CT_DROP_REASON, /* U     enum ct_drop_reason */
    CT_DROP_NFIELDS
};
enum ct_drop_reason {
    CT_DROP_RING_FULL = 1,    /* the writer fell behind this thread */
    CT_DROP_NO_BUFFER = 2,    /* no per-thread buffer could be had */
    CT_DROP_WRITE_FAILED = 3, /* the file could not be written */
    CT_DROP_STRINGS_FULL = 4, /* string table full: names became "" */
    CT_DROP_GPU_UNTIMED = 5,  /* ops left without a GPU interval (event pool/queue full) */
    CT_DROP_CUPTI = 6,        /* activity records CUPTI reported as dropped */
    CT_DROP_IO_BELOW_MIN = 7, /* io spans shorter than CUTRACE_IO_MIN_NS: counted, not recorded */
    /* NCCL profiler events (ops, channels, ProxyOps, steps, network work)
     * not followed: the plugin's fixed event or network pools were full */
    CT_DROP_NCCL_POOL_FULL = 8,
};

/* CT_REC_ERROR */
enum ct_error_field {
    CT_ERROR_TIME, /* TIME */
    CT_ERROR_WHAT, /* STR   human-readable description */
    CT_ERROR_CODE, /* I     errno-style or API code */
    CT_ERROR_NFIELDS
};

/* CT_REC_COUNTER (version 2): one sample of one counter. Names and units
 * are strings so that new counters need no format change; the recorder's
 * set is listed in docs/health.md ("sm_clock" MHz, "power" mW,
 * "throttle_reasons" bitmask, "cpu_time" ms, ...). */
enum ct_counter_field {
    CT_COUNTER_TIME,   /* TIME  when it was sampled */
    CT_COUNTER_DEVICE, /* I     device ordinal, -1 for a host counter */
    CT_COUNTER_NAME,   /* STR   counter name */
    CT_COUNTER_VALUE,  /* I     the value, an integer in unit */
    CT_COUNTER_UNIT,   /* STR   "MHz", "mW", "C", "%", "bytes", "KB/s", "ms", "bitmask", ... */
    CT_COUNTER_NFIELDS
};

/* CT_REC_NCCL_INFO (version 4): what NCCL's profiler plugin descriptor
 * says of one collective or point-to-point op (its Coll/P2p event, or a v6
 * copy-engine collective), joined to the op's CT_REC_NCCL record by the
 * correlation id. Strings are NCCL's own ("RING", "TREE", "NVLS", ...;
 * "LL", "LL128", "SIMPLE"), "" when NCCL gave none. */
enum ct_nccl_info_field {
    CT_NINFO_TIME,     /* TIME  when the event started */
    CT_NINFO_CORR,     /* SEQ   correlation id of the NCCL record */
    CT_NINFO_ALGO,     /* STR   algorithm */
    CT_NINFO_PROTO,    /* STR   protocol */
    CT_NINFO_CHANNELS, /* U     channels (nChannels; p2p: its channels), 0 unknown */
    CT_NINFO_WARPS,    /* U     warps per channel's block, 0 unknown */
    CT_NINFO_FLAGS,    /* U     CT_NINFO_F_* */
    CT_NINFO_NFIELDS
};
enum ct_nccl_info_flags {
    CT_NINFO_F_P2P = 1u << 0, /* a point-to-point op */
    CT_NINFO_F_CE = 1u << 1,  /* a copy-engine collective (v6 CeColl) */
};

/* CT_REC_NCCL_PROXY (version 4): one NCCL ProxyOp, i.e. the proxy steps of
 * one op on one channel to (send) or from (receive) one peer, aggregated
 * by the recorder: each step's time in each state is summed. States
 * (NCCL's ProxyStep states): send: GPU wait (SendGPUWait: the chunk not
 * yet produced by the kernel), peer wait (SendPeerWait: no credit from the
 * receiver), network (SendWait: posted to the network until it completes);
 * receive: peer wait (RecvWait: posted until the data arrived: includes
 * the sender's lateness and the wire), flush (RecvFlushWait), GPU wait
 * (RecvGPUWait: until the kernel consumed it). net_busy is the union of
 * the steps' time in SendWait (send) or RecvWait (receive): steps overlap
 * when several are in flight, so the plain sum can exceed the wall time. */
enum ct_nccl_proxy_field {
    CT_NPROXY_START,     /* TIME  first step's start */
    CT_NPROXY_END,       /* END   last step's stop */
    CT_NPROXY_CORR,      /* SEQ   correlation id of the NCCL record */
    CT_NPROXY_CHANNEL,   /* U     channel id */
    CT_NPROXY_PEER,      /* I     peer rank in the communicator */
    CT_NPROXY_SEND,      /* U     1 send, 0 receive */
    CT_NPROXY_STEPS,     /* U     steps stopped */
    CT_NPROXY_BYTES,     /* U     bytes of those steps (their transSize) */
    CT_NPROXY_GPU_WAIT,  /* U     ns in the GPU-wait state, summed over steps */
    CT_NPROXY_PEER_WAIT, /* U     ns waiting for the peer */
    CT_NPROXY_NET,       /* U     ns in SendWait (send), 0 (receive) */
    CT_NPROXY_FLUSH,     /* U     ns in RecvFlushWait (receive), 0 (send) */
    CT_NPROXY_NET_BUSY,  /* U     ns of the union, above */
    CT_NPROXY_NSTEPS,    /* U     nSteps NCCL announced for it */
    CT_NPROXY_CHUNK,     /* U     chunkSize NCCL announced */
    CT_NPROXY_NFIELDS
};

/* CT_REC_NCCL_CHANNEL (version 5): one channel of an op's NCCL kernel
 * (the profiler plugin's KernelCh event, ABI v4 on): its start and stop
 * as the GPU's globaltimer stamped them (the event's pTimer and its
 * KernelChStop state's), converted to the trace clock. One record per
 * channel rather than one per op with its channels packed: an op has up
 * to 64 channels (more than CT_MAX_FIELDS), and a channel's record is
 * written when it stops, from its own event, with no per-op state to
 * gather. Before zstd a channel costs its kind byte, the start coded
 * against the previous record's stop (minus about a run: up to 4 bytes
 * for runs below 16 s), the stop against the start (the run: up to 4),
 * the correlation id against the previous record's (0 within an op, a
 * few between: 1 byte) and the channel (1): 9-11 bytes; zstd takes most
 * of it where an op's channels run alike (docs/nccl.md, "Record format",
 * measured: about 1 byte a channel). Not written at ABI v3 (no GPU timers: its
 * channel events are the proxy thread's observations) nor for a channel
 * whose start or stop came without a timer. */
enum ct_nccl_channel_field {
    CT_NCHAN_START,   /* TIME  the channel's start (globaltimer) */
    CT_NCHAN_END,     /* END   its stop (globaltimer at KernelChStop) */
    CT_NCHAN_CORR,    /* SEQ   correlation id of the NCCL record */
    CT_NCHAN_CHANNEL, /* U     channel id */
    CT_NCHAN_NFIELDS
};

/* CT_REC_NCCL_NET (version 5): what NCCL's network transport reported of
 * one ProxyOp's transfers (the profiler plugin's NetPlugin events, children
 * of its ProxySteps) on one queue pair (IB: one event per work request
 * from its post to its completion) or one socket (one event per socket
 * operation), aggregated by the recorder per (ProxyOp, transport, device,
 * queue pair or socket), written after the op's CT_REC_NCCL_PROXY record.
 * busy: the work requests' times summed (several in flight overlap: it can
 * exceed end - start). At most CT_NNET_MAX a ProxyOp; work on further ones is
 * counted in the last record's `other_wrs` and `other_bytes`. */
#define CT_NNET_MAX 4
enum ct_nccl_net_transport { CT_NNET_IB = 1, CT_NNET_SOCKET = 2 };
enum ct_nccl_net_field {
    CT_NNET_START,       /* TIME  first work request's post */
    CT_NNET_END,         /* END   last one's completion */
    CT_NNET_CORR,        /* SEQ   correlation id of the NCCL record */
    CT_NNET_CHANNEL,     /* U     channel id of the ProxyOp */
    CT_NNET_PEER,        /* I     its peer (communicator rank) */
    CT_NNET_SEND,        /* U     1 send, 0 receive */
    CT_NNET_TRANSPORT,   /* U     enum ct_nccl_net_transport */
    CT_NNET_DEVICE,      /* I     the transport's device (IB: NIC port index), -1 socket */
    CT_NNET_QP,          /* U     queue pair number (IB), socket descriptor (socket) */
    CT_NNET_WRS,         /* U     work requests (socket operations) */
    CT_NNET_BYTES,       /* U     their bytes */
    CT_NNET_BUSY,        /* U     ns, their times summed */
    CT_NNET_OTHER_WRS,   /* U     work requests on queue pairs past CT_NNET_MAX */
    CT_NNET_OTHER_BYTES, /* U     their bytes */
    CT_NNET_NFIELDS
};

/* CT_REC_NCCL_PHASE (version 5): one barrier phase of one kernel channel
 * of an op (the profiler plugin's v7 KernelPhase event, NCCL's symmetric
 * kernels only): its start and stop on the GPU's timer, converted as the
 * channel's (CT_REC_NCCL_CHANNEL). */
enum ct_nccl_phase_id { CT_NPHASE_INITIAL_SYNC, CT_NPHASE_COMPUTE, CT_NPHASE_FINAL_SYNC };
enum ct_nccl_phase_field {
    CT_NPHASE_START,   /* TIME  the phase's start (globaltimer) */
    CT_NPHASE_END,     /* END   its stop (KernelPhaseStop's timer) */
    CT_NPHASE_CORR,    /* SEQ   correlation id of the NCCL record */
    CT_NPHASE_CHANNEL, /* U     channel id */
    CT_NPHASE_PHASE,   /* U     enum ct_nccl_phase_id (NCCL's phaseId; larger ones kept) */
    CT_NPHASE_NFIELDS
};

/* CT_REC_NCCL_TAG (version 5): the tag the application gave an op (v7's
 * userTag, ncclCollConfig_t's userProfilerTag), written at the op's start
 * when not 0. */
enum ct_nccl_tag_field {
    CT_NTAG_TIME, /* TIME  when the event started */
    CT_NTAG_CORR, /* SEQ   correlation id of the NCCL record */
    CT_NTAG_TAG,  /* U     the tag */
    CT_NTAG_NFIELDS
};

/* CT_REC_NCCL_STEP (version 6): one ProxyStep of a ProxyOp, raw, written
 * when it stops, only under CUTRACE_NCCL_STEPS (a per-process budget of
 * steps; the ProxyOp's CT_REC_NCCL_PROXY is written all the same). Its
 * times are when each state began, each coded against the one before
 * (OTIME: absent when the step never entered the state), the stop against
 * the last present one (END) and the start against the previous step's
 * stop (TIME): a step costs about 14-20 bytes before zstd (docs/nccl.md,
 * "Raw proxy steps"). The three state slots, in the order NCCL enters them:
 * send: GPU wait (SendGPUWait), peer wait (SendPeerWait), network
 * (SendWait); receive: peer wait (RecvWait), flush (RecvFlushWait), GPU
 * wait (RecvGPUWait). A state lasts from its begin to the next present
 * begin (or the stop); the recorder places the step's time in each state
 * that way even if NCCL entered one twice (it does not), so that each
 * state's time summed over a ProxyOp's steps is its CT_REC_NCCL_PROXY sum
 * to the ns; time in no known state comes before the first state. */
enum ct_nccl_step_field {
    CT_NSTEP_START,   /* TIME  the step's start (its ProxyStep event's start) */
    CT_NSTEP_STATE0,  /* OTIME send: GPU wait began; receive: peer wait */
    CT_NSTEP_STATE1,  /* OTIME send: peer wait; receive: flush */
    CT_NSTEP_STATE2,  /* OTIME send: network (SendWait); receive: GPU wait */
    CT_NSTEP_END,     /* END   the step's stop */
    CT_NSTEP_CORR,    /* SEQ   correlation id of the NCCL record */
    CT_NSTEP_CHANNEL, /* U     channel id of its ProxyOp */
    CT_NSTEP_PEER,    /* I     its peer (communicator rank) */
    CT_NSTEP_SEND,    /* U     1 send, 0 receive */
    CT_NSTEP_STEP,    /* SEQ   NCCL's step index */
    CT_NSTEP_BYTES,   /* U     its bytes (transSize) */
    CT_NSTEP_NFIELDS
};

struct ct_kind_desc {
    const char *name;
    uint8_t nfields;
    uint8_t codec[CT_MAX_FIELDS];
};

/* The codec of every field of every kind, indexed by enum ct_record_kind. */
static const struct ct_kind_desc ct_kind_table[CT_REC_KIND_COUNT] = {
    [CT_REC_META] = {"meta",
                     CT_META_NFIELDS,
                     {CT_CODEC_TIME, CT_CODEC_U, CT_CODEC_U, CT_CODEC_STR, CT_CODEC_STR}},
    [CT_REC_CLOCK] = {"clock",
                      CT_CLOCK_NFIELDS,
                      {CT_CODEC_TIME, CT_CODEC_SEQ, CT_CODEC_SEQ, CT_CODEC_SEQ, CT_CODEC_I}},
    [CT_REC_API] = {"api",
                    CT_API_NFIELDS,
                    {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_STR, CT_CODEC_SEQ, CT_CODEC_U,
                     CT_CODEC_I, CT_CODEC_I, CT_CODEC_U, CT_CODEC_STR, CT_CODEC_U, CT_CODEC_U,
                     CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U,
                     CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_GPU] = {"gpu",
                    CT_GPU_NFIELDS,
                    {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_I, CT_CODEC_U, CT_CODEC_SEQ, CT_CODEC_U,
                     CT_CODEC_STR, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_NCCL] = {"nccl",
                     CT_NCCL_NFIELDS,
                     {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_U, CT_CODEC_U, CT_CODEC_SEQ, CT_CODEC_U,
                      CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_I, CT_CODEC_I, CT_CODEC_U,
                      CT_CODEC_U, CT_CODEC_SEQ, CT_CODEC_I, CT_CODEC_U, CT_CODEC_OTIME,
                      CT_CODEC_OEND}},
    [CT_REC_IO] = {"io",
                   CT_IO_NFIELDS,
                   {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_STR, CT_CODEC_I, CT_CODEC_U, CT_CODEC_STR,
                    CT_CODEC_U, CT_CODEC_I, CT_CODEC_I}},
    [CT_REC_NVTX_RANGE] = {"nvtx",
                           CT_NVTX_NFIELDS,
                           {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_STR, CT_CODEC_STR, CT_CODEC_U}},
    [CT_REC_NVTX_MARK] = {"nvtx", CT_MARK_NFIELDS, {CT_CODEC_TIME, CT_CODEC_STR, CT_CODEC_STR}},
    [CT_REC_DROP] = {"drop", CT_DROP_NFIELDS, {CT_CODEC_TIME, CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_ERROR] = {"error", CT_ERROR_NFIELDS, {CT_CODEC_TIME, CT_CODEC_STR, CT_CODEC_I}},
    [CT_REC_COUNTER] = {"counter",
                        CT_COUNTER_NFIELDS,
                        {CT_CODEC_TIME, CT_CODEC_I, CT_CODEC_STR, CT_CODEC_I, CT_CODEC_STR}},
    [CT_REC_NCCL_INFO] = {"nccl_info",
                          CT_NINFO_NFIELDS,
                          {CT_CODEC_TIME, CT_CODEC_SEQ, CT_CODEC_STR, CT_CODEC_STR, CT_CODEC_U,
                           CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_NCCL_PROXY] = {"nccl_proxy",
                           CT_NPROXY_NFIELDS,
                           {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_SEQ, CT_CODEC_U, CT_CODEC_I,
                            CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U,
                            CT_CODEC_U, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_NCCL_CHANNEL] = {"nccl_channel",
                             CT_NCHAN_NFIELDS,
                             {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_SEQ, CT_CODEC_U}},
    [CT_REC_NCCL_NET] = {"nccl_net",
                         CT_NNET_NFIELDS,
                         {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_SEQ, CT_CODEC_U, CT_CODEC_I,
                          CT_CODEC_U, CT_CODEC_U, CT_CODEC_I, CT_CODEC_U, CT_CODEC_U, CT_CODEC_U,
                          CT_CODEC_U, CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_NCCL_PHASE] = {"nccl_phase",
                           CT_NPHASE_NFIELDS,
                           {CT_CODEC_TIME, CT_CODEC_END, CT_CODEC_SEQ, CT_CODEC_U, CT_CODEC_U}},
    [CT_REC_NCCL_TAG] = {"nccl_tag", CT_NTAG_NFIELDS, {CT_CODEC_TIME, CT_CODEC_SEQ, CT_CODEC_U}},
    [CT_REC_NCCL_STEP] = {"nccl_step",
                          CT_NSTEP_NFIELDS,
                          {CT_CODEC_TIME, CT_CODEC_OTIME, CT_CODEC_OTIME, CT_CODEC_OTIME,
                           CT_CODEC_END, CT_CODEC_SEQ, CT_CODEC_U, CT_CODEC_I, CT_CODEC_U,
                           CT_CODEC_SEQ, CT_CODEC_U}},
};

#endif /* CUTRACE_FORMAT_H */
