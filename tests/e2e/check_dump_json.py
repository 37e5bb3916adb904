#!/usr/bin/env python3
"""Validates `cutrace dump --json` output against the documented contract:
every line is one JSON object, with kind/pid/tid/rank, and the fields each
kind must carry with their types. Reads stdin; exits 1 with the first problem."""
import json
import sys

COMMON = {"kind": str, "pid": int, "tid": int}
REQUIRED = {
    "meta": {"scope": str, "time_ns": int},
    "clock": {"mono_ns": int, "real_ns": int},
    "drop": {"count": int, "reason": str, "time_ns": int},
    "error": {"what": str, "time_ns": int},
    "api": {"start_ns": int, "end_ns": int, "name": str, "correlation_id": int, "stream": int},
    "gpu": {"gpu_start_ns": int, "gpu_end_ns": int, "device": int, "stream": int,
            "correlation_id": int, "type": str, "name": str, "bytes": int, "source": str},
    "nccl": {"op": str, "comm_hash": str, "seq": int, "count": int, "dtype": str, "bytes": int,
             "redop": str, "stream": int, "group": int},
    "io": {"op": str, "fd": int, "fd_type": str, "path": str, "bytes": int, "result": int,
           "offset": int},
    "nvtx": {"domain": str, "message": str},
    # format v2: a health counter sample (device -1: a host counter)
    "counter": {"start_ns": int, "device": int, "name": str, "value": int, "unit": str},
    # format v4: NCCL's profiler-plugin descriptor of an op, and one ProxyOp's
    # steps on a channel to or from a peer (docs/format.md)
    "nccl_info": {"time_ns": int, "correlation_id": int, "algo": str, "proto": str,
                  "channels": int, "warps": int, "flags": int},
    "nccl_proxy": {"start_ns": int, "end_ns": int, "correlation_id": int, "channel": int,
                   "peer": int, "direction": str, "steps": int, "bytes": int,
                   "gpu_wait_ns": int, "peer_wait_ns": int, "net_ns": int, "flush_ns": int,
                   "net_busy_ns": int, "nsteps": int, "chunk_size": int},
    # format v5: one NCCL kernel channel's GPU start and stop
    "nccl_channel": {"start_ns": int, "end_ns": int, "correlation_id": int, "channel": int},
    # format v5: a kernel channel's barrier phase, an op's user tag (ABI v7)
    "nccl_phase": {"start_ns": int, "end_ns": int, "correlation_id": int, "channel": int,
                   "phase": str},
    "nccl_tag": {"time_ns": int, "correlation_id": int, "tag": int},
    # format v6: a raw proxy step (CUTRACE_NCCL_STEPS); *_at_ns null when never entered
    "nccl_step": {"start_ns": int, "end_ns": int, "correlation_id": int, "channel": int,
                  "peer": int, "direction": str, "step": int, "bytes": int, "gpu_wait_ns": int,
                  "peer_wait_ns": int, "net_ns": int, "flush_ns": int},
    # format v5: a ProxyOp's network work on one queue pair or socket
    "nccl_net": {"start_ns": int, "end_ns": int, "correlation_id": int, "channel": int,
                 "peer": int, "direction": str, "transport": str, "device": int, "qp": int,
                 "wrs": int, "bytes": int, "busy_ns": int, "other_wrs": int, "other_bytes": int},
}
n = 0
for lineno, line in enumerate(sys.stdin, 1):
    try:
        obj = json.loads(line)
    except ValueError as e:
        sys.exit(f"line {lineno}: not JSON: {e}")
    if not isinstance(obj, dict):
        sys.exit(f"line {lineno}: not an object")
    for key, typ in COMMON.items():
        if not isinstance(obj.get(key), typ):
            sys.exit(f"line {lineno}: {key} missing or not {typ.__name__}")
    if "rank" not in obj or not (obj["rank"] is None or isinstance(obj["rank"], int)):
        sys.exit(f"line {lineno}: rank must be an integer or null")
    kind = obj["kind"]
    if kind not in REQUIRED:
        sys.exit(f"line {lineno}: unknown kind {kind}")
    # format v7: an NVSHMEM collective's record says so ("lib", absent on NCCL's)
    if kind == "nccl" and obj.get("lib", "nvshmem") != "nvshmem":
        sys.exit(f"line {lineno}: nccl.lib must be nvshmem when present")
    for key, typ in REQUIRED[kind].items():
        if not isinstance(obj.get(key), typ) or isinstance(obj.get(key), bool):
            sys.exit(f"line {lineno}: {kind}.{key} missing or not {typ.__name__}")
    if kind in ("api", "gpu", "io", "nccl", "nccl_proxy", "nccl_channel", "nccl_net", "nccl_phase", "nccl_step") and obj["end_ns"] < obj["start_ns"]:
        sys.exit(f"line {lineno}: end_ns before start_ns")
    if kind == "api" and obj.get("family") == "launch":
        for key in ("grid", "block"):
            v = obj.get(key)
            if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v)):
                sys.exit(f"line {lineno}: api.{key} must be [x,y,z]")
    # an event's records and the waits on it carry the event's id (flag 16),
    # and no other call does
    if kind == "api":
        eventful = isinstance(obj.get("flags"), int) and obj["flags"] & 16
        if eventful and (not isinstance(obj.get("event"), int) or isinstance(obj["event"], bool)):
            sys.exit(f"line {lineno}: api.event missing or not int on {obj['name']}")
        if not eventful and "event" in obj:
            sys.exit(f"line {lineno}: api.event on {obj['name']}, which carries no event")
        if eventful and not obj["name"].startswith(("cuEventRecord", "cuStreamWaitEvent", "cuEventSynchronize")):
            sys.exit(f"line {lineno}: api.event on {obj['name']}")
    if kind == "nccl_proxy" and obj["direction"] not in ("send", "recv"):
        sys.exit(f"line {lineno}: nccl_proxy.direction must be send or recv")
    if kind == "counter" and obj["device"] < -1:
        sys.exit(f"line {lineno}: counter.device must be an ordinal or -1 (host)")
    n += 1
if n == 0:
    sys.exit("no records")
print(f"{n} records valid")
