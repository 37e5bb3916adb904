/*
 * The wrapped NCCL entry points, one row each: the same list serves the
 * exported definitions (shim/nccl.c, shim/nccl_comm.c) and the dlsym layer,
 * which hands out our wrapper for exactly these names when the real lookup
 * found NCCL's. ncclCommCount, ncclCommUserRank, ncclGetVersion,
 * ncclGetUniqueId and the rest pass through: they do no work worth timing.
 *
 * CT_NCCL(name)
 */
/* collectives and point-to-point */
CT_NCCL(ncclAllReduce)
CT_NCCL(ncclBroadcast)
CT_NCCL(ncclBcast)
CT_NCCL(ncclReduce)
CT_NCCL(ncclAllGather)
CT_NCCL(ncclReduceScatter)
CT_NCCL(ncclAlltoAll)
CT_NCCL(ncclGather)
CT_NCCL(ncclScatter)
CT_NCCL(ncclSend)
CT_NCCL(ncclRecv)
/* groups */
CT_NCCL(ncclGroupStart)
CT_NCCL(ncclGroupEnd)
/* communicators */
CT_NCCL(ncclCommInitRank)
CT_NCCL(ncclCommInitRankConfig)
CT_NCCL(ncclCommInitRankScalable)
CT_NCCL(ncclCommInitAll)
CT_NCCL(ncclCommSplit)
CT_NCCL(ncclCommShrink)
CT_NCCL(ncclCommFinalize)
CT_NCCL(ncclCommDestroy)
CT_NCCL(ncclCommAbort)
