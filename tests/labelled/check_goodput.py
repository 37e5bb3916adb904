#!/usr/bin/env python3
"""Runs one job life of tests/labelled/w_restart.c (restart, hang, clean)
under `cutrace run`, then `cutrace goodput --json`, and checks the job's
split into start-up, productive steps, checkpoints, restores, lost work,
hang and down time against the truth lines the job printed (w_restart.c
states each case's schedule and what its lines mean).

usage: check_goodput.py CASE   (environment: CT_CUTRACE, CT_W_RESTART,
                                CT_FAKEGPU_DIR, CT_FAKE_CUPTI)

The truths follow the definitions `cutrace goodput` uses: an attempt spans
from its earliest process start (attempt 0: the launcher's JOB_START, the
job's first process) to its latest process end (the last attempt: the
launcher's JOB_END; a killed one: the launcher's KILL); each of its parts
is the mean over its ranks of that rank's time in the part:
  startup     attempt start .. the rank's first step start, less restore
  restore     the RESTORE span: the checkpoint file's reading and the
              copies of what it read to the GPU (attempts after the first;
              its open and deserialising are start-up: docs/goodput.md)
  productive  STEP e - s of the steps not lost
  checkpoint  CKPT e - s
  lost        from the start of the first lost step to the attempt's end
              (the steps the next attempt runs again, and the one in
              progress at the kill: 11, 12, 13 in restart)
  hang        from rank 0's HANG (the collective that never completes) to
              the end, for every rank (hang: checked as KILL - HANG, the
              few ms the ranks take to die after the SIGTERM being within
              the tolerance)
and the job's down time runs from attempt 0's KILL to attempt 1's first
RANK_START; total = JOB_END - JOB_START; goodput = 100 x productive / total.

Tolerance: each part within 5 % of its truth or 2 ms, whichever is larger
(goodput within 5 % of itself). The truth lines are the program's own
clock reads, which bracket the shim's spans a few microseconds apart; a
process's start as the trace states it is the shim's constructor, a ms or
so before main's first line (the RANK_START and JOB_START lines); and the
SIGKILLed attempt's end is its last record: the shim's default flush period
(100 ms) loses nothing, the killed processes' traces are completed from
their live mappings (`cutrace run` salvages them after the job); a rank
waiting in a synchronize records nothing until the next kernel completes
(every 5 ms): the killed attempt's lost time may fall short of its truth,
and the down time after it exceed its truth, by KILL_GAP = 5 ms more.

The kill lands in step 13: that step runs kernels until the SIGKILL, so a
launcher the loaded machine wakes late still kills it there. A run whose
ranks did not both reach step 13 (a launcher that misread the pipe) lacks
the schedule w_restart.c states and is run again (3 tries in all).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
# us the SIGKILLed attempt's traces may end before the kill: a rank waiting
# in cuCtxSynchronize records nothing until its next kernel completes (one
# every 5 ms); every record made is in the salvaged trace (no flush loss)
KILL_GAP = 5000.0
# us a rank may run on after the launcher read the clock for its KILL line:
# kill() returns before the signal is delivered, and on a loaded 2-CPU host
# the rank's next time slice may come milliseconds later
KILL_LATE = 5000.0
PARTS = ["startup_us", "productive_us", "checkpoint_us", "restore_us", "lost_us", "hang_us",
         "data_stall_us", "idle_us", "shutdown_us", "downtime_us", "unclassified_us"]


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def get(obj, key, what):
    """obj[key], or None with a failure when the JSON lacks it."""
    if not isinstance(obj, dict) or key not in obj:
        check(what, False, f"no {key!r} in the JSON")
        return None
    return obj[key]


def near(what, got, want, rel=0.05, abs_=2000.0, below=0.0, above=0.0):
    """got within rel of want or abs_ us, whichever is larger; below/above:
    us more allowed on that side."""
    if got is None:
        check(what, False, f"got null, want {want:.1f}")
        return
    tol = max(abs(want) * rel, abs_)
    lo, hi = want - tol - below, want + tol + above
    print(f"  {what}: got {got / 1000:.3f} ms, truth {want / 1000:.3f} ms")
    check(what, lo <= got <= hi, f"got {got:.1f}, want {want:.1f} (in {lo:.1f} .. {hi:.1f})")


class Truth:
    """The job's truth lines, times in us after JOB_START."""

    def __init__(self, out):
        self.t0_ns = None
        self.end = None
        self.attempt, self.kill = {}, {}
        self.rank_start, self.rank_end = {}, {}
        self.steps, self.ckpts = {}, {}  # (a, r) -> {k: (s, e)}
        self.restore, self.hang = {}, {}  # (a, r) -> (s, e), t
        lines = [l.split() for l in out.splitlines() if l.strip()]
        for l in lines:
            if l[0] == "JOB_START":
                self.t0_ns = int(l[1])
        if self.t0_ns is None:
            sys.exit("no JOB_START line:\n" + out)
        us = lambda v: (int(v) - self.t0_ns) / 1000.0
        for l in lines:
            tag = l[0]
            if tag == "JOB_END":
                self.end = us(l[1])
            elif tag == "ATTEMPT":
                self.attempt[int(l[1])] = us(l[2])
            elif tag == "KILL":
                self.kill[int(l[1])] = us(l[2])
            elif tag == "RANK_START":
                self.rank_start[int(l[1]), int(l[2])] = us(l[3])
            elif tag == "RANK_END":
                self.rank_end[int(l[1]), int(l[2])] = us(l[3])
            elif tag in ("STEP", "CKPT"):
                d = self.steps if tag == "STEP" else self.ckpts
                d.setdefault((int(l[1]), int(l[2])), {})[int(l[3])] = (us(l[4]), us(l[5]))
            elif tag == "RESTORE":
                self.restore[int(l[1]), int(l[2])] = (us(l[3]), us(l[4]))
            elif tag == "HANG":
                self.hang[int(l[1]), int(l[2])] = us(l[3])
        if self.end is None:
            sys.exit("no JOB_END line:\n" + out)
        self.ranks = sorted({r for (_, r) in self.rank_start})

    def span(self, a):
        """Attempt a's start and end (us)."""
        last = a == max(self.attempt)
        s = 0.0 if a == 0 else min(t for (x, _), t in self.rank_start.items() if x == a)
        e = self.end if last else self.kill[a]
        return s, e

    def parts(self, a, first_lost=None, hang_end=None):
        """Attempt a's truths, means over its ranks (us). first_lost: the
        first lost step's number; hang_end: where its hang time ends."""
        s, e = self.span(a)
        acc = {"startup": 0.0, "restore": 0.0, "productive": 0.0, "checkpoint": 0.0,
               "lost": 0.0, "hang": 0.0}
        onset = self.hang.get((a, 0))
        for r in self.ranks:
            steps = self.steps.get((a, r), {})
            first = min(steps)
            rs = self.restore.get((a, r))
            restore = rs[1] - rs[0] if rs else 0.0
            acc["restore"] += restore
            acc["startup"] += steps[first][0] - s - restore
            acc["productive"] += sum(
                se[1] - se[0] for k, se in steps.items() if first_lost is None or k < first_lost)
            acc["checkpoint"] += sum(ce[1] - ce[0] for ce in self.ckpts.get((a, r), {}).values())
            if first_lost is not None:
                acc["lost"] += e - steps[first_lost][0]
            if onset is not None:
                acc["hang"] += (hang_end if hang_end is not None else e) - onset
        return {k: v / len(self.ranks) for k, v in acc.items()}


