#!/usr/bin/env python3
"""GPU efficiency from NVML GPM on the simulated device (docs/efficiency.md):
tests/labelled/w_gpm.c under `cutrace run` with the fake NVML, then
`cutrace report --json` (and text) against the schedule's truth.

usage: check_gpm.py CASE   (CASE: gpm, gpm_older, gpm_options, gpm_diff,
                            gpm_nvlink, gpm_nvlink_unsaturated,
                            gpm_nvlink_unknown; environment: CT_CUTRACE,
                            CT_W_GPM or CT_W_NVLINK, CT_FAKEGPU_DIR,
                            CT_FAKEGPU_NVML_DIR, CT_FAKE_CUPTI)

gpm: two steps, each a GEMM phase (1.5 s of gemm_bf16_tn) then an elementwise
phase (1.5 s of vectorized_elementwise_add), whose activity profiles PROFILE
sets: the truth per family is exactly those shares, and the classes follow
(tensor 64 % >= 50: tensor-bound; DRAM 81 %: memory-bound).

Tolerance, 3 points, from the sampling period and the phase lengths. The
simulated GPM is exact over each interval (time-weighted truth), and an
interval with idle time in it is exact once divided by its busy share (GPM
counts nothing while no kernel runs). What is not exact is an interval
shared by the two families: its value is their blend, and the family gets
it at its share s of the interval. A family at value a sharing a fraction s
of an interval of length T with a family at b takes s*T of weight at an
error of (1-s)(b-a): at most T/4 * |b-a| over that interval. The job has 3
such boundaries (GEMM->elementwise twice, elementwise->GEMM once between
the steps), each family runs 3000 ms, T is the measured period (checked
<= 150 ms: the writer's passes come late on a loaded machine; ~100 ms):
3 * 150/4 * |b-a| / 3000 = 0.0375 |b-a|, with the largest difference
|64 - 0| = 64 (tensor): 2.4 at 150 ms, 1.6 at 100 ms. The bound is computed
from the measured period and must stay under 3. An iteration's value has an
interval shared with the neighbouring step at each end: at most
T/4 * |b-a| / 3000 ms each, 1.6 for two at 150 ms.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
scratch = []
# the last run's Perfetto counter tracks: name -> [args], and its diagnosis
tracks = {}
diag = {}

GEMM = {"sm": 92, "occ": 40, "tc": 64, "dram": 22, "fp64": 0, "fp32": 0, "fp16": 8}
EW = {"sm": 58, "occ": 75, "tc": 0, "dram": 81, "fp64": 0, "fp32": 18, "fp16": 0}
PROFILE = ("gemm_bf16_tn=" + ",".join(f"{k}:{v}" for k, v in GEMM.items()) +
           ";vectorized_elementwise_add=" + ",".join(f"{k}:{v}" for k, v in EW.items()))
JSON = {"sm": "sm_active_pct", "occ": "sm_occupancy_pct", "tc": "tensor_active_pct",
        "dram": "dram_bw_pct", "fp64": "fp64_active_pct", "fp32": "fp32_active_pct",
        "fp16": "fp16_active_pct"}
PHASE_MS = 1500  # each phase of each step
STEPS = 2


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def html_page(traces, report):
    """`cutrace report --html` of traces in headless Chromium
    (tests/export/check_html.py): its activity lines and kernel-family
    table against the report (check_html.py says how). Skipped, said so,
    without Chromium."""
    d = os.path.dirname(traces)
    page, rj = os.path.join(d, "page.html"), os.path.join(d, "report.json")
    with open(rj, "w", encoding="utf-8") as f:
        json.dump(report, f)
    r = subprocess.run([os.environ["CT_CUTRACE"], "report", "--html", "-o", page, traces],
                       capture_output=True, text=True, timeout=120)
    check("report --html", r.returncode == 0, r.stderr)
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, os.path.join(here, "..", "export", "check_html.py"), page,
                        "--report", rj, "--efficiency"], capture_output=True, text=True,
                       timeout=300)
    if r.returncode == 77:
        print("html page: " + r.stdout.strip())
        return
    check("the HTML page's GPU efficiency", r.returncode == 0, r.stdout + r.stderr)


def run_job(extra_env, expect_rc=0, html=False):
    d = tempfile.mkdtemp(prefix="labelled-gpm-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"] + ":" + os.environ["CT_FAKEGPU_NVML_DIR"],
        "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
        "FAKEGPU_GPM_PROFILE": PROFILE,
        "W_GPM_STEPS": str(STEPS),
        "W_GPM_GEMM": str(PHASE_MS // 10),
        "W_GPM_EW": str(PHASE_MS // 5),
    })
    env.update(extra_env)
    traces = os.path.join(d, "traces")
    cutrace = os.environ["CT_CUTRACE"]
    p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_GPM"]], env=env,
                       capture_output=True, text=True, timeout=120)
    if p.returncode != expect_rc:
        sys.exit(f"job: exit {p.returncode}, expected {expect_rc}: {p.stderr}")
    if expect_rc:
        return None, None, None, p.stderr

    def cli(*args):
        r = subprocess.run([cutrace, *args, traces], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"cutrace {args[0]} failed: {r.stderr}")
        return r.stdout
    rep = json.loads(cli("report", "--json", "--rank-iterations"))
    text = cli("report")
    global diag
    diag = json.loads(cli("diagnose", "--json"))
    chrome = os.path.join(d, "trace.json")
    subprocess.run([cutrace, "export", "--format", "chrome", "-o", chrome, traces], check=True,
                   capture_output=True, timeout=120)
    with open(chrome, encoding="utf-8") as f:
        ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    tracks.clear()
    for x in ev:
        if x.get("ph") == "C":
            tracks.setdefault(x["name"], []).append(x["args"])
    # the same figures from a summary (the counter series travel in it)
    sums = traces + ".sum"
    subprocess.run([cutrace, "summarize", "-o", sums, traces], check=True, capture_output=True,
                   timeout=120)
    r = subprocess.run([cutrace, "report", "--json", "--rank-iterations", sums],
                       capture_output=True, text=True, timeout=120)
    from_sum = json.loads(r.stdout)["ranks"][0]["efficiency"] if r.returncode == 0 else None
    check("the same efficiency from a summary", from_sum == rep["ranks"][0]["efficiency"],
          f"{r.stderr} {from_sum}")
    dump = [json.loads(line) for line in cli("dump", "--json").splitlines()]
    if html:
        html_page(traces, rep)
    return rep, text, dump, p.stderr


def case_gpm():
    rep, text, dump, _ = run_job({}, html=True)
    k = rep["ranks"][0]
    e = k["efficiency"]
    check("efficiency available", e and e["unavailable"] is None, str(e))
    if not e or e["unavailable"]:
        return
    period = e["period_ms"]
    check("sampled at about the default period (100 ms)", 99 <= period <= 150, str(period))
    fams = {f["name"]: f for f in e["families"]}
    check("two families", set(fams) == {"gemm_bf16_tn__10000us",
                                        "vectorized_elementwise_add__5000us"}, str(list(fams)))
    for name, truth, cls in (("gemm_bf16_tn__10000us", GEMM, "tensor_bound"),
                             ("vectorized_elementwise_add__5000us", EW, "memory_bound")):
        f = fams.get(name)
        if not f:
            continue
        check(f"{name} busy", abs(f["busy_us"] - STEPS * PHASE_MS * 1e3) < 1e3, str(f["busy_us"]))
        check(f"{name} class", f["class"] == cls, f["class"])
        for key, js in JSON.items():
            other = EW if truth is GEMM else GEMM
            bound = 3 * period / 4 * abs(truth[key] - other[key]) / (STEPS * PHASE_MS)
            check(f"{name} {key}: the bound from the period is under 3 points", bound < 3,
                  f"{bound:.2f}")
            got = f[js]
            check(f"{name} {js} within 3 points of {truth[key]}",
                  got is not None and abs(got - truth[key]) <= 3, str(got))
        # some intervals hold both phases: said, and not most of the time
        # (3 shared intervals of ~100 ms in 3000 ms: up to 10 %)
        check(f"{name} mixed share said", f["mixed_pct"] is not None and
              0 < f["mixed_pct"] < 25, str(f["mixed_pct"]))
    check("NVLink not given by the simulated part: null with the reason",
          e["window"]["nvlink_tx_mib_s"] is None and
          "not supported" in e["metrics_unavailable"].get("nvlink_tx_mib_s", ""), str(e))
    # each step: 1 s of GEMM at tensor 64, then 1 s of elementwise at 0,
    # then its idle tail (sync, range): 64 * 1 s / the step's length
    its = e["iterations"]
    check("an efficiency row per iteration", len(its) == STEPS, str(len(its)))
    spans = {i["index"]: i for i in k["iterations"]}
    for it in its:
        s = spans.get(it["index"])
        if not s or it["covered_pct"] is None or it["covered_pct"] < 90:
            check(f"iteration {it['index']} covered", False, str(it))
            continue
        want = GEMM["tc"] * PHASE_MS * 1e3 / (s["end_us"] - s["start_us"])
        check(f"iteration {it['index']} tensor {it['tensor_active_pct']} ~ {want:.1f}",
              abs(it["tensor_active_pct"] - want) <= 3, str(it))
    # one stream does all the work: it takes every interval with work, and
    # its figures are the rank's while-busy ones (the same intervals and
    # weights, but for the rank's window clipping its first interval by the
    # first launch's delay, microseconds of 100 ms: 0.5 points covers it)
    sts = e["streams"]
    check("one stream", len(sts) == 1, str(sts))
    if len(sts) == 1:
        s0 = sts[0]
        check("the stream took the intervals with work", s0["intervals"] >= e["intervals"] - 2 and
              s0["own_pct"] == 100, str(s0))
        for key in ("sm_active_pct", "tensor_active_pct", "dram_bw_pct"):
            check(f"the stream's {key} = the rank's while busy", s0[key] is not None and
                  abs(s0[key] - e["busy"][key]) <= 0.5, f"{s0[key]} vs {e['busy'][key]}")
    check("job's families", [f["name"] for f in rep["job"]["efficiency"]["families"]] ==
          [f["name"] for f in e["families"]], str(rep["job"]["efficiency"]))
    check("text section", "GPU efficiency (NVML GPM" in text and "tensor_bound" in text and
          "memory_bound" in text, text[-2000:])
    sup = [x for x in dump if x["kind"] == "counter" and x["name"] == "gpm_supported"]
    check("support answered once", [x["value"] for x in sup] == [1], str(sup))
    # sampling starts at the device's first use (its first launch describes
    # it; the writer's next pass: ~5 ms, seen 26 ms on a loaded CPU), not a
    # period (100 ms) later: under half a period
    first_launch = min((x["start_ns"] for x in dump if x["kind"] == "api" and
                        x.get("family") == "launch"), default=None)
    check("first GPM sample at the first launch", sup and first_launch is not None and
          sup[0]["start_ns"] - first_launch < 50e6, f"{sup} {first_launch}")
    check("NVLink, not supported, dropped after the first try: no record",
          not [x for x in dump if x["kind"] == "counter" and x["name"].startswith("gpm_nvlink")],
          "")
    # Perfetto counter tracks: the tensor track holds 64 and 0 (pure GEMM
    # and elementwise intervals)
    tc = [a["%"] for a in tracks.get("GPU 0 tensor active", [])]
    check("Perfetto track GPU 0 tensor active", 64.0 in tc and 0.0 in tc, str(tc[:20]))
    for name in ("GPU 0 SM active", "GPU 0 SM occupancy", "GPU 0 DRAM bandwidth",
                 "GPU 0 FP32 active", "GPU 0 PCIe tx (GPM)"):
        check(f"Perfetto track {name}", name in tracks, str(sorted(tracks)))
    check("no NVLink track (not sampled)", "GPU 0 NVLink tx" not in tracks, "")
    # diagnose: the elementwise phase (half the kernel time, DRAM ~81 %) is a
    # memory-bound phase; the GEMM (tensor ~64 %) is not short of tensor work
    mem = [f for f in diag["findings"] if f["kind"] == "memory_bound_phase"]
    check("diagnose: memory_bound_phase on the elementwise family",
          [(f["evidence"]["family"], f["ranks"]) for f in mem] ==
          [("vectorized_elementwise_add__5000us", [0])], str(mem))
    check("diagnose: its saving unquantified", mem and mem[0]["saving_us"] is None and
          mem[0]["saving_from"] == "unquantified", str(mem))
    check("diagnose: no low_tensor_activity",
          not [f for f in diag["findings"] if f["kind"] == "low_tensor_activity"], str(diag))
    cost = [x for x in dump if x["kind"] == "meta" and "gpm_ns_per_sample" in x]
    check("the sampler's cost recorded", len(cost) == 1, str(cost))


def case_gpm_older():
    rep, text, dump, _ = run_job({"FAKEGPU_GPM": "0", "W_GPM_STEPS": "1", "W_GPM_GEMM": "20",
                                  "W_GPM_EW": "40"})
    k = rep["ranks"][0]
    e = k["efficiency"]
    why = e and e["unavailable"] or ""
    check("older device: the reason", "does not support GPM" in why, str(e))
    check("older device: figures null", e and e["families"] == [] and
          all(v is None for v in e["window"].values()), str(e))
    check("older device: in the rank's unavailable list",
          any(u["figure"] == "efficiency" and "does not support GPM" in u["reason"]
              for u in k["unavailable"]), str(k["unavailable"]))
    check("older device: said in text", "GPU efficiency (NVML GPM): unavailable: the device "
          "does not support GPM" in text, text[-800:])
    sup = [x["value"] for x in dump if x["kind"] == "counter" and x["name"] == "gpm_supported"]
    check("older device: the answer recorded once", sup == [0], str(sup))
    check("older device: no GPM metric recorded",
          not [x for x in dump if x["kind"] == "counter" and x["name"].startswith("gpm_") and
               x["name"] != "gpm_supported"], "")
    ins = {i["kind"]: i["reason"] for i in diag["insufficient_evidence"]}
    check("older device: diagnose says why it cannot judge tensor activity",
          "does not support GPM" in ins.get("low_tensor_activity", ""), str(ins))
    # supported, but every sample refused (no permission): said once, the
    # device no longer asked
    rep, _, dump, _ = run_job({"FAKEGPU_GPM": "denied", "W_GPM_STEPS": "1", "W_GPM_GEMM": "20",
                               "W_GPM_EW": "40"})
    e = rep["ranks"][0]["efficiency"]
    check("samples refused: the reason", e and "first sample failed" in (e["unavailable"] or ""),
          str(e))
    sup = [x["value"] for x in dump if x["kind"] == "counter" and x["name"] == "gpm_supported"]
    check("samples refused: supported, then -2, once", sup == [1, -2], str(sup))
    meta = [x["gpm"] for x in dump if x["kind"] == "meta" and "gpm" in x]
    check("samples refused: the metadata says which call", meta ==
          ["supported", "unavailable: device 0: nvmlGpmSampleGet failed (4)"], str(meta))
    check("older device: health counters still sampled",
          [x for x in dump if x["kind"] == "counter" and x["name"] == "sm_clock"] != [], "")


def case_gpm_diff():
    """A regression explained by GPM: three runs with the GEMM's tensor
    activity at 64 %, three at 40 % (its kernels no faster: the simulated
    kernels last what their names say), one 600 ms phase of each family a
    run. `cutrace diff` of the two sets gives the family's tensor row:
    medians within 3 points of 64 and 40 (the bound of case gpm with one
    shared boundary per family and 600 ms a family: 150/4 * 64 / 600 =
    4.0 at 150 ms; 2.7 at the 100 ms period; checked against 3 plus the
    measured period's excess), and the verdict "regressed" (higher is
    better for activity); the elementwise family's DRAM row: no evidence
    of a change."""
    slow = dict(GEMM, tc=40)
    slow_profile = ("gemm_bf16_tn=" + ",".join(f"{k}:{v}" for k, v in slow.items()) +
                    ";vectorized_elementwise_add=" + ",".join(f"{k}:{v}" for k, v in EW.items()))
    sides = []
    for prof in (PROFILE, slow_profile):
        side = tempfile.mkdtemp(prefix="labelled-gpm-side-")
        scratch.append(side)
        for k in range(3):  # diff concludes from 3 runs a side
            env = dict(os.environ)
            env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"] + ":" +
                        os.environ["CT_FAKEGPU_NVML_DIR"],
                        "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                        "FAKEGPU_GPM_PROFILE": prof, "W_GPM_STEPS": "1", "W_GPM_GEMM": "60",
                        "W_GPM_EW": "120"})
            p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", os.path.join(side, f"run{k}"),
                                "--", os.environ["CT_W_GPM"]], env=env, capture_output=True,
                               text=True, timeout=120)
            check(f"run {k}", p.returncode == 0, p.stderr)
        sides.append(side)
    r = subprocess.run([os.environ["CT_CUTRACE"], "diff", "--json", *sides], capture_output=True,
                       text=True, timeout=120)
    check("diff runs", r.returncode == 0, r.stderr)
    if r.returncode:
        return
    rows = {m["metric"]: m for m in json.loads(r.stdout)["segments"][0]["metrics"]}
    t = rows.get("gpm_tensor_pct:gemm_bf16_tn__10000us")
    check("the GEMM family's tensor row", t is not None, str(sorted(rows)))
    if t:
        check("tensor before ~64", abs(t["median_a"] - 64) <= 3, str(t))
        check("tensor after ~40", abs(t["median_b"] - 40) <= 3, str(t))
        check("tensor regressed", t["verdict"] == "regressed", str(t))
    d = rows.get("gpm_dram_pct:vectorized_elementwise_add__5000us")
    check("the elementwise family's DRAM row", d is not None, str(sorted(rows)))
    if d:
        check("DRAM unchanged", d["verdict"] == "no evidence", str(d))


def case_gpm_options():
    for bad in ("50", "fast", "60001"):
        _, _, _, err = run_job({"CUTRACE_GPM_MS": bad}, expect_rc=2)
        check(f"CUTRACE_GPM_MS={bad} refused naming the variable and the range",
              f"CUTRACE_GPM_MS={bad}: expected 0 (off) or a GPM sampling period from 100 to "
              "60000 ms" in err, err)
    rep, _, dump, _ = run_job({"CUTRACE_GPM_MS": "0", "W_GPM_STEPS": "1", "W_GPM_GEMM": "20",
                               "W_GPM_EW": "40"})
    e = rep["ranks"][0]["efficiency"]
    check("CUTRACE_GPM_MS=0: off, said", e and "CUTRACE_GPM_MS=0" in (e["unavailable"] or ""),
          str(e))
    check("CUTRACE_GPM_MS=0: no GPM record",
          not [x for x in dump if x["kind"] == "counter" and x["name"].startswith("gpm_")], "")


NV_RANKS = 4
NV_STEPS = 3


def run_nvlink(gbps, name, html=False):
    """w_nvlink (4 ranks, 3 steps of a 2 ms kernel and one AllReduce of
    600 ms) on a simulated part with NVLink: the fake NCCL's links at gbps
    GB/s, the device named `name` (None: the fake's own, "FakeGPU 0").
    Returns the report, the diagnosis and the trace's nccl records."""
    d = tempfile.mkdtemp(prefix="labelled-gpm-nvlink-")
    scratch.append(d)
    # an AllReduce of S bytes on n ranks sends and receives 2(n-1)/n S per
    # rank over the ring: 600 ms at gbps GB/s
    count = int(0.6 * gbps * 1e9 / (2 * (NV_RANKS - 1) / NV_RANKS) / 4)
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"] + ":" + os.environ["CT_FAKEGPU_NVML_DIR"],
        "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
        "FAKEGPU_GPM_NVLINK": "1", "FAKEGPU_NET_GBPS": str(gbps),
        "W_NV_STEPS": str(NV_STEPS), "W_NV_COUNT": str(count),
    })
    env.pop("FAKEGPU_DEVICE_NAME", None)
    if name:
        env["FAKEGPU_DEVICE_NAME"] = name
    traces = os.path.join(d, "traces")
    cutrace = os.environ["CT_CUTRACE"]
    p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_NVLINK"], "launch",
                        str(NV_RANKS)], env=env, capture_output=True, text=True, timeout=150)
    if p.returncode:
        sys.exit(f"job: exit {p.returncode}: {p.stderr}")

    def cli(*args):
        r = subprocess.run([cutrace, *args, traces], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"cutrace {args[0]} failed: {r.stderr}")
        return r.stdout
    rep = json.loads(cli("report", "--json"))
    dg = json.loads(cli("diagnose", "--json"))
    nccl = [json.loads(x) for x in cli("dump", "--json").splitlines() if '"kind":"nccl"' in x]
    sums = traces + ".sum"
    subprocess.run([cutrace, "summarize", "-o", sums, traces], check=True, capture_output=True,
                   timeout=120)
    r = subprocess.run([cutrace, "report", "--json", sums], capture_output=True, text=True,
                       timeout=120)
    check("the same collectives' figures from a summary", r.returncode == 0 and
          [k["efficiency"] for k in json.loads(r.stdout)["ranks"]] ==
          [k["efficiency"] for k in rep["ranks"]], r.stderr)
    if html:
        html_page(traces, rep)
    return rep, dg, nccl


