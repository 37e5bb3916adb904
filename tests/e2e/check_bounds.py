#!/usr/bin/env python3
"""Bounds that always hold (docs/runs.md "Right, absent or refused"), checked by
running every command that reads a job over every input the tests have:
synthetic jobs of many shapes (ct_synth_job), the golden traces, a cut and a
corrupted trace, per-rank summaries, every PyTorch profiler sample in
tests/data/kineto (in HTA-compatible and exact mode) and, outside sanitizer
builds, real runs of the simulated training job under `cutrace run` (full,
light mode, killed).

For each output:
  - no command crashes (a signal, or an exit status other than 0, 1, 2);
  - JSON parses without NaN or Infinity, and text holds no "nan"/"inf";
  - no time is negative (every *_us, *_ns, *_s figure but the few that are
    signed by definition: start/end offsets, clock skews, lateness, deltas);
  - every share (*_pct) is within [0, 100];
  - goodput: goodput_pct within [0, 100], parts >= 0 summing to the
    covered time, covered + uncovered = total_us, goodput_pct = 100 *
    productive / covered;
  - every iteration has positive duration and ends after it starts, and a
    step that holds no work (no compute, no communication) is an error;
  - every Chrome trace event has a time and a duration >= 0, and the SQLite
    export no row of negative time or ending before it starts.

usage: check_bounds.py BUILD_DIR SOURCE_DIR [sanitized]
"""
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

build, src = sys.argv[1], sys.argv[2]
sanitized = len(sys.argv) > 3 and sys.argv[3] == "sanitized"
cutrace = os.path.join(build, "decoder", "cutrace")
synth = os.path.join(build, "tests", "tools", "ct_synth_job")
sim = os.path.join(build, "examples", "sim_train")
failures = []
checked = 0

# Figures that are signed by definition: offsets on the job clock (host
# activity runs before the first GPU start), clock corrections, lateness
# against peers, differences between runs.
SIGNED = re.compile(r"(^|_)(start|end|skew|lateness|offset|delta|shift|t0)(_|$)|"
                    r"^(start_us|end_us|ts|origin)")
TIME = re.compile(r"_(us|ns|s|ms)$")
PCT = re.compile(r"(_pct|pct)$")


def fail(where, what):
    failures.append(f"{where}: {what}")


def no_const(name):
    raise ValueError(f"non-finite number {name}")


