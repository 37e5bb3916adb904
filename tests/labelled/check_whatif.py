#!/usr/bin/env python3
"""Labelled counterfactuals for `cutrace whatif` (docs/critical-path.md):
a job recorded with a known fault is replayed with the fault scaled away,
and the predicted median step is compared with a real run of the same job
without the fault.

usage: check_whatif.py CASE...   (environment as check_case.py's)
  slow  4 ranks, rank 2's kernels 1.3x (w_job.c "slow"); predicted with
        --scale rank=2=0.769231 (1/1.3), truth: the same job with
        W_JOB_SLOW_SCALE=1.
  dp    2 ranks data-parallel (w_job.c "dp"); predicted with
        --scale op=AllReduce=0.25, truth: FAKEGPU_NET_GBPS=4 (4x the
        bandwidth the recording ran with).
  pipe  4 pipeline stages, 1F1B (w_job.c "pipe"); predicted with
        --scale rank=1=0.5 (stage 1's GPU work halved: its kernels;
        rank= leaves transfers to op=, and its 4 KiB sends and receives
        are 4 us of a 33 ms step), truth: w_job.c "pipe_half", the same schedule with stage 1's
        kernels half as long. The path moves off the halved stage: the
        replay has to re-time every stage's waits, not subtract.
  loader 1 rank whose loader is 20 ms late every third step (w_job.c
        "loader", with 8 ms of compute a step: W_JOB_LOADER_COMPUTE_US);
        predicted with --scale data=0, truth: the same job with
        W_JOB_LOADER_LATE_MS=0 (an instant loader). The late steps
        are a third of the steps, so the median step does not see them:
        the figure compared is the median over the late steps (index
        % 3 == 2) of their replayed length, against the same steps of
        the real run (`critical-path --json`, whose unscaled replay is
        the measured times). The replay keeps the host's wake-up after
        the long read (a scheduler wake-up: 50 to 100 us on this 2-CPU
        VM, more under load), which an instant loader does not pay: the
        prediction errs high by it. With the default 2 ms of compute
        that bias alone was 4.3 % of the step in a loaded CI run; a
        training step of 8 ms (real ones are longer) keeps it near 1 %.
  net   2 ranks, buckets of 0.25-2 MB all-reduced after the backward pass
        (w_job.c "dp_sizes"), each op 500 us of latency plus its size at
        1 GB/s; predicted with --scale net=0.25, truth: FAKEGPU_NET_GBPS=4.
        The fitted model must be 500 us + size / 1 GB/s (5 % + 20 us, 5 %),
        and op=AllReduce=0.25 (the whole transfer scaled) must miss by
        twice the tolerance or more: the case tells latency from bandwidth.
  link  the same on 4 ranks with link 1 -> 2 at 0.25 GB/s; predicted with
        --scale link=1-2=0.25, truth: every link at 1 GB/s.
  graph 2 ranks replaying a forked CUDA graph (w_job.c "graph": A, then
        B (3 ms) -> D beside C (4.5 ms), then E after both); predicted
        with --scale kernel=g_branch*=0.333333, truth: the same job with
        W_JOB_GRAPH_B_US=1000. Every node runs on the launch stream as
        CUPTI reports it, so only the graph's own edges (recorded at
        instantiation) say that D waited for B and not for C: the
        recording's path must hold B and D and not C, and the predicted
        one C and not B (the path moves to the other branch). Without
        the edges, D would follow A at its measured start, and the
        prediction would stay near the recorded 9 ms against a real 7.5.
        The recording's `critical-path --json` is also the same bytes
        from its summaries and with the job spilled (CUTRACE_SPILL=1),
        which keep each op's graph node and the graph's edges.

Tolerance: 3 % of the measured step, the issue's figure. The host is not
exact (check_case.py's note): a step's host part (wake-ups from a
synchronisation, launch calls) moves by hundreds of us between runs on a
loaded 2-CPU machine, which alone can exceed 3 % of a 5-7 ms step, and the
slow case's four rank processes on two CPUs make whole runs bimodal (5.5
or 6.3 ms, on either side). Interference only ever adds time, so each side
is the mean of its FASTEST (3) fastest runs of RUNS (default 9;
CT_WHATIF_RUNS overrides), each run the median over its W_JOB_STEPS=30
steps: the least disturbed recordings predict, the least disturbed real
runs are the truth. (The medians over the runs, compared before, failed
whenever more runs of one side than of the other fell in the slow mode:
8.6 % and 11.7 % in two runs whose fastest runs agreed within 1.5 %. The
single fastest run, compared next, let one lucky run decide: a real
side's 5487 us beside its others' 5629 and more gave 3.74 %.) The
medians are printed too, pass or fail.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CASES = {
    "slow": dict(ranks=4, fault_env={}, truth_env={"W_JOB_SLOW_SCALE": "1"},
                 scale=["rank=2=0.769231"]),
    "dp": dict(ranks=2, fault_env={}, truth_env={"FAKEGPU_NET_GBPS": "4"},
               scale=["op=AllReduce=0.25"]),
    "pipe": dict(ranks=4, fault_env={}, truth_env={}, truth_case="pipe_half",
                 scale=["rank=1=0.5"]),
    "loader": dict(ranks=1, fault_env={"W_JOB_LOADER_COMPUTE_US": "8000"},
                   truth_env={"W_JOB_LOADER_LATE_MS": "0", "W_JOB_LOADER_COMPUTE_US": "8000"},
                   scale=["data=0"], steps=lambda i: i % 3 == 2),
    # the network in physical units (docs/critical-path.md): the all-reduce
    # is a 500 us latency plus its size over 1 GB/s; op= scales both, net=
    # the second (op=AllReduce=0.25 misses the real run by 11 %)
    "net": dict(ranks=2, job="dp_sizes", fault_env={"FAKEGPU_NCCL_LAT_US": "500"},
                truth_env={"FAKEGPU_NCCL_LAT_US": "500", "FAKEGPU_NET_GBPS": "4"},
                scale=["net=0.25"], naive=["op=AllReduce=0.25"],
                model=("AllReduce", 2, 500.0, 1.0)),
    # one link of a 4-rank ring at a quarter of the others' bandwidth, put
    # back by link= (the ring is paced by its slowest link)
    "link": dict(ranks=4, job="dp_sizes",
                 fault_env={"FAKEGPU_NCCL_LAT_US": "500", "FAKEGPU_NCCL_LINKS": "1-2=0.25"},
                 truth_env={"FAKEGPU_NCCL_LAT_US": "500"}, scale=["link=1-2=0.25"]),
    "graph": dict(ranks=2, fault_env={}, truth_env={"W_JOB_GRAPH_B_US": "1000"},
                  scale=["kernel=g_branch*=0.333333"],
                  on_path=(["g_branch", "g_body"], ["g_side"]),
                  on_new_path=(["g_side"], ["g_branch"]), same_spilled=True),
}
TOL = 0.03
FASTEST = 3


def record(case, ranks, extra, d):
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
        "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
        "FAKEGPU_NET_GBPS": "1",
        "W_JOB_DIR": d,
        "W_JOB_STEPS": "30",
    })
    env.update(extra)
    traces = os.path.join(d, "traces")
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", traces, "--",
                        os.environ["CT_W_JOB"], "launch", str(ranks), case],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"{case}: job failed ({p.returncode}): {p.stderr}")
    return traces


def whatif(traces, scale):
    args = [os.environ["CT_CUTRACE"], "whatif", "--json"]
    for s in scale:
        args += ["--scale", s]
    r = subprocess.run(args + [traces], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"whatif failed: {r.stderr}")
    return json.loads(r.stdout)


def critical_path_text(traces, env=None):
    r = subprocess.run([os.environ["CT_CUTRACE"], "critical-path", "--json", traces],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        sys.exit(f"critical-path failed: {r.stderr}")
    return r.stdout


def critical_path(traces):
    return json.loads(critical_path_text(traces))


def graph_records(traces):
    """Problems with the graph's records in `dump --json`: each process
    has one edges record naming the 5 edges of w_job.c's graph, and every
    replayed node's graph_node record names one of its 5 nodes."""
    r = subprocess.run([os.environ["CT_CUTRACE"], "dump", "--json", traces],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return [f"dump failed: {r.stderr}"]
    edges, nodes, pids = {}, {}, set()
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        if rec["kind"] != "meta":
            continue
        pids.add(rec["pid"])
        if rec["scope"] == "graph":
            edges.setdefault(rec["pid"], []).extend(rec["edges"].split())
        elif rec["scope"] == "graph_node":
            nodes.setdefault(rec["pid"], set()).add(int(rec["graph_node_id"], 16))
    bad = []
    for pid in pids:
        e = [tuple(int(x, 16) for x in p.split(">")) for p in edges.get(pid, [])]
        ids = sorted({x for p in e for x in p})
        if len(e) != 5 or len(ids) != 5:
            bad.append(f"process {pid}: graph edges {e}, expected 5 between 5 nodes")
        if nodes.get(pid, set()) != set(ids):
            bad.append(f"process {pid}: replayed nodes {sorted(nodes.get(pid, []))}, "
                       f"the edges' {ids}")
    return bad


def spilled_differs(traces, d):
    """Problems: the path from the summaries or spilled is not the same bytes."""
    sums = os.path.join(d, "sums")
    r = subprocess.run([os.environ["CT_CUTRACE"], "summarize", "-o", sums, traces],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"summarize failed: {r.stderr}")
    whole = critical_path_text(traces, {"CUTRACE_SPILL": "0"})
    bad = []
    for what, src, env in (("summaries", sums, {"CUTRACE_SPILL": "0"}),
                           ("spilled", traces, {"CUTRACE_SPILL": "1"}),
                           ("summaries spilled", sums, {"CUTRACE_SPILL": "1"})):
        if critical_path_text(src, env) != whole:
            bad.append(f"critical-path --json of the {what} differs from the traces'")
    return bad


def chosen_steps(cp, keep):
    """The median length (us) of the iterations whose index keep() takes."""
    v = [i["length_us"] for i in cp["iterations"] if keep(i["index"])]
    if not v:
        sys.exit("no iteration selected")
    return statistics.median(v)


def path_names(cp, want, absent, what):
    """Problems with the kernels on a path: each of want on it, none of
    absent (names matched by prefix, durations summed over the run)."""
    on = {}
    for seg in cp["segments"]:
        name = seg.get("name") or ""
        for n in want + absent:
            if name.startswith(n):
                on[n] = on.get(n, 0) + seg["duration_us"]
    bad = [f"{what}: {n} not on the path" for n in want if on.get(n, 0) <= 0]
    bad += [f"{what}: {n} on the path ({on[n]:.0f} us)" for n in absent if on.get(n, 0) > 0]
    return bad


def model_differs(w, op, ranks, lat_us, gbps):
    """Problems with the fitted transfer model of (op, ranks): its latency
    within 5 % + 20 us of lat_us and its bandwidth within 5 % of gbps. The
    simulated device times each op exactly from the schedule; what moves is
    the rendezvous, the last rank's kernel start, which the host paces
    (tens of us on this machine), and a median per size keeps a late one
    off the fit."""
    for m in w.get("transfer_models", []):
        if m["op"] == op and m["ranks"] == ranks:
            bad = []
            if m["status"] != "fitted" or m["latency_us"] is None:
                return [f"model {op} x{ranks}: {m}"]
            if abs(m["latency_us"] - lat_us) > 0.05 * lat_us + 20:
                bad.append(f"model {op} x{ranks}: latency {m['latency_us']} us, want {lat_us}")
            if abs(m["bandwidth_gbps"] - gbps) > 0.05 * gbps:
                bad.append(f"model {op} x{ranks}: {m['bandwidth_gbps']} GB/s, want {gbps}")
            print(f"  model {op} x{ranks}: {m['latency_us']} us + size / "
                  f"{m['bandwidth_gbps']} GB/s over {m['sizes']} sizes, fit error "
                  f"{m['fit_error_pct']} %")
            return bad
    return [f"no transfer model of {op} x{ranks}: {w.get('transfer_models')}"]


def fastest(v):
    """The mean of the FASTEST smallest values of v."""
    k = sorted(v)[:FASTEST]
    return sum(k) / len(k)


def main():
    runs = int(os.environ.get("CT_WHATIF_RUNS", "9"))
    failed = []
    for case in sys.argv[1:]:
        c = CASES[case]
        pred, truth, naive = [], [], []
        for i in range(runs):
            d = tempfile.mkdtemp(prefix=f"whatif-{case}-")
            try:
                job = c.get("job", case)
                w = whatif(record(job, c["ranks"], c["fault_env"], os.path.join(d, "f")),
                           c["scale"])
                if "model" in c and i == 0:
                    failed += model_differs(w, *c["model"])
                # the replay without scaling reproduces the recording exactly
                if abs(w["replayed_step_us"] - w["measured_step_us"]) > 0.01:
                    failed.append(f"{case}: replay {w['replayed_step_us']} != measured "
                                  f"{w['measured_step_us']}")
                if "on_path" in c:
                    cp = critical_path(os.path.join(d, "f", "traces"))
                    failed += path_names(cp, *c["on_path"], f"{case}: recorded")
                    # every replayed node joined by its graph's edges: 5 a step a rank
                    want = 5 * 30 * c["ranks"]
                    if (cp["cuda_graph_ops"], cp["cuda_graph_ops_with_edges"]) != (want, want):
                        failed.append(f"{case}: cuda_graph_ops {cp['cuda_graph_ops']}, with edges "
                                      f"{cp['cuda_graph_ops_with_edges']}, expected {want}")
                    failed += path_names(w["critical_path"], *c["on_new_path"],
                                         f"{case}: predicted")
                if c.get("same_spilled") and i == 0:
                    failed += [f"{case}: {b}" for b in
                               spilled_differs(os.path.join(d, "f", "traces"), d)]
                    failed += [f"{case}: {b}" for b in
                               graph_records(os.path.join(d, "f", "traces"))]
                if "naive" in c:
                    naive.append(whatif(os.path.join(d, "f", "traces"),
                                        c["naive"])["predicted_step_us"])
                tt = record(c.get("truth_case", job), c["ranks"], c["truth_env"],
                            os.path.join(d, "t"))
                if "steps" in c:
                    pred.append(chosen_steps(w["critical_path"], c["steps"]))
                    truth.append(chosen_steps(critical_path(tt), c["steps"]))
                else:
                    pred.append(w["predicted_step_us"])
                    truth.append(whatif(tt, c["scale"])["measured_step_us"])
            finally:
                shutil.rmtree(d, ignore_errors=True)
        p, t = fastest(pred), fastest(truth)
        err = abs(p - t) / t
        tol = TOL
        print(f"{case}: predicted {p:.1f} us, real {t:.1f} us (the mean of the fastest "
              f"{min(FASTEST, len(pred))} of {len(pred)} runs each), error {100 * err:.2f} %, "
              f"tolerance {100 * tol:.0f} %")
        print(f"  runs: predicted {[round(x) for x in pred]}, real {[round(x) for x in truth]}; "
              f"medians {statistics.median(pred):.1f} and {statistics.median(truth):.1f} us")
        if err > tol:
            failed.append(f"{case}: error {100 * err:.2f} % > {100 * tol:.2f} %")
        if naive:
            # the test tells the two apart: the whole op scaled must miss
            nerr = abs(fastest(naive) - t) / t
            print(f"  {' '.join(c['naive'])} instead: predicted {fastest(naive):.1f} us, "
                  f"error {100 * nerr:.2f} %")
            if nerr < 2 * tol:
                failed.append(f"{case}: {' '.join(c['naive'])} within {100 * nerr:.2f} %: "
                              f"the case does not tell latency from bandwidth")
    if failed:
        print("FAIL\n  " + "\n  ".join(failed))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