def nvlink_truth(rep, nccl, gbps):
    """Each rank's collectives against the link rate. The simulated NVML's
    NVLink rate over an interval is the bytes the collectives' kernels
    moved in it (gbps GB/s each way while they run), so over the intervals
    they fill it is gbps exactly; recorded in KiB/s integers (a relative
    error of 1e-6). 1 % covers that with room. The job is in lock step (each
    AllReduce starts when the previous one ended on every rank): the
    trace's own bytes over time, 2(n-1)/n S per direction over the kernels'
    time, is checked to be within 10 % of the link rate (the first
    AllReduce waits for the ranks' start-up)."""
    want = gbps * 1e9 / 1048576  # MiB/s each way
    for k in rep["ranks"]:
        c = k["efficiency"]["collectives"]
        check(f"rank {k['rank']}: collectives' figures", c["unavailable"] is None, str(c))
        if c["unavailable"] is not None:
            continue
        for key in ("nvlink_tx_mib_s", "nvlink_rx_mib_s"):
            check(f"rank {k['rank']}: {key} {c[key]} ~ {want:.0f} (1 %)",
                  abs(c[key] - want) <= 0.01 * want, str(c))
        check(f"rank {k['rank']}: PCIe idle (no copy)", c["pcie_tx_mib_s"] == 0 and
              c["pcie_rx_mib_s"] == 0, str(c))
        check(f"rank {k['rank']}: most of the collectives' time seen",
              c["seen_pct"] is not None and c["seen_pct"] >= 80, str(c))
        mine = [x for x in nccl if x["rank"] == k["rank"] and x.get("gpu_end_ns")]
        wire = sum(2 * (NV_RANKS - 1) / NV_RANKS * x["bytes"] for x in mine)
        t = sum(x["gpu_end_ns"] - x["gpu_start_ns"] for x in mine)
        check(f"rank {k['rank']}: the trace's AllReduces", len(mine) == NV_STEPS and t > 0 and
              abs(wire / t - gbps) <= 0.1 * gbps, f"{len(mine)} {wire} {t}")