def walk(where, obj, path=""):
    """Bounds on every number of a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            walk(where, v, f"{path}.{k}")
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if isinstance(v, float) and not math.isfinite(v):
                    fail(where, f"{path}.{k} = {v}")
                elif TIME.search(k) and not SIGNED.search(k) and v < 0:
                    fail(where, f"negative time {path}.{k} = {v}")
                elif PCT.search(k) and not SIGNED.search(k) and not (0 <= v <= 100 + 1e-9):
                    fail(where, f"share out of [0, 100]: {path}.{k} = {v}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            walk(where, v, f"{path}[{i}]")


def goodput(where, g):
    if not isinstance(g, dict):
        return
    # goodput is over the time the traces cover (docs/goodput.md): the
    # parts sum to covered_us, which with uncovered_us makes total_us
    pct, prod = g.get("goodput_pct"), g.get("productive_us")
    total = g.get("covered_us", g.get("total_us"))
    unc, whole = g.get("uncovered_us"), g.get("total_us")
    if total is not None and unc is not None and whole is not None and \
            abs(total + unc - whole) > 0.01:
        fail(where, f"covered {total} + uncovered {unc} != total {whole}")
    if pct is not None and not 0 <= pct <= 100 + 1e-9:
        fail(where, f"goodput {pct} %")
    parts = g.get("parts")
    if isinstance(parts, dict) and total is not None:
        vals = [v for v in parts.values() if isinstance(v, (int, float))]
        if any(v < 0 for v in vals):
            fail(where, f"a negative goodput part: {parts}")
        if None in parts.values():  # parts without a step are null: no sum to hold
            vals = []
        # parts are printed to 3 decimals each
        if vals and abs(sum(vals) - total) > max(0.01 * len(vals), 1e-6 * total):
            fail(where, f"goodput parts sum to {sum(vals):.3f}, total {total:.3f}")
    if pct is not None and total and prod is not None:
        if abs(pct - 100.0 * prod / total) > 0.01:
            fail(where, f"goodput {pct} % but productive {prod} of {total}")


def steps(where, doc):
    job = doc.get("job") if isinstance(doc, dict) else None
    # a step the job itself named (a range or mark) may hold no GPU work (a
    # CPU-only trace, a step whose GPU work the capture missed); one the
    # detector found from the work that repeats may not
    detected = any(r.get("iteration_source") not in ("ranges", "marks", None)
                   for r in doc.get("ranks", []) or [])
    for s in (job or {}).get("steps", []) or []:
        a, b = s.get("start_us"), s.get("end_us")
        if a is not None and b is not None and not b > a:
            fail(where, f"step {s.get('index')} from {a} to {b}")
        work = [s.get(k) for k in ("compute_p50_us", "comm_p50_us")]
        if detected and all(w is not None for w in work) and sum(work) <= 0:
            fail(where, f"step {s.get('index')} holds no work: {s}")


def run(where, args, json_out=False, text_out=False):
    """Runs cutrace ARGS; checks the exit and, when asked, its output."""
    global checked
    p = subprocess.run([cutrace] + args, capture_output=True, text=True, errors="replace",
                       timeout=600)
    checked += 1
    if p.returncode < 0 or p.returncode not in (0, 1, 2):
        fail(where, f"cutrace {' '.join(args)}: exit {p.returncode}: {p.stderr[-400:]}")
        return None
    if p.returncode != 0:
        return None
    if re.search(r"(?<![A-Za-z_])-?(nan|inf)(?![A-Za-z_])", p.stdout, re.I) and not json_out:
        fail(where, f"cutrace {' '.join(args)}: nan/inf in the text")
    if json_out:
        try:
            doc = json.loads(p.stdout, parse_constant=no_const)
        except ValueError as e:
            fail(where, f"cutrace {' '.join(args)}: {e}")
            return None
        return doc
    return p.stdout


def job_checks(name, path, kineto=False):
    """Every command over one job."""
    modes = [[], ["--no-hta"]] if kineto else [[]]
    for m in modes:
        where = f"{name}{' ' + m[0] if m else ''}"
        doc = run(where, ["report", "--json"] + m + [path], json_out=True)
        if doc is not None:
            walk(where + " report", doc)
            steps(where + " report", doc)
            goodput(where + " report", doc.get("goodput"))
        run(where, ["report"] + m + [path], text_out=True)
    g = run(name, ["goodput", "--json", path], json_out=True)
    if g is not None:
        walk(name + " goodput", g)
        goodput(name + " goodput", g)
    for cmd in (["critical-path", "--json"], ["diagnose", "--json"]):
        doc = run(name, cmd + [path], json_out=True)
        if doc is not None:
            walk(f"{name} {cmd[0]}", doc)
    tmp = tempfile.mkdtemp()
    try:
        html = os.path.join(tmp, "p.html")
        if run(name, ["report", "--html", "-o", html, path]) is not None:
            # the page's figures: its JSON data block (the script beside it
            # may well name Infinity)
            page = open(html, errors="replace").read()
            m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
            if not m:
                fail(name, "the HTML page has no data block")
            else:
                try:
                    walk(name + " html", json.loads(m.group(1), parse_constant=no_const))
                except ValueError as e:
                    fail(name, f"the HTML page's data: {e}")
        if kineto:
            return
        ch = os.path.join(tmp, "x.json")
        if run(name, ["export", "--format", "chrome", "-o", ch, path]) is not None:
            try:
                d = json.load(open(ch), parse_constant=no_const)
                bad = [e for e in d.get("traceEvents", []) if e.get("dur", 0) < 0]
                if bad:
                    fail(name, f"export: {len(bad)} events of negative duration, e.g. {bad[0]}")
                # Perfetto drops events of negative time: time 0 is the
                # job's earliest record
                bad = [e for e in d.get("traceEvents", []) if e.get("ts", 0) < 0]
                if bad:
                    fail(name, f"export: {len(bad)} events of negative time, e.g. {bad[0]}")
            except ValueError as e:
                fail(name, f"export: {e}")
        db = os.path.join(tmp, "x.sqlite")
        if run(name, ["export", "--format", "sqlite", "-o", db, path]) is not None:
            con = sqlite3.connect(db)
            tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
            for t in tables:
                cols = [r[1] for r in con.execute(f'pragma table_info("{t}")')]
                if "start" in cols and "end" in cols:
                    n = con.execute(f'select count(*) from "{t}" where "end" < "start"').fetchone()[0]
                    if n:
                        fail(name, f"sqlite {t}: {n} rows end before they start")
                if "start" in cols:
                    n = con.execute(f'select count(*) from "{t}" where "start" < 0').fetchone()[0]
                    if n:
                        fail(name, f"sqlite {t}: {n} rows of negative time")
            con.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


work = tempfile.mkdtemp()
try:
    # synthetic jobs of several shapes
    shapes = {
        "synth": [],
        "synth-1rank": ["--ranks", "1"],
        "synth-slow-late": ["--slow-rank", "1", "--late-rank", "2", "--late-us", "300"],
        "synth-ckpt": ["--ckpt-every", "3", "--ckpt-us", "2000"],
        "synth-pageable": ["--pageable-copy-us", "400", "--read-us", "0"],
        "synth-counters": ["--counters-us", "500", "--throttle-rank", "0", "--throttle-from", "2"],
        "synth-jitter": ["--jitter-pct", "20", "--seed", "3", "--skew-us", "250"],
        "synth-2iter": ["--iterations", "2"],
    }
    for name, opts in shapes.items():
        d = os.path.join(work, name)
        os.makedirs(d)
        subprocess.run([synth, "-d", d] + opts, check=True, capture_output=True)
        job_checks(name, d)
    # a cut trace and a corrupted one (decoded up to the damage)
    base = os.path.join(work, "synth")
    one = sorted(os.listdir(base))[0]
    blob = open(os.path.join(base, one), "rb").read()
    for name, data in (("cut", blob[: len(blob) * 2 // 3]),
                       ("corrupt", blob[: len(blob) // 2] + b"X" * 64 + blob[len(blob) // 2 + 64:])):
        d = os.path.join(work, name)
        os.makedirs(d)
        open(os.path.join(d, one), "wb").write(data)
        job_checks(name, d)
    # summaries of a job
    sums = os.path.join(work, "sums")
    subprocess.run([cutrace, "summarize", "-o", sums, base], check=True, capture_output=True)
    job_checks("summaries", sums)
    # the golden traces of every format version
    for g in ("v1", "v2"):
        job_checks(f"golden {g}", os.path.join(src, "tests", "golden", f"{g}.cutrace"))
    # PyTorch profiler samples
    kin = os.path.join(src, "tests", "data", "kineto")
    for name in sorted(os.listdir(kin)):
        p = os.path.join(kin, name)
        if name == "tracelens":  # a collection of unrelated jobs: each file is one
            for root, _, files in sorted(os.walk(p)):
                for fn in sorted(files):
                    if fn.endswith((".json", ".json.gz")):
                        job_checks(f"kineto tracelens/{fn}", os.path.join(root, fn), kineto=True)
        elif os.path.isdir(p):
            job_checks(f"kineto {name}", p, kineto=True)
    # real runs of the simulated training job
    if not sanitized:
        env = dict(os.environ, CUTRACE_CUPTI_LIB=os.path.join(build, "tests", "fakegpu",
                                                              "libcupti.so.13"))
        runs = {
            "sim full": ([], "20"),
            "sim events": (["--gpu-timing=events"], "20"),
            "sim light": ([], "60"),
        }
        for name, (opts, iters) in runs.items():
            d = os.path.join(work, name.replace(" ", "-"))
            e = dict(env)
            if "light" in name:
                e.update(CUTRACE_MODE="light", CUTRACE_LIGHT_WINDOW_MS="40",
                         CUTRACE_LIGHT_PERIOD_MS="100")
            subprocess.run([cutrace, "run", "-o", d] + opts + ["--", sim, iters], env=e,
                           check=True, capture_output=True)
            job_checks(name, d)
        d = os.path.join(work, "sim-killed")
        subprocess.run([cutrace, "run", "-o", d, "--", "sh", "-c",
                        f"{sim} 400 & sleep 0.6; kill -9 $!; wait $!"], env=env,
                       capture_output=True)
        job_checks("sim killed", d)
finally:
    shutil.rmtree(work, ignore_errors=True)

for f in failures:
    print("FAIL:", f)
print(f"bounds: {checked} outputs checked, {len(failures)} violation(s)")
sys.exit(1 if failures else 0)