def run_job(case, tries=1, precondition=None, extra_env=None):
    """Runs the case until precondition(truth) holds (None: it holds);
    returns (directory, truth, goodput JSON or None)."""
    for i in range(tries):
        d = tempfile.mkdtemp(prefix=f"goodput-{case}-")
        env = dict(os.environ)
        env.update({
            "LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
            "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
            "FAKEGPU_NET_GBPS": "1",
            "W_JOB_DIR": d,
            # 4 MiB over "PCIe" in 8.4 ms: a checkpoint's copy from the GPU
            # and a restore's copies to it are times the parts must place
            "FAKEGPU_PCIE_GBPS": "0.5",
        })
        env.update(extra_env or {})
        if case == "hang":
            env["CUTRACE_HANG_S"] = "1"  # the shim's hang detection: 1 s without a completion
        cutrace = os.environ["CT_CUTRACE"]
        traces = os.path.join(d, "traces")
        # paused: the launcher opens and closes the ranks' capture window
        env.update({"W_CUTRACE": cutrace, "W_TRACES": traces})
        p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_RESTART"],
                            "launch", case], env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"{case}: job failed ({p.returncode}), kept {d}:\n{p.stdout}\n{p.stderr}")
        truth = Truth(p.stdout)
        why = precondition(truth) if precondition else None
        if why:
            print(f"{case}: try {i + 1}: {why}; running it again")
            shutil.rmtree(d, ignore_errors=True)
            continue
        with open(os.path.join(d, "truth.txt"), "w") as f:
            f.write(p.stdout)
        g = subprocess.run([cutrace, "goodput", "--json", traces], capture_output=True, text=True,
                           timeout=300)
        if g.returncode != 0:
            check("cutrace goodput", False, f"exit {g.returncode}: {g.stderr.strip()}")
            return d, truth, None
        # the same from per-rank summaries (cutrace summarize): identical
        sums = os.path.join(d, "sums")
        subprocess.run([cutrace, "summarize", "-o", sums, traces], capture_output=True,
                       timeout=300)
        g2 = subprocess.run([cutrace, "goodput", "--json", sums], capture_output=True, text=True,
                            timeout=300)
        check("goodput from summaries equals goodput from traces", g2.stdout == g.stdout,
              g2.stderr.strip() or "outputs differ")
        # ... and with the job spilled (decoder/read/spill.h): identical
        g3 = subprocess.run([cutrace, "goodput", "--json", traces], capture_output=True,
                            text=True, timeout=300, env=dict(os.environ, CUTRACE_SPILL="1"))
        check("goodput of the job spilled equals goodput of it whole", g3.stdout == g.stdout,
              g3.stderr.strip() or "outputs differ")
        try:
            return d, truth, json.loads(g.stdout)
        except ValueError as e:
            check("cutrace goodput --json", False, f"not JSON ({e}): {g.stdout[:200]}")
            return d, truth, None
    sys.exit(f"{case}: the schedule did not hold in {tries} tries")