def case_gpm_nvlink():
    """Saturated: 400 GB/s each way on an H100 SXM (NVLink 4, 900 GB/s
    both ways): 800 / 900 = 88.9 % >= 80, PCIe 0: the finding, on every
    rank, its saving unquantified."""
    rep, dg, nccl = run_nvlink(400, "NVIDIA H100 80GB HBM3", html=True)
    nvlink_truth(rep, nccl, 400)
    c = rep["ranks"][0]["efficiency"]["collectives"]
    check("platform H100 SXM, 900 GB/s", c["platform"] == "H100 SXM" and
          c["nvlink_peak_gbs"] == 900, str(c))
    check("88.9 % of the peak", c["nvlink_pct_of_peak"] is not None and
          abs(c["nvlink_pct_of_peak"] - 800 / 9) <= 1, str(c))
    f = [x for x in dg["findings"] if x["kind"] == "nvlink_saturated"]
    check("nvlink_saturated found on every rank", len(f) == 1 and
          f[0]["ranks"] == list(range(NV_RANKS)), str(dg["findings"]))
    if f:
        ev = f[0]["evidence"]
        check("its evidence: 800 GB/s of 900, PCIe 0", abs(ev["nvlink_gbps"] - 800) <= 8 and
              ev["nvlink_peak_gbps"] == 900 and ev["pcie_gbps"] == 0 and
              ev["platform"].startswith("H100 SXM"), str(ev))
        check("its saving unquantified", f[0]["saving_us"] is None and
              f[0]["saving_from"] == "unquantified", str(f[0]))


