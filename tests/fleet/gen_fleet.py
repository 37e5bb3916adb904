#!/usr/bin/env python3
"""A labelled fleet as JSON-lines rows (docs/diff.md "Rows", cutrace.rows 2),
reproducible from a seed, with the truth of what was injected.

Jobs of four workloads (different commands and rank layouts: 8 ranks on one
node, 16 on two, 32 on four, 4 on one) run on 32 hosts of 8 GPUs in two
pools (h00-h15 H100, h16-h31 H200), one pool per job, over some weeks. Each
job's step is built from its parts, in µs:

  step = data stall + max over ranks of compute + exposed all-reduce + other idle

with per-job noise (lognormal, --noise-pct), per-iteration noise, and a
heavy tail (--tail-pct of jobs slowed 15-40 % by something no factor
records). Injected factors (unless --null):

  gpu=H200         compute x 0.94 (a faster GPU model)
  host=h07         power-capped: its ranks' clock 1800 MHz of 1980, their
                   compute x 1980/1800; the job waits for them (stragglers)
  nccl_version=2.23.4  all-reduce transfer x 1.35 on multi-node jobs only
  tag.loader=lazy  a data stall of 8 % of the workload's base step
  driver=12060     from --upgrade-at (a share of the run's time) on, with
                   cuda_version 12.6 (always together: confounded), compute
                   x 1.04

and factors without effect: cutrace_version, tag.team, env.NCCL_ALGO.
Some jobs restart (2 attempts, lost steps, down time).

--truth FILE gets: each injected factor's true effect per workload (the
mean over the jobs with it of log(step with it / the same job without
it), as a percentage), the factors without effect, and the fleet's GPU
time split from the generator's own ledger (docs/fleet.md "GPU time").
"""
import argparse
import json
import math
import random
import sys

WORKLOADS = [
    # name, command, ranks, nodes, compute, all-reduce, overlap, data, idle, bytes, share
    ("w7b", "python3 /home/u/train.py --model 7b --batch 16", 8, 1, 90000.0, 12000.0, 9000.0,
     1500.0, 2000.0, 268435456, 0.35),
    ("w13b", "python3 /home/u/train.py --model 13b --batch 16", 16, 2, 150000.0, 30000.0,
     18000.0, 2000.0, 3000.0, 536870912, 0.30),
    ("w70b", "python3 /home/u/train.py --model 70b --batch 8", 32, 4, 300000.0, 60000.0,
     36000.0, 3000.0, 5000.0, 1073741824, 0.20),
    ("wserve", "python3 /home/u/serve.py --model 7b --max-batch 64", 4, 1, 20000.0, 2000.0,
     1500.0, 300.0, 1200.0, 16777216, 0.15),
]
KERNELS = ["ampere_bf16_s16816gemm_bf16_256x128_ldg8", "flash_fwd_kernel", "flash_bwd_kernel",
           "vectorized_elementwise_kernel", "reduce_kernel", "multi_tensor_apply_kernel",
           "layer_norm_fwd", "layer_norm_bwd", "softmax_warp_forward", "cat_batched_copy",
           "index_select_kernel", "embedding_backward"]
HOSTS = ["h%02d" % i for i in range(32)]
CAPPED = "h07"
CAP_MHZ, NOMINAL_MHZ = 1800.0, 1980.0