def check_common(gp, truth, natt, from_ranks=False):
    """What every case shares: the job's length, its parts summing to it,
    the attempts' count and ranks. from_ranks: the launcher left no trace
    (a flight recorder writes only on request): the job starts at its
    first rank's start."""
    total_us = get(gp, "total_us", "total_us")
    t0 = min(truth.rank_start.values()) if from_ranks else 0.0
    near("total_us", total_us, truth.end - t0)
    parts = get(gp, "parts", "parts") or {}
    got = [get(parts, p, "parts") for p in PARTS]
    if total_us and None not in got:
        check("parts sum to total_us", abs(sum(got) - total_us) <= 0.001 * total_us,
              f"sum {sum(got):.1f}, total {total_us:.1f}: {parts}")
    job = get(gp, "job", "job")
    check("job id", isinstance(job, str) and job.startswith("goodput"), repr(job))
    att = get(gp, "attempts", "attempts") or []
    check("attempts", len(att) == natt, f"{len(att)}: {[a.get('ended') for a in att]}")
    for i, a in enumerate(att[:natt]):
        check(f"attempt {i} index", get(a, "index", f"attempt {i}") == i, str(a.get("index")))
        check(f"attempt {i} ranks", get(a, "ranks", f"attempt {i}") == len(truth.ranks),
              str(a.get("ranks")))
        want = None if COUNT_VAR == "none" else i  # no launcher count: null
        check(f"attempt {i} restart_count", a.get("restart_count") == want,
              str(a.get("restart_count")))
    return att[:natt] if len(att) >= natt else None


def near_parts(a, want, keys, label, **kw):
    for k in keys:
        near(f"{label} {k}_us", get(a, k + "_us", label), want[k], **kw.get(k, {}))


def goodput_pct(gp, truth, productive):
    want = 100.0 * productive / truth.end
    got = get(gp, "goodput_pct", "goodput_pct")
    check("goodput_pct", got is not None and abs(got - want) <= 0.05 * want,
          f"got {got}, want {want:.2f} +- {0.05 * want:.2f}")


def killed_in_step_13(t):
    """Why the restart run lacks its schedule (None: it has it)."""
    for r in t.ranks:
        done = t.steps.get((0, r), {})
        if 12 not in done:
            return f"rank {r} of attempt 0 did not finish step 12 before the kill"
        if max(done) >= 13:
            return f"the kill came late: rank {r} of attempt 0 finished step {max(done)}"
    return None


