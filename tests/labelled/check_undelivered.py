#!/usr/bin/env python3
"""A job killed with a hung kernel's GPU time in CUPTI's buffers
(tests/labelled/w_undelivered.c): the time after the rank's GPU record ends
is not covered, never idle.

w_undelivered runs WARM steps that keep the GPU busy (compute exactly
20 ms a step; stream B's 1 ms kernel in each is an all-reduce's), then starts a kernel on stream B that runs for 5 s and keeps
stream A busy half the time with 1 ms kernels, until `cutrace run`'s child
is SIGKILLed 150, 300 or 450 ms later. B's kernel never completes, so its
GPU time is never delivered: the GPU record of the process is whole only
until B's launch (A's later kernels are delivered, and their gaps, half of
the time after B's launch, are not idle: B was running). Checked on
`cutrace report --json`:

* the cut (capture.undelivered.spans[0][0]) is B's launch: between the
  program's clock reads around the call (0.1 ms allowed either side for
  the trace's realtime conversion, which is the median of the shim's clock
  pairs: microseconds);
* nothing after it is covered: covered_us <= cut (the rank's window starts
  at the job's time zero; 0.01 us for JSON rounding); the iterations are
  the WARM steps exactly (those after the cut launched undelivered ops or
  ran beside them), and compute_us is WARM x 20000 us (the fake device's
  durations are exact, but it converts each record's times with its own
  clock offset, the tightest of a few paired clock reads: back-to-back
  kernels may overlap by that error, under 1 us per kernel);
* idle_us within the bounds the program measured around each step's first
  launch (the GPU was idle then, so the step's work starts when that call
  enqueues it, and ends 20 ms later; the last gap runs to B's launch),
  50 us allowed either side (the same per-record conversion error, 2
  records a gap, and the trace's realtime conversion, microseconds): before
  this rule the time after B's launch counted about half the kill delay as
  idle (A's gaps while B's kernel ran). A run where the host was preempted
  among a step's launches (over 3 ms) is disturbed, its kernels maybe not
  back to back: it is run again, up to 3 times;
* the rows (`--rows`) say the same: the rank row's window, idle and
  iterations;
* said: coverage.material undelivered_ops (count >= 1: B's kernel),
  unavailable gpu_after_salvage_cut, and `cutrace info`'s line;
* the summary of the trace (`cutrace summarize`, docs/summary.md) stands
  for it: `report --json` of the summary is the trace's, byte for byte.

usage: check_undelivered.py   (environment: CT_CUTRACE, CT_W_UNDELIVERED,
                               CT_FAKEGPU_DIR, CT_FAKE_CUPTI)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

WARM = 8
failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")
    return ok


def one(tmp, delay_ms, attempt):
    cutrace, job = os.environ["CT_CUTRACE"], os.environ["CT_W_UNDELIVERED"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.environ["CT_FAKEGPU_DIR"]
    env["CUTRACE_CUPTI_LIB"] = os.environ["CT_FAKE_CUPTI"]
    d = os.path.join(tmp, f"kill{delay_ms}-{attempt}")
    os.mkdir(d)
    side, pidf, traces = (os.path.join(d, n) for n in ("side", "pid", "traces"))
    p = subprocess.Popen([cutrace, "run", "-o", traces, "--", job, str(WARM), side, pidf],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(pidf) or os.path.getsize(pidf) == 0:
        if time.time() > deadline or p.poll() is not None:
            break
        time.sleep(0.002)
    where = f"killed {delay_ms} ms after the hang"
    if not check(where, os.path.exists(pidf), "w_undelivered did not start"):
        p.kill()
        p.wait()
        return
    with open(pidf) as f:
        pid = int(f.read())
    time.sleep(delay_ms / 1000)
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    check(where, p.returncode == 128 + signal.SIGKILL, f"cutrace run exited {p.returncode}: {err}")
    side_v = {}
    with open(side) as f:
        for line in f:
            k, *v = line.split()
            side_v[k] = [int(x) for x in v]
    t_lo, t_hi = side_v["hang_launch_ns"]
    idle_lo, idle_hi = (x / 1e3 for x in side_v["idle_ns"])
    if side_v["launch_span_ns"][0] > 3000000:
        # a step's launches took over 3 ms: the host was preempted among
        # them, so its kernels may not have run back to back (A's first
        # lasts 4 ms) and the bounds above do not hold: a disturbed run
        print(f"{where}: the host was preempted while launching a step "
              f"({side_v['launch_span_ns'][0] / 1e6:.1f} ms): running again")
        return False
    rows = os.path.join(d, "rows.jsonl")
    rep = subprocess.run([cutrace, "report", "--json", "--rows", rows, traces],
                         capture_output=True, text=True)
    if not check(where, rep.returncode == 0, rep.stderr):
        return
    doc = json.loads(rep.stdout)
    r = doc["ranks"][0]
    t0 = doc["job"]["time_zero_ns"]
    und = r["capture"]["undelivered"]
    if not check(where, und is not None, f"no capture.undelivered: {r['capture']}"):
        return
    cut_ns = t0 + und["spans"][0][0] * 1000
    check(where, t_lo - 100000 <= cut_ns <= t_hi + 100000,
          f"cut at {cut_ns} ns, the hang launched in [{t_lo}, {t_hi}]")
    cut_us = und["spans"][0][0]
    check(where, r["capture"]["covered_us"] <= cut_us + 0.01,
          f"covered {r['capture']['covered_us']} us past the cut at {cut_us} us")
    check(where, r["iteration_count"] == WARM,
          f"{r['iteration_count']} iterations, {WARM} steps before the cut")
    check(where, abs(r["compute_us"] - WARM * 20000) <= 1.0 * 5 * WARM,
          f"compute {r['compute_us']} us, want {WARM * 20000}")
    check(where, idle_lo - 50 <= r["idle_us"] <= idle_hi + 50,
          f"idle {r['idle_us']} us, the program's clock says [{idle_lo:.1f}, {idle_hi:.1f}]")
    with open(rows) as f:
        rrow = [json.loads(l) for l in f if '"row":"rank"' in l]
    check(where, len(rrow) == 1 and abs(rrow[0]["idle_us"] - r["idle_us"]) < 0.01 and
          abs(rrow[0]["window_us"] - r["window_us"]) < 0.01 and
          rrow[0]["iterations"] == WARM, f"rows: {rrow}")
    mat = [m for m in r["coverage"]["material"] if m["fact"] == "undelivered_ops"]
    check(where, len(mat) == 1 and mat[0]["count"] >= 1, f"material: {r['coverage']['material']}")
    check(where, any(u["figure"] == "gpu_after_salvage_cut" for u in r["unavailable"]),
          f"unavailable: {r['unavailable']}")
    sums = os.path.join(d, "sums")
    sm = subprocess.run([cutrace, "summarize", "-o", sums, traces], capture_output=True,
                        text=True)
    if check(where, sm.returncode == 0, sm.stderr):
        rs = subprocess.run([cutrace, "report", "--json", sums], capture_output=True, text=True)
        check(where, rs.returncode == 0 and rs.stdout == rep.stdout,
              f"the summary's report differs: {rs.stderr}")
    info = subprocess.run([cutrace, "info", traces], capture_output=True, text=True)
    check(where, "never had" in info.stdout and "untimed, not idle" in info.stdout,
          f"info said: {info.stdout}")
    print(f"{where}: cut {cut_us:.1f} us, covered {r['capture']['covered_us']:.1f} us of a "
          f"{r['capture']['span_us']:.1f} us span, idle {r['idle_us']:.1f} us (truth "
          f"[{idle_lo:.1f}, {idle_hi:.1f}]), compute {r['compute_us']:.1f} us, "
          f"{mat[0]['count'] if mat else 0} ops undelivered")
    return True


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for delay in (150, 300, 450):
            for attempt in range(3):
                if one(tmp, delay, attempt) is not False:
                    break
            else:
                check(f"killed {delay} ms after the hang", False, "disturbed 3 times")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