def case_gpm_nvlink_unsaturated():
    """200 GB/s each way on the same part: 400 / 900 = 44 %: no finding,
    and nothing said missing (it was judged)."""
    rep, dg, nccl = run_nvlink(200, "NVIDIA H100 80GB HBM3")
    nvlink_truth(rep, nccl, 200)
    c = rep["ranks"][0]["efficiency"]["collectives"]
    check("44 % of the peak", c["nvlink_pct_of_peak"] is not None and
          abs(c["nvlink_pct_of_peak"] - 400 / 9) <= 1, str(c))
    check("no nvlink_saturated", not [x for x in dg["findings"] if x["kind"] ==
                                      "nvlink_saturated"], str(dg["findings"]))
    check("judged: not among the insufficient evidence",
          "nvlink_saturated" not in [i["kind"] for i in dg["insufficient_evidence"]],
          str(dg["insufficient_evidence"]))


def case_gpm_nvlink_unknown():
    """Saturating traffic on a part the platform table does not know (the
    fake's own name): the figures, no peak, and diagnose says why it cannot
    judge."""
    rep, dg, nccl = run_nvlink(400, None)
    nvlink_truth(rep, nccl, 400)
    c = rep["ranks"][0]["efficiency"]["collectives"]
    check("no platform, no share of a peak", c["platform"] is None and
          c["nvlink_peak_gbs"] is None and c["nvlink_pct_of_peak"] is None, str(c))
    check("no nvlink_saturated", not [x for x in dg["findings"] if x["kind"] ==
                                      "nvlink_saturated"], str(dg["findings"]))
    ins = {i["kind"]: i["reason"] for i in dg["insufficient_evidence"]}
    check("insufficient evidence: no NVLink peak for the device",
          'no NVLink peak for the device "FakeGPU 0"' in ins.get("nvlink_saturated", ""),
          str(ins))


def main():
    case = sys.argv[1]
    {"gpm": case_gpm, "gpm_older": case_gpm_older, "gpm_options": case_gpm_options,
     "gpm_diff": case_gpm_diff, "gpm_nvlink": case_gpm_nvlink,
     "gpm_nvlink_unsaturated": case_gpm_nvlink_unsaturated,
     "gpm_nvlink_unknown": case_gpm_nvlink_unknown}[case]()
    if failures:
        print(f"{case}: {len(failures)} check(s) failed (traces kept in {', '.join(scratch)}):")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)
    print(f"{case}: ok")


if __name__ == "__main__":
    main()