COUNT_VAR = None  # the variable that states the attempt (W_RESTART_COUNT_VAR)


def case_restart(count_var=None):
    global COUNT_VAR
    COUNT_VAR = count_var
    extra = {"W_RESTART_COUNT_VAR": count_var} if count_var else None
    d, t, gp = run_job("restart", 3, killed_in_step_13, extra)
    if gp is None:
        return d
    att = check_common(gp, t, 2)
    if att is None:
        return d
    a0, a1 = att
    # no handler sees a SIGKILL: the ranks' traces, completed from their live
    # mappings by `cutrace run` (the launcher's parent, not theirs: the
    # signal is not known), end at their last record
    check("attempt 0 ended", a0.get("ended") == "killed", str(a0.get("ended")))
    check("attempt 0 end_uncertainty_us", a0.get("end_uncertainty_us") == 0,
          str(a0.get("end_uncertainty_us")))
    check("attempt 1 ended", a1.get("ended") == "exit", str(a1.get("ended")))
    check("attempt 0 lost_steps", a0.get("lost_steps") == [11, 12, 13], str(a0.get("lost_steps")))
    check("attempt 1 lost_steps", a1.get("lost_steps") == [], str(a1.get("lost_steps")))
    w0 = t.parts(0, first_lost=11)
    w1 = t.parts(1)
    # where the killed attempt ends on its traces: its last record, up to
    # KILL_GAP before the kill (lost shorter, down time longer by as much),
    # or up to KILL_LATE after the KILL line (the clock is read before
    # kill(), and a busy host runs the ranks on until the signal lands)
    near_parts(a0, w0, ["startup", "productive", "checkpoint", "lost"], "attempt 0",
               lost={"below": KILL_GAP, "above": KILL_LATE})
    near_parts(a1, w1, ["startup", "restore", "productive", "checkpoint"], "attempt 1")
    down = min(v for (a, _), v in t.rank_start.items() if a == 1) - t.kill[0]
    near("downtime_us", get(gp, "downtime_us", "downtime_us"), down, above=KILL_GAP,
         below=KILL_LATE)
    goodput_pct(gp, t, w0["productive"] + w1["productive"])
    return d


def hang_reached(t):
    for r in t.ranks:
        if max(t.steps.get((0, r), {0: None})) != 7:
            return f"rank {r} did not stop after step 7"
        if (0, r) not in t.hang:
            return f"no HANG line of rank {r}"
    return None


def case_hang(flight=False):
    # flight: the flight recorder keeps the last 30 s and writes them at the
    # hang's detection (rank 0) and at the SIGTERM (both ranks)
    extra = {"CUTRACE_FLIGHT": "30"} if flight else None
    d, t, gp = run_job("hang", 1, hang_reached, extra)
    if gp is None:
        return d
    att = check_common(gp, t, 1, from_ranks=flight)
    if att is None:
        return d
    a0 = att[0]
    check("attempt 0 ended", a0.get("ended") == "hang", str(a0.get("ended")))
    # hang time as the brief states it: rank 0's HANG to the SIGTERM (the
    # few ms the processes take to end after it are within the tolerance)
    w = t.parts(0, hang_end=t.kill[0])
    near_parts(a0, w, ["hang", "productive"], "attempt 0")
    return d


def case_clean():
    d, t, gp = run_job("clean")
    if gp is None:
        return d
    att = check_common(gp, t, 1)
    if att is None:
        return d
    a0 = att[0]
    check("attempt 0 ended", a0.get("ended") == "exit", str(a0.get("ended")))
    check("attempt 0 lost_steps", a0.get("lost_steps") == [], str(a0.get("lost_steps")))
    w = t.parts(0)
    near_parts(a0, w, ["productive", "checkpoint"], "attempt 0")
    goodput_pct(gp, t, w["productive"])
    return d


def recorded_steps(traces):
    """rank -> the step numbers its trace holds whole (the report's
    iterations: a step a window cut is none)."""
    p = subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", "--rank-iterations",
                        traces], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        check("cutrace report", False, f"exit {p.returncode}: {p.stderr.strip()}")
        return {}
    doc = json.loads(p.stdout)
    return {k["rank"]: [it["index"] for it in k.get("iterations") or []] for k in doc["ranks"]}


