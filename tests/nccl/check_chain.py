#!/usr/bin/env python3
"""Another NCCL profiler plugin beside cutrace (docs/nccl.md, "Another
profiler plugin"): a job whose NCCL_PROFILER_PLUGIN names a second plugin
(tests/nccl/chain_plugin.c, which counts the events it gets and checks
their parents and handles) runs under `cutrace run`, which points NCCL at
cutrace and has it forward every call to that plugin. The truth is the
same job with the plugin alone (no cutrace): the simulated NCCL's events
are deterministic for a job, so the plugin must count exactly the same
starts per event type, state records and stops in every process, with no
foreign parent, no unknown handle and nothing left open; and cutrace must
still have recorded its own (plugin-timed ops, proxy records: the links),
with the chained plugin named in the trace.

Cases: NCCL asking ABI v6 of a plugin with v4/v5 (cutrace forwards at
v5), with v6 (at v6), v4; the plugin's own mask (Coll only) honoured; a
plugin that cannot be loaded (the job runs, the trace says why). The v6
case's report is also the same bytes from its summaries (which carry
NCCL's account, links included).
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []
CUTRACE = os.environ["CT_CUTRACE"]


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def run(name, plugin, extra, under_cutrace):
    """The chained plugin's lines (one per process) and the trace folder."""
    d = tempfile.mkdtemp(prefix=f"chain-{name}-")
    out = os.path.join(d, "counts.jsonl")
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": "4", "W_LINKS_COUNTS": "1048576",
                "NCCL_PROFILER_PLUGIN": plugin, "CHAIN_OUT": out})
    env.pop("CUTRACE_NCCL_PROFILER_CHAIN", None)
    env.update(extra)
    traces = os.path.join(d, "traces")
    job = [os.environ["CT_W_LINKS"], "launch", "4"]
    cmd = [CUTRACE, "run", "-o", traces, "--"] + job if under_cutrace else job
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    lines = []
    if os.path.exists(out):
        with open(out) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    for x in lines:
        x.pop("pid")
    return sorted(lines, key=lambda x: json.dumps(x, sort_keys=True)), traces


def chain_meta(traces):
    r = subprocess.run([CUTRACE, "dump", "--json", traces], capture_output=True, text=True,
                       timeout=300)
    vals = set()
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "meta" and "nccl_profiler_chain" in rec:
            vals.add(rec["nccl_profiler_chain"])
    return vals


def links(traces):
    r = subprocess.run([CUTRACE, "report", "--json", traces], capture_output=True, text=True,
                       timeout=300)
    if r.returncode:
        return None
    return json.loads(r.stdout)["nccl"]["links"]


def case(name, lib, extra, want_symbol, want_types=None, want_links=True):
    plugin = os.path.join(os.environ["CT_CHAIN_DIR"], lib)
    alone, _ = run(name + "-alone", plugin, extra, False)
    chained, traces = run(name, plugin, extra, True)
    check(f"{name}: every process counted", len(alone) == 4 and len(chained) == 4,
          f"alone {len(alone)}, chained {len(chained)}")
    for x in alone + chained:
        check(f"{name}: parents, handles, stops",
              x["bad_parent"] == 0 and x["bad_handle"] == 0 and x["open"] == 0, str(x))
    check(f"{name}: the plugin got what it gets alone", alone == chained,
          f"alone {alone}, chained {chained}")
    if want_types is not None:
        for x in chained:
            check(f"{name}: only the kinds it asked for", set(x["starts"]) == want_types,
                  str(x["starts"]))
    meta = chain_meta(traces)
    check(f"{name}: the trace names the chained plugin",
          any(f"({want_symbol})" in v and lib in v for v in meta), str(meta))
    ln = links(traces)
    # copy-engine collectives have no proxy steps: no links to have
    check(f"{name}: cutrace still has its own account (links)", bool(ln) == want_links, str(ln))
    if name == "v6":
        for b in from_summaries(traces):
            check(f"{name}: summaries", False, b)
    print(f"{name}: chained plugin counts {chained[0] if chained else None}; "
          f"cutrace links {len(ln or [])}")


def from_summaries(traces):
    """Problems: the report from the job's summaries is not the traces'
    (summaries carry NCCL's account since summary version 9)."""
    sums = traces + "-sums"
    r = subprocess.run([CUTRACE, "summarize", "-o", sums, traces], capture_output=True,
                       text=True, timeout=300)
    if r.returncode:
        return [f"summarize failed: {r.stderr}"]
    a = subprocess.run([CUTRACE, "report", "--json", traces], capture_output=True, text=True,
                       timeout=300).stdout
    b = subprocess.run([CUTRACE, "report", "--json", sums], capture_output=True, text=True,
                       timeout=300).stdout
    return [] if a == b and json.loads(b)["nccl"]["links"] else [
        "the report from the summaries is not the traces' (or has no links)"]


case("v6-to-v5", "libchain_plugin.so", {}, "ncclProfiler_v5")
case("v6", "libchain_plugin_v6.so", {}, "ncclProfiler_v6")
# Under qemu-user (CT_EMULATED) a case's two jobs take about 150 s: the
# cross suite runs the cases a version mismatch needs (above and below),
# and leaves out ABI v4, the mask and the missing plugin, which the native
# run covers.
EMULATED = bool(os.environ.get("CT_EMULATED"))
if not EMULATED:
    case("v4", "libchain_plugin.so", {"FAKEGPU_NCCL_PROFILER_VERSION": "4"}, "ncclProfiler_v4")
    case("coll-only", "libchain_plugin.so", {"CHAIN_MASK": "0x2"}, "ncclProfiler_v5", {"2"})
# NCCL at v6 with copy-engine collectives: a v5 plugin chained never gets
# their CeColl events (its descriptor has no such member), as alone
case("v6-to-v5-ce", "libchain_plugin.so", {"FAKEGPU_NCCL_CE": "1", "CHAIN_MASK": "0xffff"},
     "ncclProfiler_v5", want_links=False)
# NCCL at ABI v7 (kernel phases and user tags on): a v6 plugin chained gets
# v7's descriptors as v6 ones and never a kernel phase or its stop state,
# exactly what it gets alone from an NCCL that speaks v6 to it (its mask
# asks every bit, as a plugin setting -1 would)
case("v7-to-v6", "libchain_plugin_v6.so", {"FAKEGPU_NCCL_PROFILER_VERSION": "7",
                                          "CHAIN_MASK": "0xffff",
                                          "FAKEGPU_NCCL_KPHASES": "30:50",
                                          "FAKEGPU_NCCL_USER_TAG": "1000"}, "ncclProfiler_v6")

# a plugin that is not there: the job runs, cutrace records, the trace says why
if not EMULATED:
    counts, traces = run("missing", "/nonexistent/libnccl-profiler-x.so", {}, True)
    meta = chain_meta(traces)
    check("missing: the trace says why", any("not loaded" in v for v in meta), str(meta))
    check("missing: cutrace still has its own account", bool(links(traces)), "no links")

if failures:
    print("FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("chain: ok")
