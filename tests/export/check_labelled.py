#!/usr/bin/env python3
"""Exports a labelled job (tests/labelled/w_job.c, case `pipe`: 4 pipeline
stages, Send/Recv between them) recorded under `cutrace run` on the
simulated device, and checks both exports against the decoder's own
figures with check_chrome.py, check_sqlite.py (CUPTI's synchronization
records among them) and check_nsys_stats.py (nsys's summary reports), the
Chrome file's size against its estimate (check_size.py), and its
--critical-path export against `critical-path --json`
(check_critical_path.py). The case `graph` (2 ranks replaying a forked
CUDA graph) gives kernels of graph nodes: the database's graphNodeId
against the dump's graph_node records (check_sqlite.py); examples/sim_train
(CT_SIM_TRAIN) copies both ways and sets memory: nsys's memory summaries.
With CT_FAKEGPU_NVML_DIR,
also the case `throttle` (rank 1's device power-capped from 0.36 s under
the fake NVML, counters every 10 ms): the Chrome file has every rank's
health counter tracks and rank 1's SM clock drops.

usage: check_labelled.py TESTS_EXPORT_DIR   (environment as check_case.py:
       CT_CUTRACE, CT_W_JOB, CT_FAKEGPU_DIR, CT_FAKE_CUPTI, CT_SIM_TRAIN
       [, CT_FAKEGPU_NVML_DIR])
"""
import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

here = sys.argv[1]
cutrace = os.environ["CT_CUTRACE"]
d = tempfile.mkdtemp(prefix="export-labelled-")
try:
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "1", "W_JOB_DIR": d})
    traces = os.path.join(d, "traces")
    subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_JOB"], "launch", "4",
                    "pipe"], env=env, check=True, capture_output=True, timeout=300)
    files = sorted(glob.glob(os.path.join(traces, "**", "*.cutrace"), recursive=True))
    dumps = []
    for f in files:
        with open(f + ".jsonl", "w") as out:
            subprocess.run([cutrace, "dump", "--json", f], stdout=out, check=True)
        dumps.append(f + ".jsonl")
    rep = os.path.join(d, "report.json")
    subprocess.run([cutrace, "report", "--json", "--rank-iterations", "-o", rep, traces], check=True)
    for fmt, out in (("chrome", "job.json"), ("sqlite", "job.sqlite")):
        subprocess.run([cutrace, "export", "--format", fmt, "-o", os.path.join(d, out), traces],
                       check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_chrome.py"),
                    os.path.join(d, "job.json"), "--ranks", "4", "--dump"] + dumps, check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_sqlite.py"),
                    os.path.join(d, "job.sqlite"), rep] + dumps, check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_nsys_stats.py"),
                    os.path.join(d, "job.sqlite"), rep] + dumps, check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_size.py"), cutrace, d, "--",
                    traces], check=True)
    # the critical path on real shim traces: pipeline send/recv across ranks,
    # CUPTI kernels and NCCL intervals as the slices it lies on
    cp = os.path.join(d, "cp.json")
    subprocess.run([cutrace, "critical-path", "--json", "-o", cp, traces], check=True)
    subprocess.run([cutrace, "export", "--format", "chrome", "--critical-path", "-o",
                    os.path.join(d, "path.json"), traces], check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_critical_path.py"),
                    os.path.join(d, "job.json"), os.path.join(d, "path.json"), cp], check=True)
    print("export labelled pipe: ok")
    # kernels replayed as the nodes of a CUDA graph
    traces = os.path.join(d, "graph")
    subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_JOB"], "launch", "2",
                    "graph"], env=env, check=True, capture_output=True, timeout=300)
    dumps = []
    for f in sorted(glob.glob(os.path.join(traces, "**", "*.cutrace"), recursive=True)):
        with open(f + ".jsonl", "w") as out:
            subprocess.run([cutrace, "dump", "--json", f], stdout=out, check=True)
        dumps.append(f + ".jsonl")
    rep = os.path.join(d, "graph.report.json")
    subprocess.run([cutrace, "report", "--json", "--rank-iterations", "-o", rep, traces],
                   check=True)
    db = os.path.join(d, "graph.sqlite")
    subprocess.run([cutrace, "export", "--format", "sqlite", "-o", db, traces], check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_sqlite.py"), db, rep] + dumps,
                   check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_nsys_stats.py"), db, rep] + dumps,
                   check=True)
    print("export labelled graph: ok")
    # copies host to device and back, memsets, stream synchronizations
    traces = os.path.join(d, "sim")
    subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_SIM_TRAIN"], "20"],
                   env=env, check=True, capture_output=True, timeout=300)
    dumps = []
    for f in sorted(glob.glob(os.path.join(traces, "**", "*.cutrace"), recursive=True)):
        with open(f + ".jsonl", "w") as out:
            subprocess.run([cutrace, "dump", "--json", f], stdout=out, check=True)
        dumps.append(f + ".jsonl")
    rep = os.path.join(d, "sim.report.json")
    subprocess.run([cutrace, "report", "--json", "--rank-iterations", "-o", rep, traces],
                   check=True)
    db = os.path.join(d, "sim.sqlite")
    subprocess.run([cutrace, "export", "--format", "sqlite", "-o", db, traces], check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_sqlite.py"), db, rep] + dumps,
                   check=True)
    subprocess.run([sys.executable, os.path.join(here, "check_nsys_stats.py"), db, rep] + dumps,
                   check=True)
    mem = {n for (n,) in sqlite3.connect(db).execute(
        "SELECT '[CUDA memcpy ' || e.label || ']' FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
        "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind UNION "
        "SELECT '[CUDA memset]' FROM CUPTI_ACTIVITY_KIND_MEMSET")}
    assert mem == {"[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]",
                   "[CUDA memset]"}, mem
    subprocess.run([sys.executable, os.path.join(here, "check_size.py"), cutrace, d, "--",
                    traces], check=True)
    print("export sim_train: ok")
    nvml = os.environ.get("CT_FAKEGPU_NVML_DIR")
    if nvml:
        env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"] + ":" + nvml,
                    "CUTRACE_HEALTH_MS": "10", "W_JOB_CAP_S": "0.36",
                    # the cap counts from the first kernel: start-up (two
                    # cuMemAllocs, 0.2 s each when meson's MALLOC_PERTURB_
                    # fills them on this 2-CPU machine) must not use it up
                    # before the first sample
                    "FAKEGPU_NVML_CAP_FROM": "launch"})
        traces = os.path.join(d, "throttle")
        subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_JOB"], "launch",
                        "4", "throttle"], env=env, check=True, capture_output=True, timeout=300)
        out = os.path.join(d, "throttle.json")
        subprocess.run([cutrace, "export", "--format", "chrome", "-o", out, traces], check=True)
        subprocess.run([sys.executable, os.path.join(here, "check_chrome.py"), out, "--ranks",
                        "4", "--health", "--throttled", "1"], check=True)
        print("export labelled throttle: ok")
finally:
    if not os.environ.get("CT_KEEP"):
        shutil.rmtree(d, ignore_errors=True)