def gen(args):
    rnd = random.Random(args.seed)
    t0 = 1714521600.0  # 2024-05-01T00:00:00Z
    span = args.days * 86400.0
    rows = []
    truth_acc = {}  # (factor, value, workload) -> [log effects]
    ledger = {k: 0.0 for k in ("gpu", "useful", "startup", "restarts", "checkpoint",
                               "data_stall", "exposed_comm", "stragglers", "throttling",
                               "idle")}
    null = args.null
    weights = [w[10] for w in WORKLOADS]
    for j in range(args.jobs):
        wname, cmd, ranks, nodes, C0, A0, O0, D0, I0, nbytes, _ = rnd.choices(
            WORKLOADS, weights)[0]
        start = t0 + span * (j + rnd.random() * 0.5) / args.jobs
        pool = rnd.random() < 0.5
        gpu = "H200" if pool else "H100"
        hosts = rnd.sample(HOSTS[16:] if pool else HOSTS[:16], nodes)
        upgraded = start >= t0 + span * args.upgrade_at
        driver, cuda = ("12060", "12.6") if upgraded else ("12040", "12.4")
        nccl = "2.23.4" if rnd.random() < 0.4 else "2.21.5"
        loader = "lazy" if rnd.random() < 0.3 else "prefetch"
        team = rnd.choice(["a", "b", "c"])
        algo = rnd.choice(["Ring", "Tree"])
        ctv = rnd.choice(["0.1.0", "0.2.0"])
        iters = args.iterations
        noise = math.exp(rnd.gauss(0, args.noise_pct / 100))
        tail = rnd.uniform(1.15, 1.4) if rnd.random() < args.tail_pct / 100 else 1.0

        def parts(f_gpu=True, f_cap=True, f_nccl=True, f_loader=True, f_driver=True):
            c = C0 * noise * tail
            if not null:
                if f_gpu and gpu == "H200":
                    c *= 0.94
                if f_driver and upgraded:
                    c *= 1.04
            crank = []
            for r in range(ranks):
                h = hosts[r * nodes // ranks]
                capped = not null and f_cap and h == CAPPED
                crank.append(c * (NOMINAL_MHZ / CAP_MHZ if capped else 1.0))
            a = A0 * (1.35 if not null and f_nccl and nccl == "2.23.4" and nodes >= 2 else 1.0)
            d = D0 + (0.08 * (C0 + A0 - O0 + D0 + I0)
                      if not null and f_loader and loader == "lazy" else 0.0)
            return crank, a, d, c

        crank, A, D, cbase = parts()
        cmax = max(crank)
        expo = max(A - O0, 0.0)
        step = D + cmax + expo + I0

        def logeff(**off):
            cr, a, d, _ = parts(**off)
            s = d + max(cr) + max(a - O0, 0.0) + I0
            return math.log(step / s)

        if not null:
            if gpu == "H200":
                truth_acc.setdefault(("gpu", "H200", wname), []).append(logeff(f_gpu=False))
            if CAPPED in hosts:
                truth_acc.setdefault(("host", CAPPED, wname), []).append(logeff(f_cap=False))
            if nccl == "2.23.4":
                truth_acc.setdefault(("nccl_version", "2.23.4", wname), []).append(
                    logeff(f_nccl=False))
            if loader == "lazy":
                truth_acc.setdefault(("tag.loader", "lazy", wname), []).append(
                    logeff(f_loader=False))
            if upgraded:
                truth_acc.setdefault(("driver", "12060", wname), []).append(
                    logeff(f_driver=False))

        # attempts: most jobs run once; some are killed and restarted
        restart = rnd.random() < 0.06
        gap = 0.01 * step
        startup = rnd.uniform(0.02, 0.05) * iters * step
        ckpt = step * 0.5
        lost_steps = 3 if restart else 0
        downtime = 2.0 * step if restart else 0.0
        kept = iters
        # iteration rows: every step run, the lost ones included
        it_rows = []
        tcur = 0.0
        ran = kept + lost_steps
        for r in range(ranks):
            tcur = 0.0
            for i in range(ran):
                jit = math.exp(rnd.gauss(0, 0.004))
                cr = crank[r] * jit
                cm = cmax * jit
                wait = cm - cr
                dur = D + cm + expo + I0
                it_rows.append((r, i, tcur, dur, cr, A + wait, expo + wait, D + I0))
                tcur += dur + gap
        S = sum(x[3] for x in it_rows) / ranks
        steps_time = S * kept / ran
        data_att = D * kept
        productive = steps_time - data_att
        idle_att = gap * (kept - 1)
        att = []
        if restart:
            k0 = kept // 2
            s0 = steps_time * k0 / kept
            lost = S * lost_steps / ran
            att.append(dict(attempt=0, restart_count=0, ended="signal", ranks=ranks,
                            lost_steps=lost_steps, startup_us=startup,
                            productive_us=s0 - D * k0, checkpoint_us=ckpt, restore_us=0.0,
                            lost_us=lost, hang_us=0.0, data_stall_us=D * k0,
                            idle_us=gap * (k0 - 1), shutdown_us=0.0, unclassified_us=0.0))
            att.append(dict(attempt=1, restart_count=1, ended="exit", ranks=ranks, lost_steps=0,
                            startup_us=startup * 0.8, productive_us=productive - (s0 - D * k0),
                            checkpoint_us=ckpt, restore_us=0.2 * startup, lost_us=0.0,
                            hang_us=0.0, data_stall_us=data_att - D * k0,
                            idle_us=idle_att - gap * (k0 - 1), shutdown_us=0.0,
                            unclassified_us=0.0))
        else:
            att.append(dict(attempt=0, restart_count=None, ended="exit", ranks=ranks,
                            lost_steps=0, startup_us=startup, productive_us=productive,
                            checkpoint_us=ckpt, restore_us=0.0, lost_us=0.0, hang_us=0.0,
                            data_stall_us=data_att, idle_us=idle_att, shutdown_us=0.0,
                            unclassified_us=0.0))
        pkeys = ("startup_us", "productive_us", "checkpoint_us", "restore_us", "lost_us",
                 "hang_us", "data_stall_us", "idle_us", "shutdown_us", "unclassified_us")
        covered = sum(sum(a[k] for k in pkeys) for a in att) + downtime
        tpos = 0.0
        for a in att:
            span_a = sum(a[k] for k in pkeys)
            a["start_us"], a["end_us"] = tpos, tpos + span_a
            tpos += span_a + downtime
        # the ledger: what each GPU-µs went to, from the generator's own parts
        g = ranks
        ledger["gpu"] += g * covered
        ledger["startup"] += g * sum(a["startup_us"] for a in att)
        ledger["restarts"] += g * (sum(a["restore_us"] + a["lost_us"] for a in att) + downtime)
        ledger["checkpoint"] += g * sum(a["checkpoint_us"] for a in att)
        ledger["data_stall"] += g * data_att
        ledger["idle"] += g * (idle_att + kept * I0)
        ledger["exposed_comm"] += g * kept * expo
        ledger["stragglers"] += sum(kept * (cmax - c) for c in crank)
        ledger["throttling"] += sum(kept * (c - cbase) for c in crank if c > cbase * 1.001)
        ledger["useful"] += sum(kept * min(c, cbase) for c in crank)

        def utc(sec):
            import time as _t
            return _t.strftime("%Y-%m-%dT%H:%M:%S", _t.gmtime(sec)) + ".%06dZ" % (
                int((sec % 1) * 1e6))

        run_id = "fleet-%d-%05d" % (args.seed, j)
        common = {"schema": "cutrace.rows", "version": 2, "run": "/runs/%s" % run_id,
                  "side": None, "job": "job%05d" % j, "run_start_utc": utc(start),
                  "gpu": gpu, "driver": driver, "cuda_version": cuda, "nccl_version": nccl,
                  "labels": {"tag.loader": loader, "tag.team": team,
                             "env.NCCL_ALGO": algo}}

        def row(kind, **kw):
            d = dict(common)
            d["row"] = kind
            d.setdefault("rank", None)
            d.setdefault("host", None)
            d["iteration"] = None
            d.update(kw)
            rows.append(json.dumps(d, separators=(",", ":")))

        durs = sorted(x[3] for x in it_rows)
        p50 = durs[len(durs) // 2] if len(durs) % 2 else (durs[len(durs) // 2 - 1] +
                                                          durs[len(durs) // 2]) / 2
        row("job", ranks=ranks, iterations=ran, step_p50_us=p50, step_p90_us=durs[-1],
            step_p99_us=durs[-1], window_us=ranks * S * ran,
            compute_us=sum(x[4] for x in it_rows), comm_us=sum(x[5] for x in it_rows),
            idle_us=sum(x[7] for x in it_rows), exposed_comm_us=sum(x[6] for x in it_rows),
            goodput_pct=100 * productive / covered, wall_us=tpos - downtime,
            downtime_us=downtime, attempts=len(att), run_id=run_id, cutrace_version=ctv,
            cmdline=cmd + " --seed %d --output /runs/%s" % (j, run_id))
        for a in att:
            row("attempt", **a)
        for r in range(ranks):
            h = hosts[r * nodes // ranks]
            mine = [x for x in it_rows if x[0] == r]
            for x in mine:
                d = dict(common)
                d.update(row="iteration", rank=r, host=h, iteration=x[1], start_us=x[2],
                         duration_us=x[3], compute_us=x[4], comm_us=x[5], memory_us=0.0,
                         idle_us=x[7], exposed_comm_us=x[6], bubble_us=0.0)
                rows.append(json.dumps(d, separators=(",", ":")))
            row("rank", rank=r, host=h, iterations=ran, window_us=sum(x[3] for x in mine),
                compute_us=sum(x[4] for x in mine), comm_us=sum(x[5] for x in mine),
                memory_us=0.0, idle_us=sum(x[7] for x in mine),
                exposed_comm_us=sum(x[6] for x in mine), bubble_us=0.0,
                data_stall_us=D * ran, checkpoint_stall_us=0.0, cuda_call_us=0.0,
                sync_drain_us=0.0, launch_overhead_us=0.0, unexplained_us=I0 * ran,
                lateness_us=0.0, slowness=crank[r] / cmax)
        for r in range(ranks):
            h = hosts[r * nodes // ranks]
            capped = not null and h == CAPPED
            clk = CAP_MHZ if capped else NOMINAL_MHZ
            row("health", rank=r, host=h, device=0, samples=100, sm_clock_mhz=clk,
                sm_clock_max_mhz=clk, power_w=700.0 if capped else 450.0, power_limit_w=700.0,
                temperature_c=70.0, throttled_pct=100.0 if capped else 0.0,
                clock_policy="power_capped" if capped else "default")
        names = list(KERNELS)
        if gpu == "H200":  # the vendor GEMM renamed: the mix stays one workload
            names[0] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"
        for k, n in enumerate(names):
            row("kernel", name=n, count=ran * ranks, total_us=cbase * ran * ranks / len(names),
                p50_us=cbase / len(names))
        waits = sorted(cmax - c for c in crank)
        wmed = waits[len(waits) // 2] if len(waits) % 2 else (waits[len(waits) // 2 - 1] +
                                                               waits[len(waits) // 2]) / 2
        factor = 2.0 * (ranks - 1) / ranks
        row("collective", op="AllReduce", bytes=nbytes, nranks=ranks, count=ran * ranks,
            matched=ran * ranks, p50_us=A + wmed, transfer_p50_us=A, wait_p50_us=wmed,
            wait_total_us=ran * sum(cmax - c for c in crank),
            arrival_skew_p50_us=wmed, algbw_gbps=nbytes / (A + wmed) / 1e3,
            busbw_gbps=nbytes / A / 1e3 * factor)
    truth = {"seed": args.seed, "jobs": args.jobs, "null": null,
             "injected": [], "no_effect": ["cutrace_version", "tag.team", "env.NCCL_ALGO"],
             "ledger_pct": {k: 100 * v / ledger["gpu"] for k, v in ledger.items() if k != "gpu"},
             "gpu_hours": ledger["gpu"] / 3.6e9}
    for (f, v, w), effs in sorted(truth_acc.items()):
        truth["injected"].append({"factor": f, "value": v, "workload_cmd": w,
                                  "jobs": len(effs),
                                  "effect_pct": 100 * (math.exp(sum(effs) / len(effs)) - 1),
                                  "min_pct": 100 * (math.exp(min(effs)) - 1),
                                  "max_pct": 100 * (math.exp(max(effs)) - 1)})
    return rows, truth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--noise-pct", type=float, default=1.5)
    ap.add_argument("--tail-pct", type=float, default=2.0)
    ap.add_argument("--upgrade-at", type=float, default=0.6)
    ap.add_argument("--null", action="store_true", help="no injected factor")
    ap.add_argument("--out", required=True)
    ap.add_argument("--truth")
    args = ap.parse_args()
    rows, truth = gen(args)
    with (sys.stdout if args.out == "-" else open(args.out, "w")) as f:
        for r in rows:
            f.write(r + "\n")
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump(truth, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