def case_paused():
    """CUTRACE_START=paused with one window from after step 4 to after step
    14 (w_restart.c): the goodput is over the window's whole steps and the
    time between them; the unrecorded start-up, steps and shutdown, and the
    window's edges (parts of steps it cut), are uncovered, in no part."""
    for i in range(3):
        d, t, gp = run_job("paused", extra_env={"CUTRACE_START": "paused"})
        if gp is None:
            return d
        steps = recorded_steps(os.path.join(d, "traces"))
        if all(len(steps.get(r, [])) >= 3 for r in t.ranks):
            break
        print(f"paused: try {i + 1}: the window held fewer than 3 whole steps on a rank "
              f"({steps}); running it again")
        shutil.rmtree(d, ignore_errors=True)
    else:
        sys.exit("paused: the window never held 3 whole steps")
    att = gp.get("attempts") or []
    check("attempts", len(att) == 1, str(len(att)))
    if not att:
        return d
    a0 = att[0]
    check("attempt 0 ended", a0.get("ended") == "exit", str(a0.get("ended")))
    # nothing before the window was recorded: no start-up; the window
    # closed at step 14, long before the end: no shutdown
    for k in ("startup_us", "restore_us", "shutdown_us", "lost_us", "hang_us"):
        check(f"attempt 0 {k} is 0 (not recorded)", a0.get(k) == 0.0, str(a0.get(k)))
    # truths per rank: its recorded steps, and the checkpoints between two
    # of them (one after the window's last step lies in its edge)
    n = len(t.ranks)
    prod = sum(sum(t.steps[0, r][k][1] - t.steps[0, r][k][0] for k in steps[r])
               for r in t.ranks) / n
    ckpt = sum(sum(ce[1] - ce[0] for k, ce in t.ckpts.get((0, r), {}).items()
                   if k in steps[r] and k + 1 in steps[r]) for r in t.ranks) / n
    span = sum(t.steps[0, r][max(steps[r])][1] - t.steps[0, r][min(steps[r])][0]
               for r in t.ranks) / n
    near("attempt 0 productive_us", a0.get("productive_us"), prod)
    near("attempt 0 checkpoint_us", a0.get("checkpoint_us"), ckpt)
    total, cov, unc = gp.get("total_us"), gp.get("covered_us"), gp.get("uncovered_us")
    if None in (total, cov, unc):
        check("total, covered and uncovered", False, f"{total}, {cov}, {unc}")
        return d
    # the launcher's one call (its mark) came while paused: it left no
    # trace, and the job runs from its first rank's start
    near("total_us", total, t.end - min(t.rank_start.values()))
    # the covered time: from each rank's first whole step to its last
    near("covered_us", cov, span)
    check("covered + uncovered = total", abs(cov + unc - total) <= 0.002, f"{cov} + {unc}")
    parts = gp.get("parts") or {}
    got = [parts.get(p) for p in PARTS]
    check("parts sum to covered_us", None not in got and abs(sum(got) - cov) <= 0.001 * cov,
          f"{parts}, covered {cov}")
    check("no part negative", None not in got and min(got) >= 0, str(parts))
    g = gp.get("goodput_pct")
    want = 100.0 * gp.get("productive_us", 0.0) / cov
    check("goodput_pct = productive / covered, in [0, 100]",
          g is not None and 0 <= g <= 100 and abs(g - want) <= 0.01, f"{g}, want {want:.2f}")
    return d


CASES = {"restart": case_restart, "hang": case_hang, "clean": case_clean,
         # the attempt stated by Slurm's requeue count, and by nothing (the
         # attempts are then the ranks' lifetimes that do not overlap)
         "restart_slurm": lambda: case_restart("SLURM_RESTART_COUNT"),
         "restart_nocount": lambda: case_restart("none"),
         "hang_flight": lambda: case_hang(True),
         # a paused job with one `cutrace start`/`stop` window
         "paused": case_paused}


def main():
    case = sys.argv[1] if len(sys.argv) == 2 else None
    if case not in CASES:
        sys.exit(f"usage: check_goodput.py {'|'.join(CASES)}")
    d = CASES[case]()
    if failures:
        print(f"{case}: {len(failures)} check(s) failed (traces and truth kept in {d}):")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    shutil.rmtree(d, ignore_errors=True)
    print(f"{case}: ok")


if __name__ == "__main__":
    main()
