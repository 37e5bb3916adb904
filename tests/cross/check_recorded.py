#!/usr/bin/env python3
"""What a program recorded under the aarch64 shim (tests/cross/aarch64.sh),
read back by the x86-64 decoder: the trace format is the same on both.

usage: check_recorded.py families OUT DUMP   w_families' EXPECT lines against
                                             the API records, in order
       check_recorded.py launches N DUMP     N launches, each with its GPU
                                             interval from the simulated CUPTI
"""
import json
import sys


def records(path):
    return [json.loads(line) for line in open(path)]


def families(out, dump):
    api = [r for r in records(dump) if r["kind"] == "api"]
    exp = [line.split() for line in open(out) if line.startswith("EXPECT ")]
    assert len(exp) >= 85, f"{len(exp)} expectations"
    assert len(api) >= len(exp), f"{len(api)} API records for {len(exp)} calls"
    for e, r in zip(exp, api):
        name, family, nbytes, kind, stream, gx, bx, shmem, kernel, flags = e[1:11]
        # an event call carries its event id where the others have bytes
        got = (r["name"], r["family"], r.get("bytes", r.get("event", 0)), r["stream"], r["flags"])
        want = (name, family, int(nbytes), int(stream), int(flags))
        assert got == want, f"{name}: recorded {got}, called {want}"
        if kind != "-":
            assert r.get("copy_kind") == kind, (name, r.get("copy_kind"), kind)
        if family == "launch" and int(gx):
            assert (r["grid"][0], r["block"][0], r["shmem"]) == (int(gx), int(bx), int(shmem)), r
        if kernel != "-" and family == "launch":  # dump --json names launches' kernels
            assert r.get("kernel") == kernel, (name, r.get("kernel"), kernel)
        assert r["correlation_id"] > 0, r
    print(f"aarch64 families: {len(exp)} calls recorded exactly")


def launches(n, dump):
    recs = records(dump)
    calls = [r for r in recs if r["kind"] == "api" and r["family"] == "launch"]
    gpu = {r["correlation_id"] for r in recs if r["kind"] == "gpu" and r.get("type") == "kernel"}
    assert len(calls) == n, f"{len(calls)} launches recorded, {n} made"
    untimed = [c for c in calls if c["correlation_id"] not in gpu]
    assert not untimed, f"{len(untimed)} launches without their GPU interval"
    assert not [r for r in recs if r["kind"] == "drop"], "records dropped"
    print(f"aarch64 launches: {n} recorded, each with its GPU interval")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "families":
        families(sys.argv[2], sys.argv[3])
    else:
        launches(int(sys.argv[2]), sys.argv[3])
