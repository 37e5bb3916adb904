#!/usr/bin/env python3
"""Runs the SQL of Nsight Systems' standard summary reports against a
`cutrace export --format sqlite` database and checks their figures against
the decoder's: `cutrace report --json` (kernels) and `cutrace dump --json`
(the records every other figure sums).

usage: check_nsys_stats.py DB REPORT.json DUMP.jsonl...

The reports, written here from their documented definitions (Nsight
Systems' "Post-Collection Analysis Guide", `nsys stats` reports; the
columns as nsys prints them), each a table of one row per name:

  cuda_gpu_kern_sum      kernels by demangled name (StringIds of
                         demangledName), their durations end - start
  cuda_api_sum           CUDA API calls (CUPTI_ACTIVITY_KIND_RUNTIME) by
                         name (StringIds of nameId), their durations
  cuda_gpu_mem_time_sum  memory operations: each copy named "[CUDA memcpy "
                         + ENUM_CUDA_MEMCPY_OPER.label + "]", each memset
                         "[CUDA memset]", their durations
  cuda_gpu_mem_size_sum  the same operations, their bytes
  nvtx_sum               NVTX ranges (NVTX_EVENTS of eventType 59 push/pop,
                         "PushPop", and 60 start/end, "StartEnd") by text and
                         style, their durations

with Time (%) (100 x the row's total / the report's total; not in the size
report), Total, Instances (Count, Num Calls), Avg, Med (the middle value,
or the mean of the two middle ones), Min, Max and StdDev (the sample
standard deviation, n - 1; 0 for one instance), sorted by total, as in
nsys's output (e.g. two calls of 1,333 and 2,684 ns: Avg and Med 2,008.5,
StdDev 955.3).

Checks:
  - every kernel of `report --json`'s table has a cuda_gpu_kern_sum row of
    its name with Instances = count, Total = total_us (exact ns) and Med =
    p50_us (within 0.5 ns: the report prints µs with three decimals, and a
    median of an even count may fall on half a ns); the rows the report
    has not are NCCL's kernels (communication, not compute, in the report);
  - cuda_api_sum, both memory summaries and nvtx_sum equal, row by row and
    to the ns or byte, the same figures computed here from the dump's
    records (one GPU interval per op: of several sources for one op, the
    best, as the export keeps it; docs/report.md "One interval per op");
  - every report's Time (%) column sums to 100 (within 1e-6), and no figure
    is negative.
"""
import collections
import json
import math
import sqlite3
import sys

fails = []


def check(what, ok, detail=""):
    if not ok:
        fails.append(f"{what}: {detail}")


def summary_sql(source, with_pct=True):
    """One report: `source` is a query giving (name, value) per instance."""
    pct = ('100.0 * a.total / (SELECT SUM(total) FROM agg) AS "Time (%)", ' if with_pct else "")
    return f"""
WITH src AS ({source}),
agg AS (SELECT name, SUM(value) AS total, COUNT(*) AS n, AVG(value) AS avg,
               MIN(value) AS min, MAX(value) AS max
        FROM src GROUP BY name),
ranked AS (SELECT name, value,
                  ROW_NUMBER() OVER (PARTITION BY name ORDER BY value) AS i,
                  COUNT(*) OVER (PARTITION BY name) AS n
           FROM src),
med AS (SELECT name, AVG(value) AS med FROM ranked
        WHERE i IN ((n + 1) / 2, (n + 2) / 2) GROUP BY name),
dev AS (SELECT s.name, SUM((s.value - a.avg) * (s.value - a.avg)) AS ss
        FROM src s JOIN agg a ON a.name = s.name GROUP BY s.name)
SELECT {pct}a.total AS "Total", a.n AS "Instances", a.avg AS "Avg", m.med AS "Med",
       a.min AS "Min", a.max AS "Max",
       CASE WHEN a.n > 1 THEN sqrt(d.ss / (a.n - 1)) ELSE 0 END AS "StdDev",
       a.name AS "Name"
FROM agg a JOIN med m ON m.name = a.name JOIN dev d ON d.name = a.name
ORDER BY a.total DESC, a.name
"""


KERN = """SELECT s.value AS name, k.end - k.start AS value
          FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"""
API = """SELECT s.value AS name, r.end - r.start AS value
         FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"""
MEMOPS = """SELECT '[CUDA memcpy ' || e.label || ']' AS name, m.{v} AS value
            FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind
            UNION ALL
            SELECT '[CUDA memset]' AS name, s.{v} AS value FROM CUPTI_ACTIVITY_KIND_MEMSET s"""
NVTX = """SELECT text || char(9) || CASE eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END
                 AS name, end - start AS value
          FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL"""

LABEL = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
         "HtoH": "Host-to-Host", "peer": "Peer-to-Peer"}
# docs/report.md "One interval per op": the plugin's over CUPTI's over an
# event pair's (either kind)
SOURCE_RANK = {"nccl_plugin": 3, "cupti": 2, "events": 1, "events_blocking": 1}


