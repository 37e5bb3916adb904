#!/usr/bin/env python3
"""Checks `cutrace report --json` of ct_synth_job's 4-rank job (rank 2 slow,
rank r's clock off by r*37 us) against the truth computed by hand from the
schedule in tests/tools/ct_synth_job.c. K iterations, per iteration (us):
normal ranks compute 1000, comm 460 of which 200 under compute; rank 2
compute 1200, comm 300 of which 240 under compute. Between iterations the
GPU idles 265 us: 200 data stall (pread), 50 sync drain, 10 launch
overhead, 5 unexplained (host still in the sync after the GPU finished).
Tolerance: 0.002 us (the JSON prints ns resolution; synthetic times are
exact integers).
usage: check_report_json.py REPORT.json K"""
import json
import math
import sys

TOL = 0.002


def close(a, b, what):
    assert abs(a - b) <= TOL, f"{what}: {a} != {b}"


def main():
    text = open(sys.argv[1]).read()
    assert "NaN" not in text and "Infinity" not in text
    rep = json.loads(text)
    k = int(sys.argv[2])
    assert rep["schema"] == "cutrace.report" and rep["version"] == 2
    ranks = rep["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    for r in ranks:
        slow = r["rank"] == 2
        for key, v in r.items():
            if key.endswith("_us"):
                assert isinstance(v, (int, float)) and math.isfinite(v), key
        close(r["window_us"], (k - 1) * 1525 + 1260, "window")
        close(r["compute_us"], k * (1200 if slow else 1000), "compute")
        close(r["comm_us"], k * (300 if slow else 460), "comm")
        close(r["memory_us"], 0, "memory")
        close(r["idle_us"], (k - 1) * 265, "idle")
        close(r["exposed_comm_us"], k * (60 if slow else 260), "exposed")
        close(r["overlap_pct"], 80.0 if slow else 100.0 * 200 / 460, "overlap_pct")
        close(r["comm_by_kind"]["dp"]["comm_us"], r["comm_us"], "dp comm")
        close(r["comm_by_kind"]["pp"]["comm_us"], 0, "pp comm")
        assert r["comm_by_kind"]["pp"]["overlap_pct"] is None
        a = r["attribution"]
        close(a["data_stall_us"], (k - 1) * 200, "data")
        close(a["sync_drain_us"], (k - 1) * 50, "drain")
        close(a["launch_overhead_us"], (k - 1) * 10, "launch")
        close(a["unexplained_us"], (k - 1) * 5, "unexplained")
        close(a["pipeline_bubble_us"], 0, "bubble")
        close(a["checkpoint_stall_us"], 0, "ckpt")
        ib = r["idle_breakdown"]
        close(ib["host_wait_us"], (k - 1) * ((325 + 1225) if slow else (525 + 1065)), "host_wait")
        close(ib["kernel_wait_us"], 0, "kernel_wait")
        its = r["iterations"]
        assert [i["index"] for i in its] == list(range(k))
        for i in its:
            close(i["duration_us"], 1475, "iteration")
        assert r["bubble_pct"] is None and r["expected_bubble_pct"] is None
        assert r["coverage"]["gpu_cupti"] == 11 * k
        assert r["coverage"]["untimed_ops"] == 0
        # each process maps its clock to realtime by its own (monotonic,
        # realtime) pairs, read a few ns..us apart: the refinement absorbs
        # that too, so the skew matches the injected one within 5 us, while
        # the aligned timelines agree exactly (start_us below)
        d = r["clock"]["skew_us"] - ranks[0]["clock"]["skew_us"] + 37 * r["rank"]
        assert abs(d) < 5, f"skew off by {d} us"
        close(its[0]["start_us"], ranks[0]["iterations"][0]["start_us"], "aligned start")
        close(r["clock"]["residual_us"], 0, "residual")
    (c,) = rep["collectives"]
    assert c["op"] == "AllReduce" and c["bytes"] == 1 << 20 and c["count"] == 4 * k
    close(c["p50_us"], 460, "coll p50")
    close(c["arrival_skew_p50_us"], 160, "skew")
    close(c["algbw_gbps"], (1 << 20) / 460e3, "algbw")
    close(c["busbw_gbps"], (1 << 20) / 460e3 * 2 * 3 / 4, "busbw")
    kern = {x["name"]: x for x in rep["kernels"]}
    assert set(kern) == {f"model::layer{i}" for i in range(10)}, kern.keys()
    assert kern["model::layer0"]["count"] == 4 * k
    close(kern["model::layer0"]["total_us"], k * (3 * 100 + 120), "kernel total")
    close(kern["model::layer0"]["p50_us"], 100, "kernel p50")
    job = rep["job"]
    assert job["ranks"] == 4 and job["iterations"] == k
    close(job["step_p50_us"], 1475, "step p50")
    assert [s["rank"] for s in job["stragglers"]] == [2], job["stragglers"]
    print("report json: ok")


if __name__ == "__main__":
    main()