def stats(values):
    """The report's figures of one name, computed here."""
    v = sorted(values)
    n = len(v)
    avg = sum(v) / n
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    sd = math.sqrt(sum((x - avg) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return {"Total": sum(v), "Instances": n, "Avg": avg, "Med": med, "Min": v[0], "Max": v[-1],
            "StdDev": sd}


def run(db, sql):
    cur = db.execute(sql)
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def compare(report, rows, want):
    """rows (from SQL) against want (name -> list of values), exactly."""
    got = {r["Name"]: r for r in rows}
    check(f"{report}: names", set(got) == set(want),
          f"only in SQL {sorted(set(got) - set(want))[:5]}, "
          f"only in the dump {sorted(set(want) - set(got))[:5]}")
    for name, values in want.items():
        r = got.get(name)
        if not r:
            continue
        w = stats(values)
        for k in ("Total", "Instances", "Min", "Max"):
            check(f"{report} {name!r} {k}", r[k] == w[k], f"{r[k]} != {w[k]}")
        for k in ("Avg", "Med", "StdDev"):  # sums of integers: exact but for the last bits
            check(f"{report} {name!r} {k}", abs(r[k] - w[k]) <= 1e-9 * max(1.0, abs(w[k])),
                  f"{r[k]} != {w[k]}")
    if "Time (%)" in (rows[0] if rows else {}):
        s = sum(r["Time (%)"] for r in rows)
        check(f"{report}: Time (%) sums to 100", abs(s - 100) < 1e-6, s)
    for r in rows:
        check(f"{report}: no negative figure",
              all(v >= 0 for k, v in r.items() if k != "Name"), r)
    totals = [r["Total"] for r in rows]
    check(f"{report}: sorted by total", totals == sorted(totals, reverse=True), totals[:5])


def main():
    db = sqlite3.connect(sys.argv[1])
    if db.execute("SELECT sqrt(4)").fetchone()[0] != 2:  # pragma: no cover
        sys.exit("SQLite without sqrt")
    rep = json.load(open(sys.argv[2]))
    api, nvtx = collections.defaultdict(list), collections.defaultdict(list)
    mem_t, mem_b = collections.defaultdict(list), collections.defaultdict(list)
    best = {}
    for d in sys.argv[3:]:
        for line in open(d):
            r = json.loads(line)
            if r["kind"] == "api":
                api[r["name"]].append(r["end_ns"] - r["start_ns"])
            elif r["kind"] == "nvtx" and "end_ns" in r:
                style = "PushPop" if r.get("depth") else "StartEnd"
                nvtx[r["message"] + "\t" + style].append(r["end_ns"] - r["start_ns"])
            elif r["kind"] == "gpu" and r["type"] in ("memcpy", "memset"):
                key = (r["pid"], r["correlation_id"], r["type"])
                if key not in best or SOURCE_RANK[r["source"]] > SOURCE_RANK[best[key]["source"]]:
                    best[key] = r
    for r in best.values():
        name = ("[CUDA memset]" if r["type"] == "memset"
                else f"[CUDA memcpy {LABEL.get(r.get('copy_kind'), 'Unknown')}]")
        mem_t[name].append(r["gpu_end_ns"] - r["gpu_start_ns"])
        mem_b[name].append(r["bytes"])

    # cuda_gpu_kern_sum against the report's kernel table
    kern = run(db, summary_sql(KERN))
    got = {r["Name"]: r for r in kern}
    check("cuda_gpu_kern_sum: rows", kern, "no kernel")
    names = set()
    for k in rep["kernels"]:
        names.add(k["name"])
        r = got.get(k["name"])
        check("cuda_gpu_kern_sum: the report's kernel", r, k["name"])
        if not r:
            continue
        check(f"kernel {k['name']!r} Instances", r["Instances"] == k["count"],
              f"{r['Instances']} != {k['count']}")
        check(f"kernel {k['name']!r} Total", r["Total"] == round(k["total_us"] * 1000),
              f"{r['Total']} != {k['total_us']} us")
        check(f"kernel {k['name']!r} Med", abs(r["Med"] - k["p50_us"] * 1000) <= 0.5,
              f"{r['Med']} != {k['p50_us']} us")
    others = sorted(n for n in got if n not in names)
    check("cuda_gpu_kern_sum: rows not in the report are NCCL's",
          all(n.startswith("nccl") for n in others), others[:5])
    check("cuda_gpu_kern_sum: Time (%)", abs(sum(r["Time (%)"] for r in kern) - 100) < 1e-6, "")

    compare("cuda_api_sum", run(db, summary_sql(API)), api)
    compare("cuda_gpu_mem_time_sum", run(db, summary_sql(MEMOPS.format(v="end - start"))), mem_t)
    compare("cuda_gpu_mem_size_sum", run(db, summary_sql(MEMOPS.format(v="bytes"), False)), mem_b)
    compare("nvtx_sum", run(db, summary_sql(NVTX)), nvtx)

    if fails:
        print("\n".join(fails[:30]))
        sys.exit(1)
    print(f"nsys stats: ok ({len(kern)} kernels, {len(api)} API names, {len(mem_t)} memory "
          f"operations, {len(nvtx)} NVTX ranges)")


main()
